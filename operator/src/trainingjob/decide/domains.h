// Topology domains (spec.placement.topologyKey): each pod of the job learns its node's domain.
#pragma once

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Each live pod of the job bound to a node and not yet annotated gets annotation contract::kTopologyDomainAnnotation
// with its node's value of the key (Observed::node_domains; "-" for a node without the label), by a merge patch
// naming the pod's uid (never a same-named replacement). The kubelet projects it into the file its launcher reads
// (--topology-domain-file), and node 0's rendezvous gives one domain's nodes consecutive group ranks.
void annotate_domains(DecideState& s);

}  // namespace kubedist::trainingjob
