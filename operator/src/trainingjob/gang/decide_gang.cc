#include "trainingjob/gang/decide_gang.h"

#include "trainingjob/render/render.h"
#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {

std::optional<Ending> decide_gang_objects(DecideState& s) {
  const auto gang = gang_min_count(s.job, s.obs.gang_by_default);
  if (!gang) return std::nullopt;
  if (!s.obs.gang_api) {
    return Ending{false, "GangSchedulingUnavailable",
                  "spec.scheduling.gang asks for gang scheduling, but the cluster does not serve "
                  "scheduling.k8s.io/v1alpha2 PodGroups (Kubernetes 1.36+ with the feature gates GenericWorkload "
                  "and GangScheduling and that API enabled) or the operator runs with --gang-scheduling=off"};
  }
  if (s.obs.pod_group && s.obs.pod_group->owner_uid != s.job.uid) {
    return Ending{false, "GangSchedulingConflict",
                  "PodGroup " + s.job.name + " exists but is not this job's: delete it or rename the job"};
  }
  if (!s.obs.pod_group) {
    s.plan.create_gang = *gang;
  } else if (s.obs.pod_group->min_count != *gang) {
    s.plan.delete_gang = true;  // minReplicas changed; a PodGroup's policy is immutable: the next pass recreates it
  }
  return std::nullopt;
}

void decide_gang_condition(DecideState& s) {
  if (!s.obs.pod_group || !gang_min_count(s.job, s.obs.gang_by_default)) return;
  const PodGroupFacts& pg = *s.obs.pod_group;
  Status& st = s.plan.status;
  const Condition* before = find_condition(st, ConditionType::kGangScheduled);
  const std::string gang = "the gang of " + std::to_string(pg.min_count) + " pods (minReplicas)";
  if (pg.scheduled == "False") {
    const std::string reason = pg.reason.empty() ? "Unschedulable" : pg.reason;
    const std::string message = gang + " waits: the scheduler cannot place it whole" +
                                (pg.message.empty() ? std::string() : ": " + pg.message);
    if (before == nullptr || before->status != "False" || before->reason != reason) {
      s.emit("Warning", "GangWaiting", message);
    }
    set_condition(st, ConditionType::kGangScheduled, false, reason, message, s.now);
  } else if (pg.scheduled == "True") {
    if (before != nullptr && before->status == "False") s.emit("Normal", "GangScheduled", gang + " was placed");
    set_condition(st, ConditionType::kGangScheduled, true, "Scheduled", gang + " was placed together", s.now);
  }
}

}  // namespace kubedist::trainingjob
