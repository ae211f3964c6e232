// decide(): the pure heart of the reconciler, from an observed job and its pods to the actions and new status.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "trainingjob/kueue/kueue.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

struct Event {
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
  bool operator==(const Event&) const = default;
};

struct PodDeletion {
  std::string name;
  std::string uid;     // delete precondition: never delete a newer pod of the same name
  bool force = false;  // gracePeriodSeconds 0: the pod's node is gone and no kubelet will confirm the deletion
  bool operator==(const PodDeletion&) const = default;
};

// The API server refused to create one of the job's pods (422 or 400: a template that passed parse.cc's checks
// but not the server's). Only the server can judge this; the reconciler reports it, decide() fails the job for it.
struct PodRejection {
  std::string pod;         // the pod's name
  std::string message;     // the server's reason
  int64_t generation = 0;  // the job's metadata.generation the pod was rendered from
  bool operator==(const PodRejection&) const = default;
};

// Everything decide() reads besides the job: the caches' facts, the launcher's report and the operator's graces.
struct Observed {
  std::vector<PodFacts> pods;
  bool service_exists = false;
  bool namespace_secret_exists = true;  // Secret kubedist-rendezvous (true when the operator does not manage one)
  bool nodes_watched = false;     // nodes holds every node; otherwise node loss is not judged
  std::vector<NodeFacts> nodes;
  std::optional<LauncherReport> launcher;  // the latest STATUS of the rendezvous service on node 0
  bool gang_api = false;                   // the cluster serves PodGroups and the operator watches them
  bool gang_by_default = false;            // jobs without spec.scheduling.gang are gang-scheduled
  std::optional<PodGroupFacts> pod_group;  // PodGroup J, when it exists and the job controls it
  KueueObserved kueue;                     // Kueue's view of a queued job (job.queue_name set)
  // A pod create the API server refused; one from an older generation says nothing of this spec.
  std::optional<PodRejection> pod_rejected;
  int64_t unschedulable_grace_s = 30;
  int64_t node_lost_grace_s = 60;
};

struct Plan {
  bool create_service = false;
  std::optional<int> create_gang;         // create Workload J and PodGroup J with this gang minCount (before pods)
  bool delete_gang = false;               // PodGroup J has another minCount: delete it and Workload J, then recreate
  bool create_namespace_secret = false;   // Secret kubedist-rendezvous, before any pod mounts it
  bool job_rdzv_secret = false;           // new pods mount the job's own Secret J-rdzv, as its running pods do
  bool create_kueue_workload = false;     // Kueue Workload J (kueue.h), with this priority class if any
  std::optional<PriorityClassFacts> kueue_priority;
  bool delete_kueue_workload = false;     // it asks for another size or is finished: the next pass creates it anew
  std::optional<KueueStatusWrite> kueue_status;  // release the quota of an evicted job, or mark the Workload finished
  std::optional<int> admitted_nodes;      // Kueue admitted fewer nodes than spec.replicas: render pods for that many
  std::optional<Placement> placement;     // the admitted flavors' node selector and tolerations for new pods
  std::vector<int> create_ranks;          // ascending, so node 0 comes first
  std::vector<PodDeletion> delete_pods;
  bool delete_job = false;                // ttlSecondsAfterFinished has passed
  Status status;                          // the status to write (unchanged == nothing to write)
  std::vector<Event> events;              // one per decision
  std::optional<int64_t> requeue_after_s; // a timer (deadline, TTL) the reconciler must come back for
};

// The job's pods are those carrying its job-name label; pods owned by another controller are ignored.
// service_exists: whether Service J exists (owned by the job).
Plan decide(const TrainingJob& job, const std::vector<PodFacts>& pods, bool service_exists, UnixSeconds now);
Plan decide(const TrainingJob& job, const Observed& observed, UnixSeconds now);

}  // namespace kubedist::trainingjob
