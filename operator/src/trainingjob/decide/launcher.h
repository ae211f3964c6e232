// Folding the launchers' in-place restarts (node 0's STATUS report) into status.restartsByReason.
#pragma once

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Counts the restarts node 0's launcher reported since the last fold (Events WorkerRestarted, GroupRestarted).
// The launcher's counters start at zero in every new node-0 pod, so status.launcher remembers which pod's counts
// were folded in; a group re-forming for a pod failure or loss the operator already counted (status.launcher.absorb)
// is no new restart. node0: the pod holding rank 0 (null if none); a report from another pod is not this one's.
void fold_launcher(DecideState& s, const PodFacts* node0);

}  // namespace kubedist::trainingjob
