// The act layer: observes a job from the caches, asks decide() what to do, and does it through the client.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "controller/reconcile_result.h"
#include "kube/api.h"
#include "kube/event_recorder.h"
#include "kube/lister.h"
#include "trainingjob/act/integrations.h"
#include "trainingjob/act/progress_writes.h"
#include "trainingjob/act/job_metrics.h"
#include "trainingjob/act/pending_writes.h"
#include "trainingjob/act/keyring.h"
#include "trainingjob/act/node_signals.h"
#include "trainingjob/act/rendezvous_keys.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/render/render.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

using controller::ReconcileResult;

// The caches the reconciler reads (informers in the operator, filled by hand in unit tests).
using JobInformer = kube::Lister<TrainingJob>;
using PodInformer = kube::Lister<PodFacts>;
using ServiceInformer = kube::Lister<ServiceFacts>;
using NodeInformer = kube::Lister<NodeFacts>;
using SecretInformer = kube::Lister<SecretFacts>;

// What the reconciler needs beyond the job, pod and service caches; everything here is optional.
struct ReconcilerExtras {
  const NodeInformer* nodes = nullptr;  // null: nodes are not watched, node loss is not judged
  // Each namespace's rendezvous Secret (key namespace/kubedist-rendezvous); null: the operator creates none (pods
  // must then not mount one: PodOptions::rdzv_secret false).
  const SecretInformer* namespace_secrets = nullptr;
  // With namespace_secrets: the namespace keys the operator has seen (shared with the launcher poller); null: none
  // kept, so a job whose namespace key is deleted or replaced is not told apart.
  RendezvousKeys* rendezvous_keys = nullptr;
  // With rendezvous_keys: where they are kept beyond this process (act/keyring.h); null: memory only.
  Keyring* keyring = nullptr;
  // The integrations (gang scheduling, Kueue admission) with their caches: each observes its facts about a job.
  std::vector<ObservedIntegration> integrations;
  std::function<std::optional<LauncherReport>(const std::string& job_key)> launcher;  // latest STATUS of node 0
  // Asks a job's node 0 for its STATUS now (LauncherPoller::refresh): a member's pod gone, a spare may hold its place.
  std::function<std::optional<LauncherReport>(const std::string& job_key)> refresh_launcher;
  // Tells a job's node 0 that a launcher's node goes away (LauncherPoller::release); null: no notices are sent.
  std::function<Result<contract::ReleaseAnswer>(const std::string& job_key, const contract::ReleaseNotice&)> release;
  int64_t unschedulable_grace_s = 30;
  int64_t node_lost_grace_s = 60;
  int avoid_node_after_failures = 2;  // see Observed::avoid_node_after_failures; 0: never
  bool taint_avoided_nodes = false;   // see Observed::taint_avoided_nodes
  int max_tainted_nodes = 3;          // see Observed::max_tainted_nodes
  int node_loss_limit = 100;          // see Observed::node_loss_limit
  // Every job's bus errors by node (act/node_signals.h): see Observed::bus_error_namespaces; null: none counted.
  NodeSignals* node_signals = nullptr;
  std::chrono::milliseconds progress_write_interval{30000};  // see ProgressWrites; 0: no bound
};

// Index value of pods and services: the owning job's "namespace/name".
std::string job_key_of(const PodFacts& pod);

// The request a write makes: its body with the precondition in place (a delete's uid, a patch's resourceVersion).
nlohmann::json request_body(const Write& w);

// Why the key of a namespace's Secret kubedist-rendezvous is refused (data.secret not base64, or a key outside
// contract::kMinSecretBytes..kMaxSecretBytes), naming the namespace and the fix; "" when it is taken.
std::string namespace_key_refusal(const std::string& ns, bool decoded, const std::string& key);

class Reconciler {
 public:
  Reconciler(kube::Api& api, const JobInformer& jobs, const PodInformer& pods, const ServiceInformer& services,
             kube::EventRecorder& events, PodOptions pod_options, ReconcilerExtras extras = {},
             JobMetrics* metrics = nullptr)
      : api_(api), jobs_(jobs), pods_(pods), services_(services), events_(events),
        pod_options_(std::move(pod_options)), extras_(std::move(extras)), metrics_(metrics),
        progress_writes_(extras_.progress_write_interval) {}

  // Level-triggered and idempotent: reads only the caches, never the event that woke it. Observes the job, asks
  // decide() for its plan, and carries the plan's writes out in order.
  ReconcileResult reconcile(const std::string& key);
  // A pod's DELETED event (the pod informer's OnDeleted): a pod we created may be deleted again (kwok, a user, a
  // node's eviction) before any pass read the cache that showed it; its deletion fulfils the expectation of it.
  void pod_deleted(const PodFacts& pod);

 private:
  // Writes we issued that the caches have not shown yet; until they do, the caches are too old to decide on.
  struct Expectations {
    // Pod name -> the uid the API server gave the pod we created: fulfilled by any event of that uid, its deletion
    // included. Empty uid: the pod existed already (AlreadyExists), fulfilled when the cache shows that name.
    std::map<std::string, std::string> creates;
    std::set<std::string> deletes;  // pod uids
    std::chrono::steady_clock::time_point since;
  };
  // What one pass has carried out so far (act()).
  struct Pass;

