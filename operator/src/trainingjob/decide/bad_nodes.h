// Nodes a job's pods keep failing on for reasons that are not the training code's, which its new pods then avoid.
#pragma once

#include <string>

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Whether a failed pod's end points at its node rather than at the program: its trainer was ended by a signal
// (exit code 128 and above: SIGKILL, SIGBUS, SIGSEGV from bad memory...), killed for memory (OOMKilled), or it
// ended without an exit code at all. An exit code from 1 to 127 is the program's own answer.
bool failure_is_the_nodes(const PodFacts& pod);

// Counts one failure on `node` in status.nodeFailures; the count reaching the operator's limit
// (Observed::avoid_node_after_failures; 0: never) puts the node in status.avoidedNodes, with one Warning Event
// NodeAvoided saying `what` happened there last. With Observed::taint_avoided_nodes the node is also tainted
// kAvoidedTaint:NoSchedule (a write of the plan), so that no job's new pods land there. Called once per failure,
// where the failure itself is counted (a pod's failure or loss by its uid, a hang by the launchers' count), so that
// it lives in the same status write.
void note_node_failure(DecideState& s, const std::string& node, const std::string& what);

// At most this many nodes are counted or avoided per job: a job failing everywhere fails on its backoffLimit.
inline constexpr size_t kMaxNodesTracked = 64;

}  // namespace kubedist::trainingjob
