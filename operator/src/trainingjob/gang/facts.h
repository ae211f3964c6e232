// What gang scheduling reads: the job's PodGroup (scheduling.k8s.io), and its facts about a job for decide().
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"
#include "trainingjob/decide/hook.h"
#include "trainingjob/gang/workload_api.h"

namespace kubedist::trainingjob {

// What the operator needs to know of the job's PodGroup: its gang size and whether the scheduler could place the
// gang (the condition PodGroupScheduled, v1beta1's PodGroupInitiallyScheduled).
struct PodGroupFacts {
  std::string ns;
  std::string name;
  std::string owner_uid;
  int min_count = 0;        // spec.schedulingPolicy.gang.minCount; 0 when the group is no gang
  std::string scheduled;    // that condition's status: "True", "False", or "" before the scheduler's first try
  std::string reason;       // its reason (Unschedulable, SchedulerError, ...)
  std::string message;      // its message: what the scheduler could not place
  bool operator==(const PodGroupFacts&) const = default;
};

PodGroupFacts parse_pod_group_facts(const nlohmann::json& pod_group);
inline std::string job_key_of(const PodGroupFacts& g) { return g.ns + "/" + g.name; }

// Gang scheduling's facts about one job (decide/hook.h).
struct GangFacts final : IntegrationFacts {
  bool api = false;         // the cluster serves PodGroups and the operator watches them
  GangApi version = GangApi::kV1Beta1;  // then: the Workload API version they are served in
  bool by_default = false;  // jobs without spec.scheduling.gang are gang-scheduled (--gang-scheduling=all)
  std::optional<PodGroupFacts> pod_group;  // PodGroup J, when it exists
  // A hook for a gang-scheduled job (gang/decide.h); null for any other.
  std::unique_ptr<Hook> hook(const TrainingJob& job) const override;
};

}  // namespace kubedist::trainingjob
