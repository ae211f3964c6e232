// elastic_target(): how many nodes an elastic job (minReplicas < maxReplicas) should have right now.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

inline constexpr int kGrowRetryGraces = 10;

struct ElasticDecision {
  int target = 0;               // pods J-node-0 .. J-node-(target-1) are wanted
  ElasticStatus status;         // status.elastic to write (target_replicas 0: none, the job is at spec.replicas)
  std::string event_reason;     // "" | ScaledDown | ScalingUp | ScaledUp
  std::string event_message;
  bool changed = false;         // the target changed now: the group re-forms (phase Scaling)
  std::optional<int64_t> requeue_after_s;  // when a grace period runs out
};

// Pods Pending and Unschedulable for longer than unschedulable_grace_s are given up, from the highest rank down,
// while at least minReplicas remain; growth back toward spec.replicas is tried unschedulable_grace_s after the last
// change when nodes are not known, or when a node turned schedulable (new or Ready again) since the last change,
// else every kGrowRetryGraces grace periods (GPUs other pods freed leave no trace on nodes), and announced as
// ScaledUp once every pod runs. Jobs that are not elastic always get spec.replicas. nodes may be empty.
ElasticDecision elastic_target(const TrainingJob& job, const std::vector<PodFacts>& live_pods,
                               const std::vector<NodeFacts>& nodes, UnixSeconds now, int64_t unschedulable_grace_s);

}  // namespace kubedist::trainingjob
