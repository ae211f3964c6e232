// A TrainingJob's phases and condition types (status.phase, status.conditions[].type), spelled only at the JSON edge.
#pragma once

#include <optional>
#include <string>

namespace kubedist::trainingjob {

// status.phase; kNone until the operator first writes one ("" in the API).
enum class JobPhase { kNone, kPending, kRunning, kRestarting, kScaling, kSucceeded, kFailed, kSuspended };

// The condition types the operator keeps on a job.
enum class ConditionType {
  kCreated, kRunning, kRestarting, kSucceeded, kFailed, kSuspended, kGangScheduled,
  kAdmitted,  // Kueue admitted the job (only on jobs labelled kueue.x-k8s.io/queue-name)
};

// The API spellings (crd/kubedist.io_trainingjobs.yaml): "Pending", "Running", ...; kNone is "".
const char* to_string(JobPhase phase);
const char* to_string(ConditionType type);

// A phase someone else wrote that is none of ours reads as kNone: the job is decided afresh.
JobPhase parse_job_phase(const std::string& s);
// nullopt: not a condition the operator keeps.
std::optional<ConditionType> parse_condition_type(const std::string& s);

}  // namespace kubedist::trainingjob
