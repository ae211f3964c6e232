#include "trainingjob/act/setup.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

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
#include "trainingjob/act/avoided_taints.h"
#include "trainingjob/act/launcher_poller.h"
#include "trainingjob/act/pod_decoder.h"
#include "trainingjob/act/reconciler.h"
#include "trainingjob/api/parse.h"
#include "trainingjob/gang/gang.h"
#include "trainingjob/kueue/kueue.h"
#include "trainingjob/netpol/netpol.h"

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

// The API clients: the operator's, and with leader election the lease's own.
struct Clients {
  std::unique_ptr<kube::Client> api;
  std::unique_ptr<kube::Client> lease;  // null without leader election
};

Result<Clients> connect(const OperatorOptions& options) {
  auto config = kube::load_default_config(options.kubeconfig, options.context);
  if (!config) return config.error();
  // The cluster's CA alone is trusted (kube/trusted_ca.h): the system's roots need not be read for each connection.
  if (!config->ca_pem.empty()) kube::leave_system_roots_unloaded();
  kube::Client::set_io_threads(4);
  // With leader election, a write must land (or be given up) within the last third of the lease, after the fence
  // closes (controller/leader_election.h); the lease has a client of its own with a shorter deadline, no retries.
  kube::RetryPolicy retry;
  if (options.leader_elect) retry.write_timeout = controller::write_deadline(options.leader_election_lease_seconds);
  auto api = kube::Client::create(*config, retry);
  if (!api) return api.error();
  Clients clients{std::move(*api), nullptr};
  if (options.leader_elect) {
    // A renewal's GET and PATCH fail within 2/5 of the lease, so that hold() gives up before the renew deadline.
    kube::RetryPolicy lease_retry;
    lease_retry.attempts = 1;
    lease_retry.timeout = lease_retry.write_timeout =
        std::chrono::seconds(std::max(1, options.leader_election_lease_seconds / 5));
    auto lease = kube::Client::create(*config, lease_retry);
    if (!lease) return lease.error();
    clients.lease = std::move(*lease);
  }
  return clients;
}

// The manager's options with the lease (when elected) and the reconciles' metrics.
controller::ManagerOptions manager_options(const OperatorOptions& options, Clients& clients,
                                           metrics::OperatorMetrics& metrics) {
  controller::ManagerOptions m = options.manager;
  if (options.leader_elect) {
    const std::string ns = options.leader_election_namespace.empty() ? clients.api->default_namespace()
                                                                     : options.leader_election_namespace;
    m.leader = controller::LeaderElectionOptions{ns, options.leader_election_id, identity(),
                                                 options.leader_election_lease_seconds};
    m.lease_client = clients.lease.get();
  }
  m.on_reconciled = [&metrics](const ReconcileResult& result, std::chrono::duration<double> took) {
    metrics.reconcile_duration(took.count());
    if (result.kind == ReconcileResult::Kind::kError) metrics.workqueue_retry();  // the Controller requeues it
  };
  return m;
}

// What the operator watches. Pods, Services and Secrets by label, so the caches hold only what belongs to some
// TrainingJob; each change queues the owning job.
struct Watched {
  kube::Informer<TrainingJob>* jobs = nullptr;
  kube::Informer<PodFacts>* pods = nullptr;
  kube::Informer<ServiceFacts>* services = nullptr;
  kube::Informer<SecretFacts>* namespace_secrets = nullptr;
  const kube::Informer<NodeFacts>* nodes = nullptr;  // null: nodes not watched
};

