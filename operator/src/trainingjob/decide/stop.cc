#include "trainingjob/decide/stop.h"

#include "trainingjob/decide/lost_pods.h"
#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {
namespace {

// The pods cleanPodPolicy removes once the job has finished.
bool cleaned_up(CleanPodPolicy policy, const PodFacts& pod) {
  switch (policy) {
    case CleanPodPolicy::kAll: return true;
    case CleanPodPolicy::kRunning: return pod.phase != "Succeeded" && pod.phase != "Failed";
    case CleanPodPolicy::kNone: return false;
  }
  return false;
}

}  // namespace

Plan finish(DecideState& s, const Ending& ending) {
  Status& st = s.plan.status;
  const std::string& reason = ending.reason;
  const std::string& message = ending.message;
  st.phase = ending.success ? JobPhase::kSucceeded : JobPhase::kFailed;
  set_condition(st, ending.success ? ConditionType::kSucceeded : ConditionType::kFailed, true, reason, message, s.now);
  for (ConditionType type : {ConditionType::kRunning, ConditionType::kRestarting}) {
    if (find_condition(st, type) != nullptr) set_condition(st, type, false, reason, message, s.now);
  }
  st.completion_time = format_rfc3339(s.now);
  s.emit(ending.success ? "Normal" : "Warning", reason, message);
  s.plan.create_ranks.clear();
  s.plan.requeue_after_s.reset();
  return finished(s);
}

Plan finished(DecideState& s) {
  for (const Hook* hook : s.hooks) hook->finished(s);
  const Spec& spec = s.spec;
  std::vector<std::string> names;
  for (const auto& pod : s.live) {
    bool already = false;
    for (const auto& d : s.plan.delete_pods) already = already || d.uid == pod.uid;
    if (!already && cleaned_up(spec.clean_pod_policy, pod)) {
      s.delete_pod(pod);
      names.push_back(pod.name);
    }
  }
  // A pod stopped on a node that stopped reporting stays Terminating until its node is confirmed gone: then forced.
  for (const auto& pod : s.terminating) {
    if (pod.phase != "Succeeded" && pod.phase != "Failed" && node_lost(s, pod).force) s.delete_pod(pod, true);
  }
  if (!names.empty()) {
    s.emit("Normal", "CleanedUp",
           std::string("deleting pods ") + join_names(names) + " (cleanPodPolicy " +
               to_string(spec.clean_pod_policy) + ")");
  }
  Status& st = s.plan.status;
  if (spec.ttl_seconds_after_finished) {
    const UnixSeconds done = parse_rfc3339(st.completion_time).value_or(s.now);
    const int64_t left = done + *spec.ttl_seconds_after_finished - s.now;
    if (left <= 0) {
      s.delete_job = true;
      s.emit("Normal", "TTLExpired",
             "deleting the job: ttlSecondsAfterFinished=" + std::to_string(*spec.ttl_seconds_after_finished) +
                 " has passed");
    } else {
      s.plan.requeue_after_s = left;
    }
  }
  observe_pods(st, spec, s.live);
  return std::move(s.plan);
}

Plan fail_for_spec(DecideState& s, const std::string& why) {
  Status& st = s.plan.status;
  const Condition* c = find_condition(st, ConditionType::kFailed);
  const bool reported = c != nullptr && c->status == "True" && c->reason == "InvalidSpec" && c->message == why;
  st.phase = JobPhase::kFailed;
  set_condition(st, ConditionType::kFailed, true, "InvalidSpec", why, s.now);
  if (st.completion_time.empty()) st.completion_time = format_rfc3339(s.now);
  if (!reported) s.emit("Warning", "InvalidSpec", why);
  for (const Hook* hook : s.hooks) hook->finished(s);
  observe_pods(st, s.spec, s.live);
  return std::move(s.plan);
}

Plan suspend(DecideState& s) {
  Status& st = s.plan.status;
  std::vector<std::string> names;
  for (const auto& pod : s.live) {
    s.delete_pod(pod);
    names.push_back(pod.name);
  }
  if (!condition_true(st, ConditionType::kSuspended) || !names.empty()) {
    s.emit("Normal", "Suspended",
           names.empty() ? std::string("job suspended") : "job suspended: deleting pods " + join_names(names));
  }
  const std::string why = "spec.suspend is true";
  set_condition(st, ConditionType::kSuspended, true, "JobSuspended", why, s.now);
  if (condition_true(st, ConditionType::kRunning)) {
    set_condition(st, ConditionType::kRunning, false, "JobSuspended", why, s.now);
  }
  for (const Hook* hook : s.hooks) hook->suspended(s);
  st.phase = JobPhase::kSuspended;
  st.start_time = "";  // activeDeadlineSeconds counts from the resume, as for a batch Job
  observe_pods(st, s.spec, s.live);
  return std::move(s.plan);
}

}  // namespace kubedist::trainingjob
