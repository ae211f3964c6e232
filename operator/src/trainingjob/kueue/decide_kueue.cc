#include "trainingjob/kueue/decide_kueue.h"

#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {
namespace {

// Workload J, when it is this job's.
const KueueWorkloadFacts* own_workload(const DecideState& s) {
  const auto& wl = s.obs.kueue.workload;
  return !s.job.queue_name.empty() && wl && wl->owner_uid == s.job.uid ? &*wl : nullptr;
}

}  // namespace

Plan wait_for_admission(DecideState& s, const Admission& a) {
  using State = Admission::State;
  Status& st = s.plan.status;
  std::vector<std::string> names;
  for (const auto& pod : s.live) {
    s.delete_pod(pod);
    names.push_back(pod.name);
  }
  switch (a.state) {
    case State::kCreate:
      s.plan.create_kueue_workload = true;
      s.plan.kueue_priority = a.priority;
      break;
    case State::kRecreate: s.plan.delete_kueue_workload = true; break;
    case State::kEvicted:
      // The quota goes back once the pods are gone, so that what preempted the job finds the room free.
      if (s.live.empty() && s.terminating.empty()) {
        s.plan.kueue_status = KueueStatusWrite{KueueStatusWrite::Kind::kReleaseQuota, a.reason, a.message};
      }
      break;
    default: break;
  }
  const Condition* before = find_condition(st, ConditionType::kAdmitted);
  const bool news = before == nullptr || before->status != "False" || before->reason != a.reason;
  if (news || !names.empty()) {
    const bool trouble = a.state == State::kUnavailable || a.state == State::kConflict ||
                         a.reason == "PriorityClassNotFound" || a.reason == "FlavorNotFound";
    const std::string what = a.state == State::kEvicted ? "Evicted" : trouble ? a.reason : "Queued";
    s.emit(a.state == State::kEvicted || trouble ? "Warning" : "Normal", what,
           names.empty() ? a.message : a.message + "; deleting pods " + join_names(names));
  }
  set_condition(st, ConditionType::kAdmitted, false, a.reason, a.message, s.now);
  set_condition(st, ConditionType::kSuspended, true, "WaitingForAdmission", a.message, s.now);
  if (condition_true(st, ConditionType::kRunning)) set_condition(st, ConditionType::kRunning, false, a.reason, a.message, s.now);
  st.phase = JobPhase::kSuspended;
  st.start_time = "";  // activeDeadlineSeconds counts from the admission
  observe_pods(st, s.spec, s.live);
  return std::move(s.plan);
}

void note_admission(DecideState& s, const Admission& a) {
  Status& st = s.plan.status;
  if (!condition_true(st, ConditionType::kAdmitted)) s.emit("Normal", "Admitted", a.message);
  set_condition(st, ConditionType::kAdmitted, true, a.reason, a.message, s.now);
  s.plan.placement = a.placement;
  if (condition_true(st, ConditionType::kSuspended)) {
    set_condition(st, ConditionType::kSuspended, false, "Admitted", a.message, s.now);
  }
}

void finish_kueue_workload(DecideState& s) {
  const KueueWorkloadFacts* wl = own_workload(s);
  if (wl == nullptr || wl->finished) return;
  const Status& st = s.plan.status;
  const bool success = st.phase == JobPhase::kSucceeded;
  const Condition* c = find_condition(st, success ? ConditionType::kSucceeded : ConditionType::kFailed);
  s.plan.kueue_status = KueueStatusWrite{KueueStatusWrite::Kind::kFinish, success ? "Succeeded" : "Failed",
                                         c != nullptr && !c->message.empty() ? c->message
                                                                             : std::string("the job ") + to_string(st.phase)};
}

void drop_kueue_workload(DecideState& s) {
  if (own_workload(s) != nullptr) s.plan.delete_kueue_workload = true;
  Status& st = s.plan.status;
  if (find_condition(st, ConditionType::kAdmitted) != nullptr) {
    set_condition(st, ConditionType::kAdmitted, false, "JobSuspended", "spec.suspend is true", s.now);
  }
}

}  // namespace kubedist::trainingjob
