// Nodes a job's pods keep failing on for reasons that are not the training code's, which its new pods then avoid.
#pragma once

#include <string>
#include <vector>

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Whether a failed pod's end points at its node rather than at the program: its trainer was ended by a signal
// (exit code 129 to 192: SIGKILL, SIGBUS, SIGSEGV from bad memory...) that was not an OOM kill by the container's own
// memory limit (OOMKilled: the program's use of memory, on any node), or it ended without an exit code at all. An
// exit code from 1 to 128 or above 192 (sys.exit(-1) is 255) is the program's own answer.
bool failure_is_the_nodes(const PodFacts& pod);

// Who a failure counted against a node implicates. What a job's own pods saw there (a signal, a hang) makes that job
// avoid the node; only what the node itself did (NotReady past the grace, deleted, out of service, a pod it ended
// for its own shutdown, a bus error other namespaces' pods met there too: failure_evidence) may taint it for every
// tenant: one job's signals are the job author's to choose.
enum class NodeEvidence { kJobsOwn, kNodesOwn };

// The exit code of a trainer ended by SIGBUS (128 + 7): a bus error, which bad memory or a failing device raises.
inline constexpr int kBusErrorExitCode = 135;

// Who a failed pod's end implicates (a failure failure_is_the_nodes counts): its node when it was a bus error that
// another namespace's pods met on the same node lately too (Observed::bus_error_namespaces: two authors, one node),
// else the job alone.
NodeEvidence failure_evidence(const DecideState& s, const PodFacts& pod);

// Counts one failure on `node` in status.nodeFailures; the count reaching the operator's limit
// (Observed::avoid_node_after_failures; 0: never) puts the node in status.avoidedNodes, with one Warning Event
// NodeAvoided saying `what` happened there last. With Observed::taint_avoided_nodes, an avoided node where the node
// itself failed (kNodesOwn, then or later) is also tainted kAvoidedTaint:NoSchedule (a write of the plan; Event
// NodeTainted when it comes after NodeAvoided), so that no job's new pods land there, unless
// Observed::max_tainted_nodes nodes carry the taint already. The taint's value is the second it was added: the
// operator takes it off after --avoided-taint-ttl (expired_avoided_taints). Called once per failure, where the
// failure itself is counted (a pod's failure or loss by its uid, a hang by the launchers' count), so that it lives
// in the same status write.
void note_node_failure(DecideState& s, const std::string& node, const std::string& what, NodeEvidence evidence);

// Merge patches that take kAvoidedTaint off every node that has carried it for ttl_s or more, each on the version
// its taints were read from; a taint whose value is not a time (an earlier operator's) counts as expired.
std::vector<Write> expired_avoided_taints(const std::vector<NodeFacts>& nodes, UnixSeconds now, int64_t ttl_s);

// At most this many nodes are counted or avoided per job: a job failing everywhere fails on its backoffLimit.
inline constexpr size_t kMaxNodesTracked = 64;

}  // namespace kubedist::trainingjob
