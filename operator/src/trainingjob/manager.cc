#include "trainingjob/manager.h"

#include <sys/resource.h>
#include <unistd.h>

#include <thread>

#include "common/log.h"
#include "controller/controller.h"
#include "controller/health_server.h"
#include "controller/leader_election.h"
#include "controller/work_queue.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "metrics/operator_metrics.h"
#include "trainingjob/job_metrics.h"
#include "trainingjob/kueue.h"
#include "trainingjob/launcher_poller.h"
#include "trainingjob/parse.h"
#include "trainingjob/reconciler.h"

namespace kubedist::trainingjob {
namespace {

std::string scoped(const std::string& prefix, const std::string& ns, const std::string& plural) {
  return ns.empty() ? prefix + "/" + plural : prefix + "/namespaces/" + ns + "/" + plural;
}

std::string identity() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + "_" + std::to_string(::getpid());
}

// Why the operator cannot gang-schedule here ("" when it can): the API server must serve PodGroups
// (scheduling.k8s.io/v1alpha2 and the GenericWorkload gate) and let the operator list them where it watches; an
// informer that may not list would never sync and keep the operator from ever starting.
std::string gang_unavailable(kube::Client& api, const std::string& podgroups_path) {
  auto r = api.get(gang_api_path());
  bool served = false;
  if (r) {
    for (const auto& res : r->value("resources", nlohmann::json::array())) {
      served = served || (res.is_object() && res.value("name", "") == "podgroups");
    }
  }
  if (!served) return "the cluster does not serve " + gang_api_path() + " podgroups";
  auto list = api.get(podgroups_path + "?limit=1");
  if (!list) return "the operator may not list podgroups (HTTP " + std::to_string(list.error().http_status) + ")";
  return "";
}

// Why the operator cannot see Kueue ("" when it can): the API server must serve Kueue's Workloads, ResourceFlavors
// and WorkloadPriorityClasses (kueue.x-k8s.io/v1beta2), and the operator may list them. As for PodGroups, an
// informer that may not list would never sync.
std::string kueue_unavailable(kube::Client& api, const std::vector<std::string>& paths) {
  auto r = api.get(kueue_api_path());
  if (!r) return "the cluster does not serve " + kueue_api_path() + " (Kueue is not installed)";
  for (const auto& path : paths) {
    auto list = api.get(path + "?limit=1");
    if (!list) return "the operator may not list " + path + " (HTTP " + std::to_string(list.error().http_status) + ")";
  }
  return "";
}

long peak_rss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

}  // namespace

