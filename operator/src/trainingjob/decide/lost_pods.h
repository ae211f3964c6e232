// Which of a job's pods are lost to it (node gone or NotReady past the grace, evicted, deleted by someone else).
#pragma once

#include <set>
#include <string>

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Pod failures that are the node's fault, not the program's (eviction, node shutdown): counted as node_lost and
// recreated whatever the restartPolicy, without spending backoffLimit.
bool failure_is_node_loss(const PodFacts& pod);

// Why the pod is lost with its node ("" if it is not): the node was deleted, or is NotReady past the node-lost
// grace. While a grace still runs, the job is requeued for its end.
std::string node_lost(DecideState& s, const PodFacts& pod);

// Deletes lost pods (forced where no kubelet will confirm), counts each once as node_lost (status.lostPods),
// emits PodLost and names them in s.lost. Returns the uids of live pods lost now: their ranks are recreated
// once they are gone. target: the number of nodes the job aims at now.
std::set<std::string> decide_lost_pods(DecideState& s, int target);

}  // namespace kubedist::trainingjob
