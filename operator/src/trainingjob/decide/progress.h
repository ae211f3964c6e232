// How far a job is (status.progress), from node 0's STATUS report: step, rate, ETA, goodput, and the straggler the
// launchers named (Event Straggler).
#pragma once

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Folds the report of node0 (the pod holding rank 0; null if none) into status.progress and status.checkpoint
// (decide/checkpoint.h). Without a report of this node 0 the status keeps what it showed. Run before fold_launcher:
// a new node 0's launcher counts its productive and lost time from zero, so the earlier pods' time becomes
// status.launcher's base here.
void decide_progress(DecideState& s, const PodFacts* node0);

// "24% (240/1000)", or "step 240" without a total.
std::string progress_summary(int64_t step, std::optional<int64_t> total);

}  // namespace kubedist::trainingjob
