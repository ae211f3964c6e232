#include "controller/manager.h"

#include <sys/resource.h>

#include <atomic>
#include <thread>

#include "common/log.h"
#include "controller/health.h"
#include "controller/probe_server.h"

namespace kubedist::controller {
namespace {

long peak_rss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

}  // namespace

void Manager::requeue_all() {
  if (!primary_keys_) return;
  for (const auto& key : primary_keys_()) queue_.add(key);
}

bool Manager::all_synced() const {
  for (const auto& informer : informers_) {
    if (!informer->synced()) return false;
  }
  return true;
}

Result<void> Manager::run(std::stop_token outer_stop, Controller::ReconcileFn reconcile) {
  // Our own stop: the caller's, or a lost lease.
  std::stop_source stopping;
  std::stop_callback forward(outer_stop, [&stopping] { stopping.request_stop(); });
  const std::stop_token stop = stopping.get_token();
  std::atomic<bool> lost{false};

  std::atomic<bool> ready{false};
  // A standby replica is healthy and ready: it is doing its job, which is to wait.
  std::atomic<bool> standby{false};
  ProbeServer probes;
  // Healthy unless a watch loop or a worker is stuck (health.h): then the liveness probe restarts the process.
  std::atomic<const Controller*> live_workers{nullptr};
  probes.handle("/healthz", [&] {
    std::vector<const kube::InformerBase*> informers;
    for (const auto& informer : informers_) informers.push_back(informer.get());
    const std::string why =
        stuck_reason(informers, live_workers.load(), std::chrono::steady_clock::now(), options_.reconcile_stall_limit);
    return why.empty() ? std::pair<int, std::string>{200, "ok\n"} : std::pair<int, std::string>{500, why + "\n"};
  });
  probes.handle("/readyz", [&] {
    if (standby) return std::pair<int, std::string>{200, "standby: waiting for the leader lease\n"};
    return ready ? std::pair<int, std::string>{200, "ok\n"} : std::pair<int, std::string>{503, "caches syncing\n"};
  });
  if (metrics_) {
    probes.handle("/metrics", [this] { return std::pair<int, std::string>{200, metrics_()}; });
  }
  if (auto r = probes.start(options_.probe_address); !r) return r.error();
  log_info("manager", "probes listening on port " + std::to_string(probes.port()) + " (/healthz, /readyz, /metrics)");

  std::unique_ptr<LeaderElector> elector;
  std::jthread holder;
  if (options_.leader) {
    elector = std::make_unique<LeaderElector>(options_.lease_client != nullptr ? *options_.lease_client : client_,
                                              *options_.leader);
    // Every write but the lease's own waits for the lease and stops the moment it may be gone, also in a reconcile
    // already running when hold() gives up: a new leader may be writing by then.
    const std::string lease = "/apis/coordination.k8s.io/v1/namespaces/" + options_.leader->ns + "/leases";
    client_.set_write_gate([&elector, lease](const std::string& path) -> std::optional<std::string> {
      if (path.rfind(lease, 0) == 0 || elector->leading()) return std::nullopt;
      return "this replica does not hold the leader lease";
    });
    standby = true;
    const bool leading = elector->acquire(stop);
    standby = false;
    if (!leading) {
      client_.set_write_gate(nullptr);
      return {};
    }
    holder = std::jthread([&](std::stop_token hold_stop) {
      if (elector->hold(hold_stop)) return;
      lost = true;
      stopping.request_stop();
    });
  }

  Controller workers(queue_, std::move(reconcile), options_.workers, options_.on_reconciled);
  live_workers = &workers;
  auto notify = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    changed_.notify_all();
  };
  for (auto& informer : informers_) informer->start(notify);
  {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, stop, [this] { return all_synced(); });
  }
  if (!stop.stop_requested()) {
    const size_t primaries = primary_keys_ ? primary_keys_().size() : 0;
    log_info("manager", "caches synced: " + std::to_string(primaries) + " " + options_.kind_plural + "; starting " +
                            std::to_string(options_.workers) + " workers");
    workers.start();
    for (auto& r : runnables_) r.start();
    ready = true;
    // Until stopped: re-queue everything each resync period, in case an event was missed.
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop.stop_requested()) {
      changed_.wait_for(lock, stop, options_.resync, [] { return false; });  // only time or a stop ends it
      if (!stop.stop_requested()) requeue_all();
    }
  }

  log_info("manager", "shutting down: finishing in-flight reconciles");
  ready = false;
  live_workers = nullptr;
  for (auto it = runnables_.rbegin(); it != runnables_.rend(); ++it) it->stop();
  workers.stop();
  client_.cancel_watches();
  for (auto& informer : informers_) informer->stop();
  probes.stop();
  if (holder.joinable()) {
    holder.request_stop();
    holder.join();
    if (!lost) elector->release();
  }
  if (elector) client_.set_write_gate(nullptr);  // no request is in flight any more; the elector goes with run()
  log_summary(workers);
  if (lost) return Error{Error::Kind::kOther, "lost the leader lease; exiting so that a single leader acts", 0};
  return {};
}

void Manager::log_summary(const Controller& workers) const {
  const auto [median, p99] = workers.latency_ms();
  const auto& counts = client_.counts();
  log_info("manager", "summary reconciles=" + std::to_string(workers.reconciles()) +
                          " errors=" + std::to_string(workers.errors()) + " reconcile_median_ms=" +
                          std::to_string(median) + " reconcile_p99_ms=" + std::to_string(p99) +
                          " api_reads=" + std::to_string(counts.reads.load()) +
                          " api_writes=" + std::to_string(counts.writes.load()) +
                          " api_watches=" + std::to_string(counts.watches.load()) +
                          " peak_rss_kib=" + std::to_string(peak_rss_kib()));
}

}  // namespace kubedist::controller
