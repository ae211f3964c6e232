// Which of a job's pods are lost to it (node gone or NotReady past the grace, evicted, deleted by someone else).
#pragma once

#include <optional>
#include <set>
#include <string>

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Pod failures that are the node's fault, not the program's (eviction, node shutdown): counted as node_lost and
// recreated whatever the restartPolicy, without spending backoffLimit.
bool failure_is_node_loss(const PodFacts& pod);

// What the pod's node says of it.
struct NodeLoss {
  std::string why;     // why the pod is lost with its node; empty: it is not (or not yet)
  // Whether the pod may be deleted without its kubelet's word: only when the node is confirmed gone (the API
  // server answers 404 for it) or out of service (its taint). A NotReady node may merely be cut off: its pod may
  // still run there, and a replacement under the same name (the same hostname) must not run beside it.
  bool force = false;
  bool lost() const { return !why.empty(); }
};

// The pod's node: deleted (confirmed), out of service, or NotReady past the node-lost grace. While a grace still
// runs, or the node is missing from the cache but not confirmed gone, the job is requeued to look again.
NodeLoss node_lost(DecideState& s, const PodFacts& pod);

// Deletes lost pods (forced only where node_lost allows), counts each once as node_lost (status.lostPods), emits
// PodLost and names them in s.lost. Returns the uids of live pods lost now: their ranks are recreated once they
// are gone (a pod on a NotReady node stays Terminating until its node answers again or is confirmed gone).
// target: the number of nodes the job aims at now.
std::set<std::string> decide_lost_pods(DecideState& s, int target);

// After decide_lost_pods: an Ending when a pod was lost this pass and the job's node losses
// (status.restartsByReason.node_lost) passed Observed::node_loss_limit.
std::optional<Ending> node_loss_limit_reached(const DecideState& s);

}  // namespace kubedist::trainingjob
