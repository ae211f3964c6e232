// What gang scheduling reads: the job's PodGroup (scheduling.k8s.io), and its facts about a job for decide().
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"
#include "trainingjob/decide/hook.h"

namespace kubedist::trainingjob {

// What the operator needs to know of the job's PodGroup: its gang size and whether the scheduler could place the
// gang (the PodGroupScheduled condition).
struct PodGroupFacts {
  std::string ns;
  std::string name;
  std::string owner_uid;
  int min_count = 0;        // spec.schedulingPolicy.gang.minCount; 0 when the group is no gang
  std::string scheduled;    // PodGroupScheduled's status: "True", "False", or "" before the scheduler's first try
  std::string reason;       // its reason (Unschedulable, SchedulerError, ...)
  std::string message;      // its message: what the scheduler could not place
  bool operator==(const PodGroupFacts&) const = default;
};

PodGroupFacts parse_pod_group_facts(const nlohmann::json& pod_group);
inline std::string job_key_of(const PodGroupFacts& g) { return g.ns + "/" + g.name; }

// Gang scheduling's facts about one job (decide/hook.h).
struct GangFacts final : IntegrationFacts {
  bool api = false;         // the cluster serves PodGroups and the operator watches them
  bool by_default = false;  // jobs without spec.scheduling.gang are gang-scheduled (--gang-scheduling=all)
  std::optional<PodGroupFacts> pod_group;  // PodGroup J, when it exists
  // A hook for a gang-scheduled job (gang/decide.h); null for any other.
  std::unique_ptr<Hook> hook(const TrainingJob& job) const override;
};

}  // namespace kubedist::trainingjob
