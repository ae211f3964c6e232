// The act layer: observes a job from the caches, asks decide() what to do, and does it through the client.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "controller/reconcile_result.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "trainingjob/act/integrations.h"
#include "trainingjob/act/progress_writes.h"
#include "trainingjob/act/job_metrics.h"
#include "trainingjob/act/pending_writes.h"
#include "trainingjob/act/rendezvous_keys.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/render/render.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

using controller::ReconcileResult;

using JobInformer = kube::Informer<TrainingJob>;
using PodInformer = kube::Informer<PodFacts>;
using ServiceInformer = kube::Informer<ServiceFacts>;
using NodeInformer = kube::Informer<NodeFacts>;
using SecretInformer = kube::Informer<SecretFacts>;

// What the reconciler needs beyond the job, pod and service caches; everything here is optional.
struct ReconcilerExtras {
  const NodeInformer* nodes = nullptr;  // null: nodes are not watched, node loss is not judged
  // Each namespace's rendezvous Secret (key namespace/kubedist-rendezvous); null: the operator creates none (pods
  // must then not mount one: PodOptions::rdzv_secret false).
  const SecretInformer* namespace_secrets = nullptr;
  // With namespace_secrets: the namespace keys the operator has seen (shared with the launcher poller); null: none
  // kept, so a job whose namespace key is deleted or replaced is not told apart.
  RendezvousKeys* rendezvous_keys = nullptr;
  // The integrations (gang scheduling, Kueue admission) with their caches: each observes its facts about a job.
  std::vector<ObservedIntegration> integrations;
  std::function<std::optional<LauncherReport>(const std::string& job_key)> launcher;  // latest STATUS of node 0
  int64_t unschedulable_grace_s = 30;
  int64_t node_lost_grace_s = 60;
  std::chrono::milliseconds progress_write_interval{30000};  // see ProgressWrites; 0: no bound
};

// Index value of pods and services: the owning job's "namespace/name".
std::string job_key_of(const PodFacts& pod);

class Reconciler {
 public:
  Reconciler(kube::Client& client, const JobInformer& jobs, const PodInformer& pods, const ServiceInformer& services,
             kube::EventRecorder& events, PodOptions pod_options, ReconcilerExtras extras = {},
             JobMetrics* metrics = nullptr)
      : client_(client), jobs_(jobs), pods_(pods), services_(services), events_(events),
        pod_options_(std::move(pod_options)), extras_(std::move(extras)), metrics_(metrics),
        progress_writes_(extras_.progress_write_interval) {}

  // Level-triggered and idempotent: reads only the caches, never the event that woke it.
  ReconcileResult reconcile(const std::string& key);

 private:
  // Writes we issued that the caches have not shown yet; until they do, the caches are too old to decide on.
  struct Expectations {
    std::set<std::string> creates;  // pod names
    std::set<std::string> deletes;  // pod uids
    std::chrono::steady_clock::time_point since;
  };
  // Whether to hold this status write back for a while (returns how long), or write it now (zero).
  std::chrono::milliseconds hold_pending(const std::string& key, const Status& before, const Status& after,
                                         const std::vector<PodFacts>& pods);
  std::chrono::milliseconds hold_progress(const std::string& key, const Status& before, const Status& after);
  bool caches_caught_up(const std::string& key, const std::vector<PodFacts>& pods);
  // Whether the job cache shows our last status write: decisions read state kept in the status (the elastic
  // target, lost pods, launcher counts), so a stale status must not drive pod creation or deletion.
  bool status_caught_up(const std::string& key, const TrainingJob& job);
  Observed observe(const TrainingJob& job, std::vector<PodFacts> pods, bool service_exists);
  // Asks the API server about each node a pod of o is bound to that the node cache lacks: a 404 confirms it gone
  // (o.nodes_gone), an answer adds it to o.nodes, an error leaves it unknown (its pods are not judged lost).
  void confirm_missing_nodes(Observed& o);
  // On success, the resourceVersion the server gave the job. A 409 Conflict (the job changed since the cache's
  // version) comes back as the error: the next reconcile decides again from the newer job.
  Result<std::string> write_status(const TrainingJob& job, const Status& status);
  // Carries out one of the plan's writes; nullopt when it is done (or was already), else what reconcile returns.
  std::optional<ReconcileResult> carry_out(const Write& write);
  // Creates the job's namespace's Secret kubedist-rendezvous; nullopt when it exists now (ours). A Secret of that
  // name that is not the operator's is an error the job shows as an Event: its pods could not sign.
  std::optional<ReconcileResult> create_namespace_secret(const TrainingJob& job, const kube::ObjectRef& ref);

  kube::Client& client_;
  const JobInformer& jobs_;
  const PodInformer& pods_;
  const ServiceInformer& services_;
  kube::EventRecorder& events_;
  const PodOptions pod_options_;
  const ReconcilerExtras extras_;
  JobMetrics* const metrics_;  // may be null
  std::mutex mu_;
  std::map<std::string, Expectations> expectations_;
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
};

}  // namespace kubedist::trainingjob
