#include "trainingjob/api/job_state.h"

namespace kubedist::trainingjob {

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

const char* to_string(ConditionType type) {
  switch (type) {
    case ConditionType::kCreated: return "Created";
    case ConditionType::kRunning: return "Running";
    case ConditionType::kRestarting: return "Restarting";
    case ConditionType::kSucceeded: return "Succeeded";
    case ConditionType::kFailed: return "Failed";
    case ConditionType::kSuspended: return "Suspended";
    case ConditionType::kGangScheduled: return "GangScheduled";
    case ConditionType::kAdmitted: return "Admitted";
  }
  return "";
}

JobPhase parse_job_phase(const std::string& s) {
  for (JobPhase p : {JobPhase::kPending, JobPhase::kRunning, JobPhase::kRestarting, JobPhase::kScaling,
                     JobPhase::kSucceeded, JobPhase::kFailed, JobPhase::kSuspended}) {
    if (s == to_string(p)) return p;
  }
  return JobPhase::kNone;
}

std::optional<ConditionType> parse_condition_type(const std::string& s) {
  for (ConditionType t : {ConditionType::kCreated, ConditionType::kRunning, ConditionType::kRestarting,
                          ConditionType::kSucceeded, ConditionType::kFailed, ConditionType::kSuspended,
                          ConditionType::kGangScheduled, ConditionType::kAdmitted}) {
    if (s == to_string(t)) return t;
  }
  return std::nullopt;
}

}  // namespace kubedist::trainingjob
