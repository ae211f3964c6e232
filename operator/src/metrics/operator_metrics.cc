#include "metrics/operator_metrics.h"

#include <sstream>

#include <prometheus/text_serializer.h>

namespace kubedist::metrics {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Labels;

Labels job_labels(const std::string& ns, const std::string& name) {
  return {{"job_namespace", ns}, {"job_name", name}};
}

}  // namespace

const std::vector<std::string>& job_phases() {
  static const std::vector<std::string> phases = {"Pending", "Running", "Restarting", "Scaling",
                                                  "Suspended", "Succeeded", "Failed"};
  return phases;
}

const std::vector<std::string>& restart_reasons() {
  static const std::vector<std::string> reasons = {"worker_crash", "pod_failure", "node_lost", "scale", "hang"};
  return reasons;
}

OperatorMetrics::OperatorMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      created_(BuildCounter().Name("kubedist_jobs_created_total").Help("TrainingJobs the operator started")
                   .Register(*registry_)),
      succeeded_(BuildCounter().Name("kubedist_jobs_succeeded_total").Help("TrainingJobs that ended Succeeded")
                     .Register(*registry_)),
      failed_(BuildCounter().Name("kubedist_jobs_failed_total").Help("TrainingJobs that ended Failed")
                  .Register(*registry_)),
      restarts_(BuildCounter().Name("kubedist_restarts_total")
                    .Help("Group restarts and pod recreations by reason (worker_crash, pod_failure, node_lost, scale, "
                          "hang)")
                    .Register(*registry_)),
      nodes_(BuildGauge().Name("kubedist_job_nodes").Help("Pods running per TrainingJob").Register(*registry_)),
      target_nodes_(BuildGauge().Name("kubedist_job_target_nodes")
                        .Help("Nodes the operator aims at per TrainingJob: spec.replicas, or the elastic target")
                        .Register(*registry_)),
      scale_decisions_(BuildCounter().Name("kubedist_scale_decisions_total")
                           .Help("Elastic target changes by the operator, by direction (down, up)")
                           .Register(*registry_)),
      world_size_(BuildGauge().Name("kubedist_job_world_size")
                      .Help("Worker processes in the TrainingJob's current group").Register(*registry_)),
      phase_(BuildGauge().Name("kubedist_job_phase")
                 .Help("1 for the TrainingJob's current phase, 0 for the others").Register(*registry_)),
      recovery_(BuildGauge().Name("kubedist_job_last_recovery_seconds")
                    .Help("Seconds from the job's last Restarting condition turning True to it running again")
                    .Register(*registry_)),
      waiting_(BuildGauge().Name("kubedist_job_waiting_for_admission")
                   .Help("1 while a TrainingJob queued for Kueue waits for admission, else 0").Register(*registry_)),
      admission_wait_(BuildGauge().Name("kubedist_job_last_admission_wait_seconds")
                          .Help("Seconds the TrainingJob last waited for Kueue's admission (since queued or requeued)")
                          .Register(*registry_)),
      admission_wait_seconds_(BuildHistogram().Name("kubedist_admission_wait_seconds")
                                  .Help("Seconds TrainingJobs waited for Kueue's admission, by namespace")
                                  .Register(*registry_)),
      step_(BuildGauge().Name("kubedist_job_step")
                .Help("The TrainingJob's training step, as its workers report it (status.progress.step)")
                .Register(*registry_)),
      steps_per_second_(BuildGauge().Name("kubedist_job_steps_per_second")
                            .Help("The TrainingJob's training steps per second over about the last minute")
                            .Register(*registry_)),
      eta_(BuildGauge().Name("kubedist_job_estimated_completion_timestamp_seconds")
               .Help("When the TrainingJob should reach its total steps at its current rate (Unix time; its ETA)")
               .Register(*registry_)),
      goodput_(BuildGauge().Name("kubedist_job_goodput")
                   .Help("Share of the TrainingJob's wall time since its first pod started spent making steps")
                   .Register(*registry_)),
      reconcile_duration_(BuildHistogram().Name("kubedist_reconcile_duration_seconds")
                              .Help("Duration of one reconcile of one TrainingJob").Register(*registry_)
                              .Add({}, prometheus::Histogram::BucketBoundaries{
                                           0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                           1, 2.5, 5, 10})),
      workqueue_depth_(BuildGauge().Name("kubedist_workqueue_depth").Help("Keys waiting in the work queue")
                           .Register(*registry_).Add({})),
      workqueue_retries_(BuildCounter().Name("kubedist_workqueue_retries_total")
                             .Help("Keys requeued after a reconcile error").Register(*registry_).Add({})),
      api_requests_(BuildCounter().Name("kubedist_api_requests_total")
                        .Help("Requests to the Kubernetes API server by verb and HTTP status code (0: no answer)")
                        .Register(*registry_)) {}

