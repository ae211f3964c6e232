#include "metrics/operator_metrics.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <locale>
#include <ostream>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include <prometheus/text_serializer.h>

namespace kubedist::metrics {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Labels;

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
      admission_wait_seconds_(BuildHistogram().Name("kubedist_admission_wait_seconds")
                                  .Help("Seconds TrainingJobs waited for Kueue's admission, by namespace")
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
  render_jobs(out);
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

OperatorMetrics::JobRecord& OperatorMetrics::job_locked(const std::string& ns, const std::string& name) {
  auto [it, inserted] = jobs_.try_emplace({ns, name});
  if (inserted) {
    namespace_seen(ns);
    it->second.restarts.assign(restart_reasons().size(), 0);
  }
  return it->second;
}

void OperatorMetrics::restarts(const std::string& ns, const std::string& name, const std::string& reason,
                               int increase) {
  std::lock_guard<std::mutex> lock(mu_);
  JobRecord& r = job_locked(ns, name);
  const auto& reasons = restart_reasons();
  const auto known = std::find(reasons.begin(), reasons.end(), reason);
  double& count = known != reasons.end() ? r.restarts[known - reasons.begin()] : r.other_restarts[reason];
  if (increase > 0) count += increase;
}

void OperatorMetrics::job_state(const std::string& ns, const std::string& name, int nodes, int target_nodes,
                                int world_size, const std::string& phase) {
  std::lock_guard<std::mutex> lock(mu_);
  JobRecord& r = job_locked(ns, name);
  r.nodes = nodes;
  r.target_nodes = target_nodes;
  r.world_size = world_size;
  r.phase = phase;
}

void OperatorMetrics::scale_decision(const std::string& ns, const std::string& name, const std::string& direction) {
  std::lock_guard<std::mutex> lock(mu_);
  JobRecord& r = job_locked(ns, name);
  if (direction == "down") r.scale_down += 1;
  if (direction == "up") r.scale_up += 1;
}

void OperatorMetrics::job_recovery(const std::string& ns, const std::string& name, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  job_locked(ns, name).recovery = seconds;
}

void OperatorMetrics::job_waiting_for_admission(const std::string& ns, const std::string& name, bool waiting) {
  std::lock_guard<std::mutex> lock(mu_);
  job_locked(ns, name).waiting = waiting ? 1 : 0;
}

void OperatorMetrics::job_admitted(const std::string& ns, const std::string& name, double waited_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  job_locked(ns, name).admission_wait = waited_seconds;
  admission_wait_seconds_
      .Add({{"job_namespace", ns}},
           prometheus::Histogram::BucketBoundaries{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400})
      .Observe(waited_seconds);
}

void OperatorMetrics::job_progress(const std::string& ns, const std::string& name, double step,
                                   double steps_per_second, std::optional<double> eta_unix,
                                   std::optional<double> goodput) {
  std::lock_guard<std::mutex> lock(mu_);
  JobRecord& r = job_locked(ns, name);
  r.step = step;
  r.steps_per_second = steps_per_second;
  // An optional value is a series while known and none while not (a stale ETA would mislead a dashboard).
  r.eta = eta_unix;
  r.goodput = goodput;
}

void OperatorMetrics::forget_job(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase({ns, name});
}

namespace {

// A label value as the text format escapes it.
void write_label_value(std::ostream& out, const std::string& value) {
  for (char c : value) {
    switch (c) {
      case '\\': out << "\\\\"; break;
      case '"': out << "\\\""; break;
      case '\n': out << "\\n"; break;
      default: out << c; break;
    }
  }
}

}  // namespace

void OperatorMetrics::render_jobs(std::ostream& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (jobs_.empty()) return;
  // prometheus-cpp's serializer writes values with this precision in the classic locale; so do we.
  out.imbue(std::locale::classic());
  out.precision(std::numeric_limits<double>::max_digits10 - 1);
  // One family: its header, then a line per job that has the series (value() says so), the labels in name order.
  using Value = std::function<std::optional<double>(const JobRecord&)>;
  const auto family = [&](const char* name, const char* type, const char* help, const char* extra_label,
                          const std::vector<std::pair<std::string, Value>>& series) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
    // The labels in name order, as prometheus-cpp's map keeps them (direction before job_name).
    const bool extra_first = extra_label != nullptr && std::string_view(extra_label) < "job_name";
    for (const auto& [key, r] : jobs_) {
      for (const auto& [extra_value, value] : series) {
        const std::optional<double> v = value(r);
        if (!v) continue;
        const auto extra = [&](const char* separator) {
          out << separator << extra_label << "=\"";
          write_label_value(out, extra_value);
          out << "\"";
        };
        out << name << "{";
        if (extra_first) extra("");
        out << (extra_first ? "," : "") << "job_name=\"";
        write_label_value(out, key.second);
        out << "\",job_namespace=\"";
        write_label_value(out, key.first);
        out << "\"";
        if (extra_label != nullptr && !extra_first) extra(",");
        out << "} " << *v << "\n";
      }
    }
  };
  // A series' value read from the record: a number, or an optional one (none: no line).
  const auto field = [](auto JobRecord::*f) -> Value {
    return [f](const JobRecord& r) -> std::optional<double> { return r.*f; };
  };

  std::vector<std::pair<std::string, Value>> restarts;
  const auto& reasons = restart_reasons();
  for (size_t i = 0; i < reasons.size(); ++i) {
    restarts.emplace_back(reasons[i], [i](const JobRecord& r) { return std::optional<double>(r.restarts[i]); });
  }
  std::set<std::string> others;
  for (const auto& [key, r] : jobs_) {
    for (const auto& [reason, count] : r.other_restarts) others.insert(reason);
  }
  for (const auto& reason : others) {
    restarts.emplace_back(reason, [reason](const JobRecord& r) -> std::optional<double> {
      auto it = r.other_restarts.find(reason);
      return it != r.other_restarts.end() ? std::optional<double>(it->second) : std::nullopt;
    });
  }
  family("kubedist_restarts_total", "counter",
         "Group restarts and pod recreations by reason (worker_crash, pod_failure, node_lost, scale, hang)", "reason",
         restarts);
  family("kubedist_job_nodes", "gauge", "Pods running per TrainingJob", nullptr, {{"", field(&JobRecord::nodes)}});
  family("kubedist_job_target_nodes", "gauge",
         "Nodes the operator aims at per TrainingJob: spec.replicas, or the elastic target", nullptr,
         {{"", field(&JobRecord::target_nodes)}});
  family("kubedist_scale_decisions_total", "counter", "Elastic target changes by the operator, by direction (down, up)",
         "direction", {{"down", field(&JobRecord::scale_down)}, {"up", field(&JobRecord::scale_up)}});
  family("kubedist_job_world_size", "gauge", "Worker processes in the TrainingJob's current group", nullptr,
         {{"", field(&JobRecord::world_size)}});
  std::vector<std::pair<std::string, Value>> phases;
  for (const auto& phase : job_phases()) {
    phases.emplace_back(phase, [phase](const JobRecord& r) { return std::optional<double>(r.phase == phase ? 1 : 0); });
  }
  family("kubedist_job_phase", "gauge", "1 for the TrainingJob's current phase, 0 for the others", "phase", phases);
  const std::vector<std::tuple<const char*, const char*, std::optional<double> JobRecord::*>> optionals = {
      {"kubedist_job_last_recovery_seconds",
       "Seconds from the job's last Restarting condition turning True to it running again", &JobRecord::recovery},
      {"kubedist_job_waiting_for_admission", "1 while a TrainingJob queued for Kueue waits for admission, else 0",
       &JobRecord::waiting},
      {"kubedist_job_last_admission_wait_seconds",
       "Seconds the TrainingJob last waited for Kueue's admission (since queued or requeued)",
       &JobRecord::admission_wait},
      {"kubedist_job_step", "The TrainingJob's training step, as its workers report it (status.progress.step)",
       &JobRecord::step},
      {"kubedist_job_steps_per_second", "The TrainingJob's training steps per second over about the last minute",
       &JobRecord::steps_per_second},
      {"kubedist_job_estimated_completion_timestamp_seconds",
       "When the TrainingJob should reach its total steps at its current rate (Unix time; its ETA)", &JobRecord::eta},
      {"kubedist_job_goodput", "Share of the TrainingJob's wall time since its first pod started spent making steps",
       &JobRecord::goodput},
  };
  for (const auto& [name, help, member] : optionals) {
    const bool any = std::any_of(jobs_.begin(), jobs_.end(), [m = member](const auto& j) { return (j.second.*m).has_value(); });
    if (any) family(name, "gauge", help, nullptr, {{"", field(member)}});
  }
}

}  // namespace kubedist::metrics
