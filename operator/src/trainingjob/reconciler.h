// The act layer: observes a job from the caches, asks decide() what to do, and does it through the client.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "controller/reconcile_result.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "trainingjob/pending_writes.h"
#include "trainingjob/job_metrics.h"
#include "trainingjob/plan.h"
#include "trainingjob/render.h"
#include "trainingjob/types.h"

namespace kubedist::trainingjob {

using controller::ReconcileResult;

using JobInformer = kube::Informer<TrainingJob>;
using PodInformer = kube::Informer<PodFacts>;
using ServiceInformer = kube::Informer<ServiceFacts>;

// Index value of pods and services: the owning job's "namespace/name".
std::string job_key_of(const PodFacts& pod);

class Reconciler {
 public:
  Reconciler(kube::Client& client, const JobInformer& jobs, const PodInformer& pods, const ServiceInformer& services,
             kube::EventRecorder& events, PodOptions pod_options, JobMetrics* metrics = nullptr)
      : client_(client), jobs_(jobs), pods_(pods), services_(services), events_(events),
        pod_options_(std::move(pod_options)), metrics_(metrics) {}

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
  std::chrono::milliseconds hold_pending(const std::string& key, const Status& before, const Status& after);
  bool caches_caught_up(const std::string& key, const std::vector<PodFacts>& pods);
  Result<void> write_status(const TrainingJob& job, const std::vector<PodFacts>& pods, bool service_exists,
                            Status status);

  kube::Client& client_;
  const JobInformer& jobs_;
  const PodInformer& pods_;
  const ServiceInformer& services_;
  kube::EventRecorder& events_;
  const PodOptions pod_options_;
  JobMetrics* const metrics_;  // may be null
  std::mutex mu_;
  std::map<std::string, Expectations> expectations_;
  PendingWrites pending_writes_;
};

}  // namespace kubedist::trainingjob
