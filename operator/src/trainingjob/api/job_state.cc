#include "trainingjob/api/job_state.h"

#include <algorithm>

namespace kubedist::trainingjob {

std::vector<ConditionType> core_condition_types() {
  return {ConditionType::kCreated,   ConditionType::kRunning, ConditionType::kRestarting,
          ConditionType::kSucceeded, ConditionType::kFailed,  ConditionType::kSuspended,
          ConditionType::kPodsRefused, ConditionType::kCheckpointVolumeMissing};
}

bool is_core(ConditionType type) {
  const auto core = core_condition_types();
  return std::find(core.begin(), core.end(), type) != core.end();
}

const char* to_string(JobPhase phase) {
  switch (phase) {
    case JobPhase::kNone: return "";
    case JobPhase::kPending: return "Pending";
    case JobPhase::kRunning: return "Running";
    case JobPhase::kRestarting: return "Restarting";
    case JobPhase::kScaling: return "Scaling";
    case JobPhase::kSucceeded: return "Succeeded";
    case JobPhase::kFailed: return "Failed";
    case JobPhase::kSuspended: return "Suspended";
  }
  return "";
}

std::string to_string(ConditionType type) { return std::string(type.name); }

JobPhase parse_job_phase(const std::string& s) {
  for (JobPhase p : {JobPhase::kPending, JobPhase::kRunning, JobPhase::kRestarting, JobPhase::kScaling,
                     JobPhase::kSucceeded, JobPhase::kFailed, JobPhase::kSuspended}) {
    if (s == to_string(p)) return p;
  }
  return JobPhase::kNone;
}

std::optional<ConditionType> parse_condition_type(const std::string& s, const std::vector<ConditionType>& kept) {
  for (ConditionType t : kept) {
    if (s == t.name) return t;
  }
  return std::nullopt;
}

}  // namespace kubedist::trainingjob
