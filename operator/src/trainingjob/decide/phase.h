// An active job's phase, its Running and Restarting conditions, and the counts its status shows.
#pragma once

#include "trainingjob/decide/failures.h"
#include "trainingjob/decide/ranks.h"
#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Sets replicas, readyReplicas and worldSize (the launchers' own world size while node 0's launcher runs), then
// the phase: Restarting while lost or failed pods are recreated or the launchers re-form the group after a crash
// or a lost node, Scaling while the size changes, Running when every node runs, else Pending. Call it after
// every restart of this pass is counted (s.lost, s.last_reason).
void decide_phase(DecideState& s, int target, const Ranks& ranks, const FailureVerdict& failures,
                  bool elastic_changed);

}  // namespace kubedist::trainingjob
