#include "trainingjob/act/job_metrics.h"

#include "common/time.h"
#include "trainingjob/decide/status.h"
#include "trainingjob/kueue/decide.h"

namespace kubedist::trainingjob {

int target_nodes(const Spec& spec, const Status& status) {
  return status.elastic.target_replicas > 0 ? status.elastic.target_replicas : spec.replicas;
}

std::optional<bool> waiting_for_admission(const Status& status) {
  const Condition* c = find_condition(status, kAdmitted);
  if (c == nullptr) return std::nullopt;
  return c->status != "True";
}

StatusTransition status_transition(const Spec& spec, const Status& before, const Status& after) {
  StatusTransition t;
  if (after.elastic.target_replicas != before.elastic.target_replicas) {
    const int from = target_nodes(spec, before), to = target_nodes(spec, after);
    t.scaled = to < from ? -1 : to > from ? 1 : 0;
  }
  t.created = condition_true(after, ConditionType::kCreated) && !condition_true(before, ConditionType::kCreated);
  t.succeeded = after.phase == JobPhase::kSucceeded && before.phase != JobPhase::kSucceeded;
  t.failed = after.phase == JobPhase::kFailed && before.phase != JobPhase::kFailed;
  for (const auto& [reason, n] : after.restarts_by_reason) {
    auto it = before.restarts_by_reason.find(reason);
    const int increase = n - (it == before.restarts_by_reason.end() ? 0 : it->second);
    if (increase > 0) t.restarts[reason] = increase;
  }
  const Condition* was = find_condition(before, ConditionType::kRestarting);
  const Condition* now = find_condition(after, ConditionType::kRestarting);
  if (after.phase == JobPhase::kRunning && was != nullptr && was->status == "True" && now != nullptr &&
      now->status == "False") {
    const auto from = parse_rfc3339(was->last_transition_time);
    const auto to = parse_rfc3339(now->last_transition_time);
    if (from && to && *to >= *from) t.recovery_seconds = static_cast<double>(*to - *from);
  }
  const Condition* queued = find_condition(before, kAdmitted);
  const Condition* admitted = find_condition(after, kAdmitted);
  if (queued != nullptr && queued->status == "False" && admitted != nullptr && admitted->status == "True") {
    const auto from = parse_rfc3339(queued->last_transition_time);
    const auto to = parse_rfc3339(admitted->last_transition_time);
    if (from && to && *to >= *from) t.admission_wait_seconds = static_cast<double>(*to - *from);
  }
  return t;
}

namespace {

void progress_metrics(metrics::OperatorMetrics& m, const std::string& ns, const std::string& name, const Status& s) {
  if (!s.progress) return;
  const ProgressStatus& p = *s.progress;
  std::optional<double> eta;
  if (const auto t = parse_rfc3339(p.estimated_completion_time)) eta = static_cast<double>(*t);
  m.job_progress(ns, name, static_cast<double>(p.step), p.steps_per_second, eta, p.goodput);
}

}  // namespace

void JobMetrics::seen(const TrainingJob& job) {
  if (job.name.empty()) return;  // an object the informer could not parse: nothing to label series with
  const Status& s = job.status;
  metrics_.job_state(job.ns, job.name, s.ready_replicas, target_nodes(job.spec, s), s.world_size, to_string(s.phase));
  if (const auto waiting = waiting_for_admission(s)) metrics_.job_waiting_for_admission(job.ns, job.name, *waiting);
  progress_metrics(metrics_, job.ns, job.name, s);
}

void JobMetrics::written(const TrainingJob& before, const Status& after) {
  if (before.name.empty()) return;
  const StatusTransition t = status_transition(before.spec, before.status, after);
  if (t.created) metrics_.job_created(before.ns);
  if (t.succeeded) metrics_.job_succeeded(before.ns);
  if (t.failed) metrics_.job_failed(before.ns);
  for (const auto& [reason, n] : t.restarts) metrics_.restarts(before.ns, before.name, reason, n);
  if (t.recovery_seconds) metrics_.job_recovery(before.ns, before.name, *t.recovery_seconds);
  if (t.scaled != 0) metrics_.scale_decision(before.ns, before.name, t.scaled < 0 ? "down" : "up");
  if (t.admission_wait_seconds) metrics_.job_admitted(before.ns, before.name, *t.admission_wait_seconds);
  if (const auto waiting = waiting_for_admission(after)) {
    metrics_.job_waiting_for_admission(before.ns, before.name, *waiting);
  }
  metrics_.job_state(before.ns, before.name, after.ready_replicas, target_nodes(before.spec, after), after.world_size,
                     to_string(after.phase));
  progress_metrics(metrics_, before.ns, before.name, after);
}

void JobMetrics::forget(const std::string& ns, const std::string& name) { metrics_.forget_job(ns, name); }

}  // namespace kubedist::trainingjob
