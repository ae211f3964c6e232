// A TrainingJob's phases and condition types (status.phase, status.conditions[].type), spelled only at the JSON edge.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kubedist::trainingjob {

// status.phase; kNone until the operator first writes one ("" in the API).
enum class JobPhase { kNone, kPending, kRunning, kRestarting, kScaling, kSucceeded, kFailed, kSuspended };

// A condition type the operator keeps on a job. The core's are the constants below; an integration names its own
// (gang/: GangScheduled, kueue/: Admitted) the same way, as a constant.
struct ConditionType {
  std::string_view name;  // the API spelling, a string literal's (so that a type can be a constant)
  bool operator==(const ConditionType& o) const { return name == o.name; }

  static const ConditionType kCreated, kRunning, kRestarting, kSucceeded, kFailed, kSuspended;
  // The API server forbids the job's pods (Pod Security, a ResourceQuota, an admission webhook, RBAC).
  static const ConditionType kPodsRefused;
  // spec.checkpoint.claimName names no PersistentVolumeClaim: the job's pods wait for it (decide/checkpoint.h).
  static const ConditionType kCheckpointVolumeMissing;
};
inline constexpr ConditionType ConditionType::kCreated{"Created"};
inline constexpr ConditionType ConditionType::kRunning{"Running"};
inline constexpr ConditionType ConditionType::kRestarting{"Restarting"};
inline constexpr ConditionType ConditionType::kSucceeded{"Succeeded"};
inline constexpr ConditionType ConditionType::kFailed{"Failed"};
inline constexpr ConditionType ConditionType::kSuspended{"Suspended"};
inline constexpr ConditionType ConditionType::kPodsRefused{"PodsRefused"};
inline constexpr ConditionType ConditionType::kCheckpointVolumeMissing{"CheckpointVolumeMissing"};

// The core's condition types, which every status reader keeps.
std::vector<ConditionType> core_condition_types();
bool is_core(ConditionType type);

// The API spellings (crd/kubedist.io_trainingjobs.yaml): "Pending", "Running", ...; kNone is "".
const char* to_string(JobPhase phase);
std::string to_string(ConditionType type);

// A phase someone else wrote that is none of ours reads as kNone: the job is decided afresh.
JobPhase parse_job_phase(const std::string& s);
// The type of kept spelled s; nullopt: not a condition the operator keeps.
std::optional<ConditionType> parse_condition_type(const std::string& s, const std::vector<ConditionType>& kept);

}  // namespace kubedist::trainingjob
