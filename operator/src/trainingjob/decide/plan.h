// decide(): the pure heart of the reconciler, from an observed job and its pods to the actions and new status.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <memory>

#include "common/time.h"
#include "contract/notice.h"
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

// The API server refused to create one of the job's pods (422 or 400: a template that passed parse_spec.cc's checks
// but not the server's). Only the server can judge this; the reconciler reports it, decide() fails the job for it.
struct PodRejection {
  std::string pod;         // the pod's name
  std::string message;     // the server's reason
  int64_t generation = 0;  // the job's metadata.generation the pod was rendered from
  bool operator==(const PodRejection&) const = default;
};

// The API server forbade one of the job's pods (403: Pod Security admission, a ResourceQuota, an admission webhook,
// RBAC): the namespace's rules refused it, not the spec's form, and they may change. decide() says so in condition
// PodsRefused with one Warning Event and creates nothing before retry_at (a backoff that grows with each refusal).
struct PodRefusal {
  std::string pod;           // the pod refused last
  std::string message;       // the server's reason
  int attempts = 1;          // refusals in a row
  UnixSeconds retry_at = 0;  // no pod of the job is created before this
  bool operator==(const PodRefusal&) const = default;
};

// Seconds to wait after the n-th refusal in a row before creating again: 5 s doubling to 5 minutes.
int64_t refused_create_backoff_s(int attempts);

// Everything decide() reads besides the job: the caches' facts, the launcher's report and the operator's graces.
struct Observed {
  std::vector<PodFacts> pods;
  bool service_exists = false;
  bool namespace_secret_exists = true;  // Secret kubedist-rendezvous (true when the operator does not manage one)
  // The fingerprint of the namespace key new pods would derive from (the Secret's, or the one the operator is
  // about to create); empty when the operator manages no namespace key.
  std::string namespace_key;
  // Without the Secret: the key the operator creates it with (the pods rendered now derive from it).
  std::string new_namespace_key;
  // Why the Secret's key is refused (not base64, or outside contract::kMinSecretBytes..kMaxSecretBytes): new pods,
  // which would derive from it, are held (condition PodsRefused, reason RendezvousKeyInvalid); empty when it is not.
  std::string namespace_key_refused;
  // Fingerprint -> this job's secret derived from that key, for each key of the namespace the operator has seen
  // (the current one and those it held before a deletion or replacement).
  std::map<std::string, std::string> job_secrets;
  // The same keys -> the fingerprint of that job secret (contract/signed_line.h), which new pods on J-rdzv check.
  std::map<std::string, std::string> job_secret_fingerprints;
  bool nodes_watched = false;     // nodes holds every node; otherwise node loss is not judged
  std::vector<NodeFacts> nodes;
  // Nodes the job's pods are bound to that the API server says do not exist (a GET answered 404): deleted for
  // certain, not merely missing from a node cache that has not caught up.
  std::set<std::string> nodes_gone;
  // spec.placement.topologyKey: node -> the value of that label (kNoTopologyDomain without it), for the nodes of the
  // job's pods that have no topology-domain annotation yet (read only where nodes are watched: the cluster-wide
  // operator's RBAC).
  std::map<std::string, std::string> node_domains;
  std::optional<LauncherReport> launcher;  // the latest STATUS of the rendezvous service on node 0
  // Each integration's facts about the job (gang scheduling, Kueue admission: hook.h), in registration order.
  std::vector<std::shared_ptr<const IntegrationFacts>> integrations;
  PodOptions pod_options;  // what new pods get from the operator's configuration (launcher image, ...)
  // A pod create the API server refused; one from an older generation says nothing of this spec.
  std::optional<PodRejection> pod_rejected;
  // The latest pod create the API server forbade, until a pass creates the job's missing pods without a refusal.
  std::optional<PodRefusal> pod_refused;
  int64_t unschedulable_grace_s = 30;
  int64_t node_lost_grace_s = 60;
  // A node where this many of a job's pods failed for reasons not the training code's is avoided by the job's new
  // pods (decide/bad_nodes.h); 0: never.
  int avoid_node_after_failures = 2;
  // An avoided node is also tainted kAvoidedTaint:NoSchedule for every pod, when the node itself failed there (lost
  // with its node: decide/bad_nodes.h), while fewer than max_tainted_nodes carry the taint.
  bool taint_avoided_nodes = false;
  int max_tainted_nodes = 3;
  // For each node of the job's pods: the namespaces (the job's own included) whose pods were ended there by SIGBUS
  // lately (act/node_signals.h). A bus error that another namespace's pods met on the node too is the node's fault.
  std::map<std::string, std::set<std::string>> bus_error_namespaces;
  // A job whose pods were lost with their nodes more than this many times stops, Failed with reason
  // NodeLossLimitExceeded, instead of recreating them for ever (decide/lost_pods.h); 0: no bound.
  int node_loss_limit = 100;
};

// A notice for node 0's rendezvous (contract/notice.h): the launcher of pod `pod` runs on a node going away.
struct RendezvousRelease {
  contract::ReleaseNotice notice;
  std::string pod;
  std::string pod_uid;  // the act layer sends one notice a pod (node 0 keeps it)
  std::string node;
  bool operator==(const RendezvousRelease&) const = default;
};

struct Plan {
  // Every request the act layer makes, in the order it makes them (decide.cc: plan_writes): the namespace's Secret
  // kubedist-rendezvous and the Service, the integrations' objects and J-rdzv, the pods of create_ranks (rendered
  // for the job as it runs), the job's status when it changed, the pods of delete_pods, the job itself (its
  // ttlSecondsAfterFinished has passed). The status comes before the deletions: a deleted pod is gone from what
  // the next pass sees, so a restart counted for it must be stored first.
  std::vector<Write> writes;
  bool job_rdzv_secret = false;           // new pods mount the job's own Secret J-rdzv, as its running pods do
  std::vector<int> create_ranks;          // ascending, so node 0 comes first
  bool creates_held = false;              // pods are missing but wait for the backoff after a refusal (pod_refused)
  std::vector<PodDeletion> delete_pods;
  Status status;                          // the status to write (unchanged == nothing to write)
  // The status counts a pod that vanished unseen (a node_lost restart) and create_ranks recreates it: plan_writes
  // puts the status before the pods' creates, since once its replacement exists nothing shows that the pod was lost.
  bool status_before_creates = false;
  std::vector<Event> events;              // one per decision
  // Sent to node 0's rendezvous after the writes, in this order (spares first): launchers whose nodes go away.
  std::vector<RendezvousRelease> releases;
  std::optional<int64_t> requeue_after_s; // a timer (deadline, TTL) the reconciler must come back for
};

// The job's pods are those carrying its job-name label; pods owned by another controller are ignored.
// service_exists: whether Service J exists (owned by the job).
Plan decide(const TrainingJob& job, const std::vector<PodFacts>& pods, bool service_exists, UnixSeconds now);
Plan decide(const TrainingJob& job, const Observed& observed, UnixSeconds now);

}  // namespace kubedist::trainingjob
