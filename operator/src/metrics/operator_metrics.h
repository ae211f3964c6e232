// OperatorMetrics: the operator's Prometheus metrics (docs/metrics.md) in one registry, and their text exposition.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace kubedist::metrics {

// The phases kubedist_job_phase reports, one series each (1 for the current phase, 0 for the others).
const std::vector<std::string>& job_phases();
// The reasons of kubedist_restarts_total, pre-initialised to 0 for every job.
const std::vector<std::string>& restart_reasons();

// Thread-safe: workers, the client's I/O threads and the /metrics handler use it at once.
class OperatorMetrics {
 public:
  OperatorMetrics();
  OperatorMetrics(const OperatorMetrics&) = delete;
  OperatorMetrics& operator=(const OperatorMetrics&) = delete;

  // The text exposition format (version 0.0.4) of every metric.
  std::string render() const;

  void api_request(const std::string& verb, int http_status);
  void reconcile_duration(double seconds);
  void workqueue_depth(size_t depth);
  void workqueue_retry();

  // Per namespace: created/succeeded/failed exist (at 0) from the first job seen there.
  void namespace_seen(const std::string& ns);
  void job_created(const std::string& ns);
  void job_succeeded(const std::string& ns);
  void job_failed(const std::string& ns);

  // Per job: restarts by reason (all reasons at 0 from the first sight of the job), gauges.
  void restarts(const std::string& ns, const std::string& name, const std::string& reason, int increase);
  // target_nodes: the nodes the operator aims at (spec.replicas, or the elastic target while pods cannot be placed).
  void job_state(const std::string& ns, const std::string& name, int nodes, int target_nodes, int world_size,
                 const std::string& phase);
  // The operator changed an elastic job's target size; direction "down" or "up".
  void scale_decision(const std::string& ns, const std::string& name, const std::string& direction);
  void job_recovery(const std::string& ns, const std::string& name, double seconds);
  // A job queued for Kueue: whether it waits for admission now (a series only for jobs ever queued).
  void job_waiting_for_admission(const std::string& ns, const std::string& name, bool waiting);
  // Kueue admitted the job after it waited this long (since it was queued, or requeued after an eviction).
  void job_admitted(const std::string& ns, const std::string& name, double waited_seconds);
  // How far the job is (status.progress): its step, steps per second, the estimated completion as a Unix time
  // (nullopt: unknown) and its goodput (nullopt: unknown); series only for jobs that report progress.
  void job_progress(const std::string& ns, const std::string& name, double step, double steps_per_second,
                    std::optional<double> eta_unix, std::optional<double> goodput);
  // Removes every series of the job (it was deleted).
  void forget_job(const std::string& ns, const std::string& name);

 private:
  using JobKey = std::pair<std::string, std::string>;
  // What the per-job series hold, kept as plain numbers and written out at each render: a series of
  // prometheus-cpp's costs about 550 bytes (its labels' map, its index entries), and a job has 16 of them, which made
  // the metrics the largest part of the operator's memory at 2,500 jobs (21 MiB; this is about 420 bytes a job).
  struct JobRecord {
    std::vector<double> restarts;                // by restart_reasons(), every one at 0 from the first sight
    std::map<std::string, double> other_restarts;  // a reason newer than that list, under its own name
    double nodes = 0;
    double target_nodes = 0;
    double world_size = 0;
    double scale_down = 0;
    double scale_up = 0;
    std::string phase;                           // "" until the first job_state: every phase's series at 0
    std::optional<double> recovery;              // absent until the job first recovers
    std::optional<double> waiting;               // absent unless the job is queued for Kueue
    std::optional<double> admission_wait;        // absent until Kueue first admits the job
    std::optional<double> step;                  // these two absent until the job reports progress
    std::optional<double> steps_per_second;
    std::optional<double> eta;                   // absent while unknown
    std::optional<double> goodput;               // absent while unknown
  };
  JobRecord& job_locked(const std::string& ns, const std::string& name);
  // The per-job families, in the text exposition format, as prometheus-cpp's serializer writes them.
  void render_jobs(std::ostream& out) const;

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& created_;
  prometheus::Family<prometheus::Counter>& succeeded_;
  prometheus::Family<prometheus::Counter>& failed_;
  prometheus::Family<prometheus::Histogram>& admission_wait_seconds_;  // by job_namespace
  prometheus::Histogram& reconcile_duration_;
  prometheus::Gauge& workqueue_depth_;
  prometheus::Counter& workqueue_retries_;
  prometheus::Family<prometheus::Counter>& api_requests_;

  mutable std::mutex mu_;
  std::map<JobKey, JobRecord> jobs_;
};

}  // namespace kubedist::metrics