Watched watch(controller::Manager& mgr, const OperatorOptions& options, std::vector<ConditionType> kept_conditions) {
  Watched c;
  const std::string tj_prefix = std::string("/apis/") + kGroup + "/" + kVersion;
  c.jobs = &mgr.for_kind<TrainingJob>(
      {scoped(tj_prefix, options.ns, kPlural), ""}, [kept = std::move(kept_conditions)](const nlohmann::json& obj) {
        auto job = parse_training_job(obj, kept);
        return job ? *job : TrainingJob{};
      });
  c.pods = &mgr.owns<PodFacts>({scoped("/api/v1", options.ns, "pods"), kJobNameLabel}, parse_pod_facts, job_key_of);
  // The most frequent events, and the largest lists: read without the JSON tree (pod_decoder.h).
  c.pods->set_decoder(decode_pod_event, decode_pod_object);
  c.services = &mgr.owns<ServiceFacts>({scoped("/api/v1", options.ns, "services"), kJobNameLabel},
                                       parse_service_facts, [](const ServiceFacts& s) { return s.ns + "/" + s.name; });
  // Each namespace's rendezvous Secret: the reconciler creates it, the poller derives each job's secret from it. A
  // change may concern any job of the namespace: all are requeued (it is made once, so that is rare). Watched by
  // name, so that the operator's RBAC grants it no other Secret (resourceNames) and no labelled Secret of a tenant
  // fills its cache.
  c.namespace_secrets = &mgr.watches<SecretFacts>(
      {scoped("/api/v1", options.ns, "secrets"), std::string(kNamespaceRdzvLabel) + "=namespace",
       std::string("metadata.name=") + kNamespaceRdzvSecret},
      parse_secret_facts, [](const SecretFacts&) { return std::string(); }, mgr.enqueue_all());
  // Nodes (cluster-scoped, read-only) tell lost pods apart; a change may concern any job, so all are requeued.
  if (options.watch_nodes.value_or(options.ns.empty())) {
    c.nodes = &mgr.watches<NodeFacts>({"/api/v1/nodes", ""}, parse_node_facts,
                                     [](const NodeFacts&) { return std::string(); }, mgr.enqueue_all());
  }
  return c;
}

// The jobs whose node 0 the poller asks for its STATUS, each with the secret it signs with. Node 0 answers signed
// requests only: a job whose secret the operator cannot tell (the namespace's Secret not in the cache yet, or
// node 0 signing with its own J-rdzv, an earlier operator's, which the operator may not read) is not asked.
std::vector<LauncherTarget> launcher_targets(const Watched& c, const RendezvousKeys& keys) {
  std::vector<LauncherTarget> targets;
  for (const auto& key : c.jobs->keys()) {
    auto job = c.jobs->get(key);
    if (!job) continue;
    const std::vector<PodFacts> pods = c.pods->by_index(key);
    auto t = launcher_target(*job, pods);
    if (!t) continue;
    if (t->needs_secret) {
      if (t->job_secret) continue;
      // The job's secret is derived from the key node 0 records (one deleted or replaced since is kept in memory),
      // else from the namespace's.
      bool ok = false;
      std::string fingerprint;
      for (const auto& pod : pods) {
        if (pod.uid == t->pod_uid) fingerprint = pod.rdzv_key;
      }
      if (auto kept = fingerprint.empty() ? std::nullopt : keys.find(job->ns, fingerprint)) {
        ok = true;
        t->secret = rendezvous::derive_job_secret(*kept, job->uid);
      } else if (auto ns_secret = c.namespace_secrets->get(job->ns + "/" + kNamespaceRdzvSecret)) {
        const std::string namespace_key = kube::base64_decode(ns_secret->secret_b64, &ok);
        ok = ok && namespace_key_refusal(job->ns, ok, namespace_key).empty();
        if (ok) t->secret = rendezvous::derive_job_secret(namespace_key, job->uid);
      }
      if (!ok || t->secret.empty()) continue;
    }
    targets.push_back(*t);
  }
  return targets;
}