Result<void> run_manager(const ManagerOptions& options, const std::atomic<bool>& stop) {
  auto config = kube::load_default_config(options.kubeconfig, options.context);
  if (!config) return config.error();
  kube::Client::set_io_threads(4);
  metrics::OperatorMetrics metrics;  // before the client: the client reports to it until the client is gone
  auto client = kube::Client::create(*config);
  if (!client) return client.error();
  kube::Client& api = **client;
  api.set_request_observer([&metrics](const std::string& verb, int code) { metrics.api_request(verb, code); });
  if (!options.ns.empty()) metrics.namespace_seen(options.ns);

  controller::WorkQueue queue;
  const std::string tj_prefix = std::string("/apis/") + kGroup + "/" + kVersion;
  JobInformer jobs(
      api, {scoped(tj_prefix, options.ns, kPlural), ""},
      [](const nlohmann::json& obj) {
        auto job = parse_training_job(obj);
        return job ? *job : TrainingJob{};
      },
      nullptr, [&](const std::string& key, const std::string&) { queue.add(key); });
  // Pods and Services are watched by label, so the cache holds only what belongs to some TrainingJob.
  PodInformer pods(
      api, {scoped("/api/v1", options.ns, "pods"), kJobNameLabel}, parse_pod_facts, job_key_of,
      [&](const std::string&, const std::string& job_key) { queue.add(job_key); });
  ServiceInformer services(
      api, {scoped("/api/v1", options.ns, "services"), kJobNameLabel}, parse_service_facts,
      [](const ServiceFacts& s) { return s.ns + "/" + s.name; },
      [&](const std::string& key, const std::string&) { queue.add(key); });

  // The jobs' rendezvous Secrets, by label like pods: the reconciler creates them, the poller signs with them.
  SecretInformer secrets(
      api, {scoped("/api/v1", options.ns, "secrets"), kJobNameLabel}, parse_secret_facts,
      [](const SecretFacts& s) { return s.ns + "/" + s.job_name; },
      [&](const std::string&, const std::string& job_key) { queue.add(job_key); });

  // Nodes (cluster-scoped, read-only) tell lost pods apart; a change may concern any job, so all are requeued.
  const bool watch_nodes = options.watch_nodes.value_or(options.ns.empty());
  std::unique_ptr<NodeInformer> nodes;
  if (watch_nodes) {
    nodes = std::make_unique<NodeInformer>(
        api, kube::InformerOptions{"/api/v1/nodes", ""}, parse_node_facts, [](const NodeFacts&) { return std::string(); },
        [&](const std::string&, const std::string&) {
          for (const auto& key : jobs.keys()) queue.add(key);
        });
  }
  // PodGroups (gang scheduling) only where the cluster serves them: an informer on an API that is not there
  // would never sync. Without them a job asking for a gang fails with a condition saying what is missing.
  std::unique_ptr<PodGroupInformer> pod_groups;
  if (options.gang_scheduling != GangMode::kOff) {
    const std::string path = scoped(gang_api_path(), options.ns, "podgroups");
    if (const std::string why = gang_unavailable(api, path); why.empty()) {
      pod_groups = std::make_unique<PodGroupInformer>(
          api, kube::InformerOptions{path, kJobNameLabel}, parse_pod_group_facts,
          [](const PodGroupFacts& g) { return g.ns + "/" + g.name; },
          [&](const std::string& key, const std::string&) { queue.add(key); });
    } else {
      log_warn("manager", why + ": gang scheduling is off (jobs asking for it fail)");
    }
  }
  // Kueue's objects, where Kueue is installed: queued jobs (label kueue.x-k8s.io/queue-name) wait for its admission.
  // A flavor or priority class may concern any queued job: all jobs are requeued (the others' pass is a no-op).
  std::unique_ptr<KueueWorkloadInformer> kueue_workloads;
  std::unique_ptr<FlavorInformer> flavors;
  std::unique_ptr<PriorityClassInformer> priority_classes;
  {
    const std::string workloads_path = scoped(kueue_api_path(), options.ns, "workloads");
    const std::string flavors_path = kueue_api_path() + "/resourceflavors";
    const std::string priorities_path = kueue_api_path() + "/workloadpriorityclasses";
    if (const std::string why = kueue_unavailable(api, {workloads_path, flavors_path, priorities_path}); why.empty()) {
      auto requeue_all = [&](const std::string&, const std::string&) {
        for (const auto& key : jobs.keys()) queue.add(key);
      };
      kueue_workloads = std::make_unique<KueueWorkloadInformer>(
          api, kube::InformerOptions{workloads_path, kJobNameLabel}, parse_kueue_workload_facts,
          [](const KueueWorkloadFacts& w) { return w.ns + "/" + w.name; },
          [&](const std::string& key, const std::string&) { queue.add(key); });
      flavors = std::make_unique<FlavorInformer>(api, kube::InformerOptions{flavors_path, ""}, parse_flavor_facts,
                                                 [](const FlavorFacts&) { return std::string(); }, requeue_all);
      priority_classes = std::make_unique<PriorityClassInformer>(
          api, kube::InformerOptions{priorities_path, ""}, parse_priority_class_facts,
          [](const PriorityClassFacts&) { return std::string(); }, requeue_all);
    } else {
      log_info("manager", why + ": jobs queued for Kueue wait (condition Admitted, reason KueueUnavailable)");
    }
  }
  PodOptions pod_options = options.pods;
  pod_options.gang_by_default = pod_groups && options.gang_scheduling == GangMode::kAll;
  pod_options.rdzv_secret = true;  // every new pod's launcher signs its rendezvous with Secret J-rdzv
  LauncherPoller poller(
      std::chrono::milliseconds(options.launcher_poll_interval_ms),
      [&] {
        std::vector<LauncherTarget> targets;
        for (const auto& key : jobs.keys()) {
          auto job = jobs.get(key);
          if (!job) continue;
          auto t = launcher_target(*job, pods.by_index(key));
          if (!t) continue;
          if (t->needs_secret) {
            // Node 0 answers signed requests only: without the Secret in the cache (yet), there is nothing to ask.
            auto secret = secrets.get(job->ns + "/" + rdzv_secret_name(job->name));
            bool ok = false;
            if (secret && secret->owner_uid == job->uid) t->secret = kube::base64_decode(secret->secret_b64, &ok);
            if (!ok || t->secret.empty()) continue;
          }
          targets.push_back(*t);
        }
        return targets;
      },
      [&](const std::string& key) { queue.add(key); });

  std::atomic<bool> ready{false};
  // A standby replica is healthy and ready: it is doing its job, which is to wait.
  std::atomic<bool> standby{false};
  controller::HealthServer probes;
  probes.handle("/healthz", [] { return std::pair<int, std::string>{200, "ok\n"}; });
  probes.handle("/readyz", [&] {
    if (standby) return std::pair<int, std::string>{200, "standby: waiting for the leader lease\n"};
    return ready ? std::pair<int, std::string>{200, "ok\n"} : std::pair<int, std::string>{503, "caches syncing\n"};
  });
  probes.handle("/metrics", [&] {
    metrics.workqueue_depth(queue.depth());
    return std::pair<int, std::string>{200, metrics.render()};
  });
  if (auto r = probes.start(options.probe_address); !r) return r.error();
  log_info("manager", "probes listening on port " + std::to_string(probes.port()) + " (/healthz, /readyz, /metrics)");

  std::unique_ptr<controller::LeaderElector> elector;
  if (options.leader_elect) {
    const std::string ns =
        options.leader_election_namespace.empty() ? api.default_namespace() : options.leader_election_namespace;
    elector = std::make_unique<controller::LeaderElector>(
        api, controller::LeaderElectionOptions{ns, options.leader_election_id, identity(),
                                               options.leader_election_lease_seconds});
    standby = true;
    const bool leading = elector->acquire(stop);
    standby = false;
    if (!leading) {
      probes.stop();
      return {};
    }
  }
  std::atomic<bool> lost{false};
  std::atomic<bool> stop_holding{false};
  std::thread holder;
  if (elector) {
    holder = std::thread([&] {
      if (!elector->hold(stop_holding)) lost = true;
    });
  }

  kube::EventRecorder recorder(api, "kubedist-operator");
  JobMetrics job_metrics(metrics);
  ReconcilerExtras extras;
  extras.nodes = nodes.get();
  extras.pod_groups = pod_groups.get();
  extras.secrets = &secrets;
  extras.kueue_workloads = kueue_workloads.get();
  extras.flavors = flavors.get();
  extras.priority_classes = priority_classes.get();
  if (options.launcher_poll_interval_ms > 0) {
    extras.launcher = [&](const std::string& key) { return poller.latest(key); };
  }
  extras.unschedulable_grace_s = options.unschedulable_grace_s;
  extras.node_lost_grace_s = options.node_lost_grace_s;
  Reconciler reconciler(api, jobs, pods, services, recorder, pod_options, std::move(extras), &job_metrics);
  auto reconcile = [&](const std::string& key) {
    const auto start = std::chrono::steady_clock::now();
    ReconcileResult result;
    try {
      result = reconciler.reconcile(key);
    } catch (const std::exception& e) {  // the Controller would turn it into this error as well
      result = ReconcileResult::failed(std::string("unexpected exception: ") + e.what());
    }
    metrics.reconcile_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (result.kind == ReconcileResult::Kind::kError) metrics.workqueue_retry();  // the Controller requeues it
    return result;
  };
  controller::Controller workers(queue, reconcile, options.workers);

  jobs.start();
  pods.start();
  services.start();
  secrets.start();
  if (nodes) nodes->start();
  if (pod_groups) pod_groups->start();
  if (kueue_workloads) {
    kueue_workloads->start();
    flavors->start();
    priority_classes->start();
  }
  const auto kueue_synced = [&] {
    return !kueue_workloads || (kueue_workloads->synced() && flavors->synced() && priority_classes->synced());
  };
  while (!stop && !lost && !(jobs.synced() && pods.synced() && services.synced() && secrets.synced() &&
                             (!nodes || nodes->synced()) && (!pod_groups || pod_groups->synced()) &&
                             kueue_synced())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!stop && !lost) {
    log_info("manager", "caches synced: " + std::to_string(jobs.keys().size()) + " TrainingJobs; starting " +
                            std::to_string(options.workers) + " workers");
    workers.start();
    poller.start();
    ready = true;
  }
  auto next_resync = std::chrono::steady_clock::now() + std::chrono::seconds(options.resync_seconds);
  while (!stop && !lost) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (std::chrono::steady_clock::now() >= next_resync) {
      for (const auto& key : jobs.keys()) queue.add(key);
      next_resync = std::chrono::steady_clock::now() + std::chrono::seconds(options.resync_seconds);
    }
  }

  log_info("manager", "shutting down: finishing in-flight reconciles");
  ready = false;
  poller.stop();
  workers.stop();
  api.cancel_watches();
  jobs.stop();
  pods.stop();
  services.stop();
  secrets.stop();
  if (nodes) nodes->stop();
  if (pod_groups) pod_groups->stop();
  if (kueue_workloads) {
    kueue_workloads->stop();
    flavors->stop();
    priority_classes->stop();
  }
  probes.stop();
  if (elector) {
    stop_holding = true;
    holder.join();
    if (!lost) elector->release();
  }
  const auto [median, p99] = workers.latency_ms();
  const auto& counts = api.counts();
  log_info("manager", "summary reconciles=" + std::to_string(workers.reconciles()) +
                          " errors=" + std::to_string(workers.errors()) + " reconcile_median_ms=" +
                          std::to_string(median) + " reconcile_p99_ms=" + std::to_string(p99) +
                          " api_reads=" + std::to_string(counts.reads.load()) +
                          " api_writes=" + std::to_string(counts.writes.load()) +
                          " api_watches=" + std::to_string(counts.watches.load()) +
                          " peak_rss_kib=" + std::to_string(peak_rss_kib()));
  if (lost) return Error{Error::Kind::kOther, "lost the leader lease; exiting so that a single leader acts", 0};
  return {};
}

}  // namespace kubedist::trainingjob
