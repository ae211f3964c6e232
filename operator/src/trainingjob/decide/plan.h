// decide(): the pure heart of the reconciler, from an observed job and its pods to the actions and new status.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <memory>

#include "common/time.h"
#include "trainingjob/api/types.h"
#include "trainingjob/decide/hook.h"
#include "trainingjob/decide/write.h"
#include "trainingjob/render/render.h"

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
  // Each integration's facts about the job (gang scheduling, Kueue admission: hook.h), in registration order.
  std::vector<std::shared_ptr<const IntegrationFacts>> integrations;
  PodOptions pod_options;  // what new pods get from the operator's configuration (launcher image, ...)
  // A pod create the API server refused; one from an older generation says nothing of this spec.
  std::optional<PodRejection> pod_rejected;
  int64_t unschedulable_grace_s = 30;
  int64_t node_lost_grace_s = 60;
};

struct Plan {
  bool create_service = false;
  bool create_namespace_secret = false;   // Secret kubedist-rendezvous, before any pod mounts it
  bool job_rdzv_secret = false;           // new pods mount the job's own Secret J-rdzv, as its running pods do
  // The integrations' objects (before the pods), then the pods of create_ranks, rendered for the job as it runs.
  std::vector<Write> writes;
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