  ReconcileResult forget(const std::string& key);
  // The plan's notices to node 0 (Plan::releases), each pod's once node 0 took it; Event NodeGoingAway for each.
  void send_releases(const TrainingJob& job, const std::vector<RendezvousRelease>& releases);
  bool caches_caught_up(const std::string& key, const std::vector<PodFacts>& pods);
  // Whether the job cache shows our last status write: decisions read state kept in the status (the elastic
  // target, lost pods, launcher counts), so a stale status must not drive pod creation or deletion.
  bool status_caught_up(const std::string& key, const TrainingJob& job);
  Result<Observed> observe(const TrainingJob& job, std::vector<PodFacts> pods, bool service_exists);
  // The facts the API server told us and no cache holds: its last refusal of a pod of the job.
  void observe_refusals(const TrainingJob& job, Observed& o);
  // The namespace key new pods derive from, and the job's secrets from every key seen (RendezvousKeys).
  Result<void> observe_rendezvous_keys(const TrainingJob& job, Observed& o);
  // Asks the API server about each node a pod of o is bound to that the node cache lacks: a 404 confirms it gone
  // (o.nodes_gone), an answer adds it to o.nodes, an error leaves it unknown (its pods are not judged lost).
  void confirm_missing_nodes(Observed& o);
  // spec.placement.topologyKey: the label's value on the nodes of the job's pods that have no domain annotation yet.
  void observe_node_domains(const TrainingJob& job, Observed& o);
  void observe_bus_errors(const TrainingJob& job, Observed& o);

  // Carries out the plan's writes in order; what to ask of the controller then.
  ReconcileResult act(const TrainingJob& job, const Observed& observed, const Plan& plan);
  // One write; nullopt to go on with the next, else what this pass returns (a write the rest depends on failed).
  std::optional<ReconcileResult> carry_out(const TrainingJob& job, const Observed& observed, const Plan& plan,
                                           const Write& write, Pass& pass);
  // The plan's creates are through (the next write is the job's status or a deletion): its events are recorded,
  // and a refusal of the job's pods is over when every pod it wanted was created.
  void creates_through(const TrainingJob& job, const Observed& observed, const Plan& plan, Pass& pass);
  std::optional<ReconcileResult> create_pod(const TrainingJob& job, const Observed& observed, const Write& write,
                                            Pass& pass);
  std::optional<ReconcileResult> delete_pod(const Write& write, Pass& pass);
  // The job's own status: held back while PendingWrites or ProgressWrites say so. A 409 Conflict (the job changed
  // since the cache's version) comes back next pass, which decides again from the newer job.
  std::optional<ReconcileResult> write_status(const TrainingJob& job, const Plan& plan, const Write& write,
                                              const std::vector<PodFacts>& pods, Pass& pass);
  // Creates the job's namespace's Secret kubedist-rendezvous; nullopt when it exists now (ours). A Secret of that
  // name that is not the operator's is an error the job shows as an Event: its pods could not sign.
  std::optional<ReconcileResult> create_namespace_secret(const TrainingJob& job, const Write& write);
  // Any other write (the Service, J-rdzv, an integration's objects, the job's deletion).
  std::optional<ReconcileResult> carry_out_plain(const Write& write);
  void remember_expected(const std::string& key, Expectations expect);
  // Whether to hold this status write back for a while (returns how long), or write it now (zero).
  std::chrono::milliseconds hold_pending(const std::string& key, const Status& before, const Status& after,
                                         const std::vector<PodFacts>& pods);
  std::chrono::milliseconds hold_progress(const std::string& key, const Status& before, const Status& after);

  kube::Api& api_;
  const JobInformer& jobs_;
  const PodInformer& pods_;
  const ServiceInformer& services_;
  kube::EventRecorder& events_;
  const PodOptions pod_options_;
  const ReconcilerExtras extras_;
  JobMetrics* const metrics_;  // may be null
  std::mutex mu_;
  std::map<std::string, Expectations> expectations_;
  // The uids of pods deleted within the expectation timeout, oldest first: a create's answer may come after the
  // pod's DELETED event.
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::string>> deleted_order_;
  std::set<std::string> deleted_uids_;
  // The resourceVersion of each job's last status write we have not yet seen in the cache, and since when.
  std::map<std::string, std::pair<std::string, std::chrono::steady_clock::time_point>> written_;
  PendingWrites pending_writes_;
  ProgressWrites progress_writes_;
  // The pod create the API server last refused, per job key, with the job's uid: a fact decide() needs until the
  // job's status shows the failure (or its spec changes), kept here because no cache holds a refused object.
  std::map<std::string, std::pair<std::string, PodRejection>> rejected_;
  // The pod create the API server last forbade (403), per job key, with the job's uid: the namespace's rules, kept
  // with its backoff until a pass creates the job's missing pods unrefused.
  std::map<std::string, std::pair<std::string, PodRefusal>> refused_;
  // Per job key: the uids of pods whose release node 0 took (send_releases), so that each is sent once.
  std::map<std::string, std::set<std::string>> released_;
};

}  // namespace kubedist::trainingjob
