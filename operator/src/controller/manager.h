// Manager: runs one controller: probes, the leader lease, informers until their caches sync, then the workers and
// other runnables; on stop (or a lost lease) it takes them down in reverse order. What it watches and how a key is
// reconciled come from the caller (trainingjob/act/setup.cc), in the shape of controller-runtime's builder.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/result.h"
#include "controller/controller.h"
#include "controller/leader_election.h"
#include "controller/work_queue.h"
#include "kube/client.h"
#include "kube/informer.h"

namespace kubedist::controller {

struct ManagerOptions {
  std::string probe_address = ":8081";
  int workers = 4;
  std::chrono::seconds resync{300};             // re-queue every primary object this often, in case an event was missed
  std::optional<LeaderElectionOptions> leader;  // unset: no leader election
  std::string kind_plural = "objects";          // names the primary kind in logs ("TrainingJobs")
  // /healthz fails once a reconcile has run this long (a stuck worker), as it does for a stuck watch loop.
  std::chrono::milliseconds reconcile_stall_limit{std::chrono::minutes(10)};
  // The lease's own client (per-call deadline write_deadline(), no retries: leader_election.h); null: the
  // manager's client.
  kube::Client* lease_client = nullptr;
  Controller::OnReconciled on_reconciled;  // told of each reconcile's result and duration (metrics); may be empty
};

// Something started once the caches are synced (and the lease held) and stopped before the workers.
struct Runnable {
  std::function<void()> start;
  std::function<void()> stop;
};

class Manager {
 public:
  using OnChange = std::function<void(const std::string& key, const std::string& index)>;

  Manager(kube::Client& client, ManagerOptions options) : client_(client), options_(std::move(options)) {}

  // The primary kind: each change queues the object's own key, and every key is re-queued each resync.
  template <typename T>
  kube::Informer<T>& for_kind(kube::InformerOptions options, typename kube::Informer<T>::Project project) {
    auto& informer = watches<T>(std::move(options), std::move(project), nullptr,
                                [this](const std::string& key, const std::string&) { queue_.add(key); });
    primary_keys_ = [&informer] { return informer.keys(); };
    return informer;
  }
  // A kind whose objects belong to a primary object: each change queues the owner's key (the index value).
  template <typename T>
  kube::Informer<T>& owns(kube::InformerOptions options, typename kube::Informer<T>::Project project,
                          typename kube::Informer<T>::IndexOf owner_key) {
    return watches<T>(std::move(options), std::move(project), std::move(owner_key),
                      [this](const std::string&, const std::string& owner) { queue_.add(owner); });
  }
  // Any other kind, with its own reaction to changes (e.g. enqueue_all()).
  template <typename T>
  kube::Informer<T>& watches(kube::InformerOptions options, typename kube::Informer<T>::Project project,
                             typename kube::Informer<T>::IndexOf index_of, OnChange on_change) {
    auto informer = std::make_unique<kube::Informer<T>>(client_, std::move(options), std::move(project),
                                                        std::move(index_of), std::move(on_change));
    auto& ref = *informer;
    informers_.push_back(std::move(informer));
    return ref;
  }
  // A reaction that re-queues every primary object (a change that may concern any of them, e.g. a node's).
  OnChange enqueue_all() {
    return [this](const std::string&, const std::string&) { requeue_all(); };
  }

  // Started after the caches sync, stopped before the workers (e.g. a poller that queues keys).
  void add(Runnable runnable) { runnables_.push_back(std::move(runnable)); }
  // The /metrics body, rendered on each scrape.
  void serve_metrics(std::function<std::string()> render) { metrics_ = std::move(render); }

  WorkQueue& queue() { return queue_; }

  // Runs until stop is requested. Returns an error for a setup failure (e.g. the probe port in use) or a lost
  // lease (the process must exit so that it cannot act beside the new leader).
  Result<void> run(std::stop_token stop, Controller::ReconcileFn reconcile);

 private:
  void requeue_all();
  bool all_synced() const;
  void log_summary(const Controller& workers) const;

  kube::Client& client_;
  const ManagerOptions options_;
  WorkQueue queue_;
  std::vector<std::unique_ptr<kube::InformerBase>> informers_;
  std::function<std::vector<std::string>()> primary_keys_;
  std::vector<Runnable> runnables_;
  std::function<std::string()> metrics_;
  std::mutex mu_;
  std::condition_variable_any changed_;  // an informer synced, or the lease was lost
};

}  // namespace kubedist::controller