std::string OperatorMetrics::render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

void OperatorMetrics::api_request(const std::string& verb, int http_status) {
  api_requests_.Add({{"verb", verb}, {"code", std::to_string(http_status)}}).Increment();
}

void OperatorMetrics::reconcile_duration(double seconds) { reconcile_duration_.Observe(seconds); }
void OperatorMetrics::workqueue_depth(size_t depth) { workqueue_depth_.Set(static_cast<double>(depth)); }
void OperatorMetrics::workqueue_retry() { workqueue_retries_.Increment(); }

void OperatorMetrics::namespace_seen(const std::string& ns) {
  for (auto* family : {&created_, &succeeded_, &failed_}) family->Add({{"job_namespace", ns}});
}
void OperatorMetrics::job_created(const std::string& ns) {
  namespace_seen(ns);
  created_.Add({{"job_namespace", ns}}).Increment();
}
void OperatorMetrics::job_succeeded(const std::string& ns) {
  namespace_seen(ns);
  succeeded_.Add({{"job_namespace", ns}}).Increment();
}
void OperatorMetrics::job_failed(const std::string& ns) {
  namespace_seen(ns);
  failed_.Add({{"job_namespace", ns}}).Increment();
}

OperatorMetrics::JobSeries& OperatorMetrics::job_locked(const std::string& ns, const std::string& name) {
  auto [it, inserted] = jobs_.try_emplace({ns, name});
  JobSeries& s = it->second;
  if (inserted) {
    namespace_seen(ns);
    const Labels labels = job_labels(ns, name);
    for (const auto& reason : restart_reasons()) {
      Labels l = labels;
      l["reason"] = reason;
      s.restarts[reason] = &restarts_.Add(l);
    }
    s.nodes = &nodes_.Add(labels);
    s.target_nodes = &target_nodes_.Add(labels);
    for (const char* direction : {"down", "up"}) {
      Labels l = labels;
      l["direction"] = direction;
      s.scale_decisions[direction] = &scale_decisions_.Add(l);
    }
    s.world_size = &world_size_.Add(labels);
    for (const auto& phase : job_phases()) {
      Labels l = labels;
      l["phase"] = phase;
      s.phase[phase] = &phase_.Add(l);
    }
  }
  return s;
}

void OperatorMetrics::restarts(const std::string& ns, const std::string& name, const std::string& reason,
                               int increase) {
  std::lock_guard<std::mutex> lock(mu_);
  JobSeries& s = job_locked(ns, name);
  auto it = s.restarts.find(reason);
  if (it == s.restarts.end()) {  // a reason newer than this list: still counted, under its own name
    Labels l = job_labels(ns, name);
    l["reason"] = reason;
    it = s.restarts.emplace(reason, &restarts_.Add(l)).first;
  }
  if (increase > 0) it->second->Increment(increase);
}

void OperatorMetrics::job_state(const std::string& ns, const std::string& name, int nodes, int target_nodes,
                                int world_size, const std::string& phase) {
  std::lock_guard<std::mutex> lock(mu_);
  JobSeries& s = job_locked(ns, name);
  s.nodes->Set(nodes);
  s.target_nodes->Set(target_nodes);
  s.world_size->Set(world_size);
  for (auto& [p, gauge] : s.phase) gauge->Set(p == phase ? 1 : 0);
}