ReconcilerExtras reconciler_extras(const OperatorOptions& options, const Watched& c, RendezvousKeys& keys,
                                   Keyring* keyring, const WatchedIntegrations& integrations,
                                   LauncherPoller& poller, NodeSignals& node_signals) {
  ReconcilerExtras extras;
  extras.node_signals = &node_signals;
  extras.nodes = c.nodes;
  extras.namespace_secrets = c.namespace_secrets;
  extras.rendezvous_keys = &keys;
  extras.keyring = keyring;
  extras.integrations = integrations.observed();
  if (options.launcher_poll_interval_ms > 0) {
    extras.launcher = [&poller](const std::string& key) { return poller.latest(key); };
    extras.refresh_launcher = [&poller](const std::string& key) { return poller.refresh(key); };
    extras.release = [&poller](const std::string& key, const contract::ReleaseNotice& notice) {
      return poller.release(key, notice);
    };
  }
  extras.unschedulable_grace_s = options.unschedulable_grace_s;
  extras.node_lost_grace_s = options.node_lost_grace_s;
  extras.avoid_node_after_failures = options.avoid_node_after_failures;
  extras.taint_avoided_nodes = options.taint_avoided_nodes;
  extras.max_tainted_nodes = options.max_tainted_nodes;
  extras.node_loss_limit = options.node_loss_limit;
  extras.progress_write_interval = std::chrono::milliseconds(options.progress_write_interval_ms);
  return extras;
}

}  // namespace

Result<void> run_manager(const OperatorOptions& options, std::stop_token stop) {
  metrics::OperatorMetrics metrics;  // before the client: the client reports to it until the client is gone
  auto clients = connect(options);
  if (!clients) return clients.error();
  kube::Client& api = *clients->api;
  api.set_request_observer([&metrics](const std::string& verb, int code) { metrics.api_request(verb, code); });
  if (!options.ns.empty()) metrics.namespace_seen(options.ns);
  controller::Manager mgr(api, manager_options(options, *clients, metrics));

  // The integrations, one line each: each watches what it needs and takes part in decide() (decide/hook.h).
  std::vector<std::unique_ptr<Integration>> registered;
  registered.push_back(std::make_unique<GangIntegration>(options.gang_scheduling));
  registered.push_back(std::make_unique<KueueIntegration>());
  registered.push_back(std::make_unique<NetworkPolicyIntegration>(options.network_policy_per_job,
                                                                 options.network_policy_ingress));
  WatchedIntegrations integrations(std::move(registered));

  const Watched caches = watch(mgr, options, integrations.condition_types());
  // The integrations' kinds (PodGroups, Kueue's objects), only where the cluster serves them.
  integrations.watch(mgr, api, options.ns);

  RendezvousKeys rendezvous_keys;  // the namespace keys seen, for the reconciler and the poller
  NodeSignals node_signals;        // every job's bus errors by node, for the reconciler
  std::optional<Keyring> keyring;  // and where they are kept beyond this process
  if (!options.keyring_secret.empty()) keyring.emplace(api, options.keyring_secret);
  LauncherPoller poller(
      std::chrono::milliseconds(options.launcher_poll_interval_ms),
      [&] { return launcher_targets(caches, rendezvous_keys); }, [&](const std::string& key) { mgr.queue().wake(key); });
  mgr.add({[&] { poller.start(); }, [&] { poller.stop(); }});
  std::optional<AvoidedTaintExpiry> taint_expiry;
  if (options.taint_avoided_nodes && caches.nodes != nullptr) {
    taint_expiry.emplace(api, *caches.nodes, options.avoided_taint_ttl_s);
    mgr.add({[&] { taint_expiry->start(); }, [&] { taint_expiry->stop(); }});
  }
  mgr.serve_metrics([&] {
    metrics.workqueue_depth(mgr.queue().depth());
    return metrics.render();
  });

  kube::EventRecorder recorder(api, "kubedist-operator");
  JobMetrics job_metrics(metrics);
  PodOptions pod_options = options.pods;
  pod_options.rdzv_secret = true;  // every new pod's launcher signs its rendezvous with the job's secret
  pod_options.topology_domains = caches.nodes != nullptr;  // Reconciler::observe_node_domains reads them
  Reconciler reconciler(api, *caches.jobs, *caches.pods, *caches.services, recorder, pod_options,
                        reconciler_extras(options, caches, rendezvous_keys, keyring ? &*keyring : nullptr,
                                          integrations, poller, node_signals),
                        &job_metrics);
  caches.pods->set_on_deleted([&reconciler](const PodFacts& pod) { reconciler.pod_deleted(pod); });
  return mgr.run(stop, [&reconciler](const std::string& key) { return reconciler.reconcile(key); });
}

}  // namespace kubedist::trainingjob
