#include "trainingjob/act/setup.h"

#include <unistd.h>

#include <algorithm>

#include "common/log.h"
#include "controller/manager.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/trusted_ca.h"
#include "metrics/operator_metrics.h"
#include "rendezvous/rdzv_auth.h"
#include "trainingjob/act/integrations.h"
#include "trainingjob/act/job_metrics.h"
#include "trainingjob/act/launcher_poller.h"
#include "trainingjob/act/pod_decoder.h"
#include "trainingjob/act/reconciler.h"
#include "trainingjob/api/parse.h"
#include "trainingjob/gang/gang.h"
#include "trainingjob/kueue/kueue.h"

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

}  // namespace

Result<void> run_manager(const ManagerOptions& options, std::stop_token stop) {
  auto config = kube::load_default_config(options.kubeconfig, options.context);
  if (!config) return config.error();
  // The cluster's CA alone is trusted (kube/trusted_ca.h): the system's roots need not be read for each connection.
  if (!config->ca_pem.empty()) kube::leave_system_roots_unloaded();
  kube::Client::set_io_threads(4);
  metrics::OperatorMetrics metrics;  // before the client: the client reports to it until the client is gone
  // With leader election, a write must land (or be given up) within the last third of the lease, after the fence
  // closes (controller/leader_election.h); the lease has a client of its own with a shorter deadline, no retries.
  kube::RetryPolicy retry;
  if (options.leader_elect) retry.write_timeout = controller::write_deadline(options.leader_election_lease_seconds);
  auto client = kube::Client::create(*config, retry);
  if (!client) return client.error();
  kube::Client& api = **client;
  std::unique_ptr<kube::Client> lease_client;
  if (options.leader_elect) {
    // A renewal's GET and PATCH fail within 2/5 of the lease, so that hold() gives up before the renew deadline.
    kube::RetryPolicy lease_retry;
    lease_retry.attempts = 1;
    lease_retry.timeout = lease_retry.write_timeout =
        std::chrono::seconds(std::max(1, options.leader_election_lease_seconds / 5));
    auto c = kube::Client::create(*config, lease_retry);
    if (!c) return c.error();
    lease_client = std::move(*c);
  }
  api.set_request_observer([&metrics](const std::string& verb, int code) { metrics.api_request(verb, code); });
  if (!options.ns.empty()) metrics.namespace_seen(options.ns);

  controller::ManagerOptions manager_options{options.probe_address, options.workers,
                                             std::chrono::seconds(options.resync_seconds), std::nullopt, "TrainingJobs"};
  if (options.leader_elect) {
    const std::string ns =
        options.leader_election_namespace.empty() ? api.default_namespace() : options.leader_election_namespace;
    manager_options.leader = controller::LeaderElectionOptions{ns, options.leader_election_id, identity(),
                                                               options.leader_election_lease_seconds};
    manager_options.lease_client = lease_client.get();
  }
  controller::Manager mgr(api, std::move(manager_options));

  // The integrations, one line each: each watches what it needs and takes part in decide() (decide/hook.h).
  std::vector<std::unique_ptr<Integration>> registered;
  registered.push_back(std::make_unique<GangIntegration>(options.gang_scheduling));
  registered.push_back(std::make_unique<KueueIntegration>());
  WatchedIntegrations integrations(std::move(registered));

  // What the operator watches. Pods, Services and Secrets by label, so the caches hold only what belongs to some
  // TrainingJob; each change queues the owning job.
  const std::string tj_prefix = std::string("/apis/") + kGroup + "/" + kVersion;
  auto& jobs = mgr.for_kind<TrainingJob>(
      {scoped(tj_prefix, options.ns, kPlural), ""}, [kept = integrations.condition_types()](const nlohmann::json& obj) {
        auto job = parse_training_job(obj, kept);
        return job ? *job : TrainingJob{};
      });
  auto& pods = mgr.owns<PodFacts>({scoped("/api/v1", options.ns, "pods"), kJobNameLabel}, parse_pod_facts, job_key_of);
  pods.set_decoder(decode_pod_event);  // the most frequent events: read without the JSON tree (pod_decoder.h)
  auto& services = mgr.owns<ServiceFacts>({scoped("/api/v1", options.ns, "services"), kJobNameLabel},
                                          parse_service_facts, [](const ServiceFacts& s) { return s.ns + "/" + s.name; });
  // Each namespace's rendezvous Secret: the reconciler creates it, the poller derives each job's secret from it. A
  // change may concern any job of the namespace: all are requeued (it is made once, so that is rare). Watched by
  // name, so that the operator's RBAC grants it no other Secret (resourceNames) and no labelled Secret of a tenant
  // fills its cache.
  auto& namespace_secrets = mgr.watches<SecretFacts>(
      {scoped("/api/v1", options.ns, "secrets"), std::string(kNamespaceRdzvLabel) + "=namespace",
       std::string("metadata.name=") + kNamespaceRdzvSecret},
      parse_secret_facts, [](const SecretFacts&) { return std::string(); }, mgr.enqueue_all());
  // Nodes (cluster-scoped, read-only) tell lost pods apart; a change may concern any job, so all are requeued.
  const NodeInformer* nodes = nullptr;
  if (options.watch_nodes.value_or(options.ns.empty())) {
    nodes = &mgr.watches<NodeFacts>({"/api/v1/nodes", ""}, parse_node_facts,
                                   [](const NodeFacts&) { return std::string(); }, mgr.enqueue_all());
  }
  // The integrations' kinds (PodGroups, Kueue's objects), only where the cluster serves them.
  integrations.watch(mgr, api, options.ns);

  RendezvousKeys rendezvous_keys;  // the namespace keys seen, for the reconciler and the poller
  PodOptions pod_options = options.pods;
  pod_options.rdzv_secret = true;  // every new pod's launcher signs its rendezvous with the job's secret
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
            // The job's secret is derived from the namespace's. A job whose node 0 signs with its own J-rdzv (an
            // earlier operator's) is not asked: the operator may not read that Secret.
            bool ok = false;
            if (t->job_secret) continue;
            // Node 0 derived it from the key it records (a key deleted or replaced since is kept in memory).
            std::string fingerprint;
            for (const auto& pod : pods.by_index(key)) {
              if (pod.uid == t->pod_uid) fingerprint = pod.rdzv_key;
            }
            if (auto kept = fingerprint.empty() ? std::nullopt : rendezvous_keys.find(job->ns, fingerprint)) {
              ok = true;
              t->secret = rendezvous::derive_job_secret(*kept, job->uid);
            } else if (auto ns_secret = namespace_secrets.get(job->ns + "/" + kNamespaceRdzvSecret)) {
              const std::string key = kube::base64_decode(ns_secret->secret_b64, &ok);
              if (ok && !key.empty()) t->secret = rendezvous::derive_job_secret(key, job->uid);
            }
            if (!ok || t->secret.empty()) continue;
          }
          targets.push_back(*t);
        }
        return targets;
      },
      [&](const std::string& key) { mgr.queue().add(key); });
  mgr.add({[&] { poller.start(); }, [&] { poller.stop(); }});
  mgr.serve_metrics([&] {
    metrics.workqueue_depth(mgr.queue().depth());
    return metrics.render();
  });

  kube::EventRecorder recorder(api, "kubedist-operator");
  JobMetrics job_metrics(metrics);
  ReconcilerExtras extras;
  extras.nodes = nodes;
  extras.namespace_secrets = &namespace_secrets;
  extras.rendezvous_keys = &rendezvous_keys;
  extras.integrations = integrations.observed();
  if (options.launcher_poll_interval_ms > 0) {
    extras.launcher = [&](const std::string& key) { return poller.latest(key); };
  }
  extras.unschedulable_grace_s = options.unschedulable_grace_s;
  extras.node_lost_grace_s = options.node_lost_grace_s;
  extras.progress_write_interval = std::chrono::milliseconds(options.progress_write_interval_ms);
  Reconciler reconciler(api, jobs, pods, services, recorder, pod_options, std::move(extras), &job_metrics);
  return mgr.run(stop, [&](const std::string& key) {
    const auto start = std::chrono::steady_clock::now();
    ReconcileResult result;
    try {
      result = reconciler.reconcile(key);
    } catch (const std::exception& e) {  // the Controller would turn it into this error as well
      result = ReconcileResult::failed(Error{Error::Kind::kOther, std::string("unexpected exception: ") + e.what(), 0});
    }
    metrics.reconcile_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (result.kind == ReconcileResult::Kind::kError) metrics.workqueue_retry();  // the Controller requeues it
    return result;
  });
}

}  // namespace kubedist::trainingjob