void OperatorMetrics::scale_decision(const std::string& ns, const std::string& name, const std::string& direction) {
  std::lock_guard<std::mutex> lock(mu_);
  JobSeries& s = job_locked(ns, name);
  auto it = s.scale_decisions.find(direction);
  if (it != s.scale_decisions.end()) it->second->Increment();
}

void OperatorMetrics::job_recovery(const std::string& ns, const std::string& name, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  JobSeries& s = job_locked(ns, name);
  if (s.recovery == nullptr) s.recovery = &recovery_.Add(job_labels(ns, name));
  s.recovery->Set(seconds);
}

void OperatorMetrics::job_waiting_for_admission(const std::string& ns, const std::string& name, bool waiting) {
  std::lock_guard<std::mutex> lock(mu_);
  JobSeries& s = job_locked(ns, name);
  if (s.waiting == nullptr) s.waiting = &waiting_.Add(job_labels(ns, name));
  s.waiting->Set(waiting ? 1 : 0);
}

void OperatorMetrics::job_admitted(const std::string& ns, const std::string& name, double waited_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  JobSeries& s = job_locked(ns, name);
  if (s.admission_wait == nullptr) s.admission_wait = &admission_wait_.Add(job_labels(ns, name));
  s.admission_wait->Set(waited_seconds);
  admission_wait_seconds_
      .Add({{"job_namespace", ns}},
           prometheus::Histogram::BucketBoundaries{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400})
      .Observe(waited_seconds);
}

void OperatorMetrics::job_progress(const std::string& ns, const std::string& name, double step,
                                   double steps_per_second, std::optional<double> eta_unix,
                                   std::optional<double> goodput) {
  std::lock_guard<std::mutex> lock(mu_);
  JobSeries& s = job_locked(ns, name);
  const Labels labels = job_labels(ns, name);
  if (s.step == nullptr) s.step = &step_.Add(labels);
  if (s.steps_per_second == nullptr) s.steps_per_second = &steps_per_second_.Add(labels);
  s.step->Set(step);
  s.steps_per_second->Set(steps_per_second);
  // An optional value is a series while known and none while not (a stale ETA would mislead a dashboard).
  const auto set = [&](prometheus::Family<prometheus::Gauge>& family, prometheus::Gauge*& gauge,
                       std::optional<double> v) {
    if (v && gauge == nullptr) gauge = &family.Add(labels);
    if (v) gauge->Set(*v);
    if (!v && gauge != nullptr) family.Remove(gauge), gauge = nullptr;
  };
  set(eta_, s.eta, eta_unix);
  set(goodput_, s.goodput, goodput);
}

void OperatorMetrics::forget_job(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find({ns, name});
  if (it == jobs_.end()) return;
  JobSeries& s = it->second;
  for (auto& [reason, c] : s.restarts) restarts_.Remove(c);
  nodes_.Remove(s.nodes);
  target_nodes_.Remove(s.target_nodes);
  for (auto& [direction, c] : s.scale_decisions) scale_decisions_.Remove(c);
  world_size_.Remove(s.world_size);
  for (auto& [phase, g] : s.phase) phase_.Remove(g);
  if (s.recovery != nullptr) recovery_.Remove(s.recovery);
  if (s.waiting != nullptr) waiting_.Remove(s.waiting);
  if (s.admission_wait != nullptr) admission_wait_.Remove(s.admission_wait);
  if (s.step != nullptr) step_.Remove(s.step);
  if (s.steps_per_second != nullptr) steps_per_second_.Remove(s.steps_per_second);
  if (s.eta != nullptr) eta_.Remove(s.eta);
  if (s.goodput != nullptr) goodput_.Remove(s.goodput);
  jobs_.erase(it);
}

}  // namespace kubedist::metrics
