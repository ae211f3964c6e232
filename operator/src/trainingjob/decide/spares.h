// Spares (spec.spares): where they stood in for lost members, and what the status says of them.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "contract/notice.h"
#include "trainingjob/decide/decide_state.h"
#include "trainingjob/decide/ranks.h"

namespace kubedist::trainingjob {

// Node rank (slot) -> the node rank of the pod that took its place: as node 0's rendezvous reports it now (this
// pass' STATUS from the pod that is node 0), else as last written (status.standIns). Only places below target
// other than node 0's, held by a pod of the job that is not being deleted.
std::map<int, int> current_stand_ins(const DecideState& s, int target);

// The node ranks of the spares node 0's rendezvous reports waiting, from this pass' STATUS of the pod that is node 0
// now; null when there is none (an older node 0's report says nothing of today's spares).
const std::vector<int>* ready_spares(const DecideState& s);

// Whether node 0's rendezvous reports node rank `rank` lost while a spare waits: that spare takes its place at the
// next round, so no pod of that rank is made meanwhile (it would only wait as a spare itself).
bool spare_takes_place_of(const DecideState& s, int rank);

// Why a node is going away, as the API server shows it: a termination taint of a cloud or an autoscaler
// (kTerminationTaints, any key under kTerminationTaintPrefix, node.kubernetes.io/out-of-service), its Ready
// condition not True, or cordoned (spec.unschedulable, as `kubectl drain` does first); nullopt: it stays.
std::optional<contract::ReleaseWhy> node_going_away(const NodeFacts& node);
inline constexpr const char* kTerminationTaints[] = {
    "cloud.google.com/impending-node-termination",  // GKE: a spot or preemptible VM's termination, graceful shutdown
    "ToBeDeletedByClusterAutoscaler",               // cluster-autoscaler removes the node
    "karpenter.sh/disrupted",                       // Karpenter v1 drains the node to delete it
    "karpenter.sh/disruption",                      // Karpenter v1beta1
    "node.cloudprovider.kubernetes.io/shutdown",    // the cloud provider says the machine is shut down
};
// The AWS node termination handler's taints: spot-itn, scheduled-maintenance, asg-lifecycle-termination, ...
inline constexpr const char* kTerminationTaintPrefix = "aws-node-termination-handler/";

// The node a pod runs on is going away (node_going_away), where the operator watches nodes; nullopt otherwise.
std::optional<contract::ReleaseWhy> pod_node_going_away(const DecideState& s, const PodFacts& pod);

// What node 0's rendezvous is told (contract/notice.h) of a job with spares whose pods run on nodes going away:
// the spares moved off them first (Ranks::spares_going_away: so that none of them stands in), then the members
// other than node 0 (each gives its place to a spare while its workers still run), the latter only while a spare
// on a node that stays waits ready. A spare on a NotReady node is neither moved nor released: it may come back.
// Nothing without spec.spares, the node watch or this pass' report from node 0.
std::vector<RendezvousRelease> release_notices(const DecideState& s, const Ranks& ranks);

// Whether a member of a job with spares (node rank 1 and up, below spec.replicas) has no pod and no known stand-in:
// its pod just went (evicted, deleted), and node 0's rendezvous may give its place to a spare as it does so. The
// act layer then asks node 0 afresh before deciding, so that a pod is not made again on a report from before.
bool member_gone_without_stand_in(const TrainingJob& job, const std::vector<PodFacts>& pods,
                                  const std::optional<LauncherReport>& report);

// status.spares, sparesReady and standIns; Event SpareStoodIn for each place a spare took since the last write.
void note_spares(DecideState& s, const Ranks& ranks);

}  // namespace kubedist::trainingjob
