// What Kueue admission writes: a queued job's Workload and the status writes back to it, and where admitted pods go.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "trainingjob/api/types.h"
#include "trainingjob/kueue/facts.h"

namespace kubedist::trainingjob {

// Where the admitted pods go: the admitted flavors' node labels (into nodeSelector) and tolerations.
struct Placement {
  std::map<std::string, std::string> node_selector;
  nlohmann::json tolerations = nlohmann::json::array();
  bool operator==(const Placement&) const = default;
};

// Adds the placement to a rendered pod: the node selector (a flavor's label wins over the template's same key, as
// the pod must land on the flavor's nodes) and the tolerations.
void apply_placement(nlohmann::json& pod, const Placement& placement);

// Workload J for a queued job: one pod set "nodes" of the job's pod template (limits copied to missing requests, as
// the API server does for pods, since Kueue counts requests), count spec.replicas, minCount spec.minReplicas when
// smaller (partial admission), the queue, and the priority (value of the job's WorkloadPriorityClass) if any.
nlohmann::json render_kueue_workload(const TrainingJob& job, std::optional<PriorityClassFacts> priority);

// A status write to Workload J, as Kueue's own job integrations make them.
struct KueueStatusWrite {
  enum class Kind {
    kReleaseQuota,  // after an eviction, once the pods are gone: no admission, QuotaReserved False, Requeued
    kFinish,        // the job finished: Finished True, and Kueue releases the quota
  };
  Kind kind = Kind::kFinish;
  std::string reason;   // Finished: Succeeded | Failed; ReleaseQuota: the eviction's reason
  std::string message;
  bool operator==(const KueueStatusWrite&) const = default;
};

// The merge patch of Workload J's status for a write: it carries the workload's resourceVersion (a concurrent
// write by Kueue makes it fail with a conflict instead of being lost) and the whole conditions list, changed.
nlohmann::json kueue_status_patch(const KueueWorkloadFacts& workload, const KueueStatusWrite& write, UnixSeconds now);

}  // namespace kubedist::trainingjob
