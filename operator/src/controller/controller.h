// N worker threads that take keys from a WorkQueue and reconcile them, with retries and timing: the one place
// that times a reconcile and turns an exception into an error.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "controller/reconcile_result.h"
#include "controller/work_queue.h"

namespace kubedist::controller {

class Controller {
 public:
  using ReconcileFn = std::function<ReconcileResult(const std::string& key)>;
  // Told of each reconcile's result (an exception becomes an error) and how long it took, e.g. for metrics.
  using OnReconciled = std::function<void(const ReconcileResult& result, std::chrono::duration<double> took)>;

  Controller(WorkQueue& queue, ReconcileFn reconcile, int workers, OnReconciled on_reconciled = nullptr)
      : queue_(queue), reconcile_(std::move(reconcile)), on_reconciled_(std::move(on_reconciled)), workers_(workers) {}
  ~Controller() { stop(); }

  void start();
  // Shuts the queue down and waits for in-flight reconciles to finish.
  void stop();

  uint64_t reconciles() const { return reconciles_; }
  uint64_t errors() const { return errors_; }
  // Median and 99th percentile reconcile duration in milliseconds over the run.
  std::pair<double, double> latency_ms() const;
  // The reconcile in flight the longest at now (its key and how long it has run), if any: a worker stuck in one (a
  // deadlock, a request that never ends) shows here.
  std::optional<std::pair<std::string, std::chrono::milliseconds>> longest_in_flight(
      std::chrono::steady_clock::time_point now) const;

 private:
  void work();

  WorkQueue& queue_;
  const ReconcileFn reconcile_;
  const OnReconciled on_reconciled_;
  const int workers_;
  std::vector<std::jthread> threads_;
  std::atomic<uint64_t> reconciles_{0};
  std::atomic<uint64_t> errors_{0};
  mutable std::mutex mu_;
  std::vector<float> durations_ms_;
  std::map<std::thread::id, std::pair<std::string, std::chrono::steady_clock::time_point>> in_flight_;
};

}  // namespace kubedist::controller
