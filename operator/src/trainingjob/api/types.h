// The TrainingJob API (kubedist.io/v1alpha1) and the observed pod facts the operator decides from.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/restart_cause.h"
#include "common/time.h"
#include "contract/status_line.h"
#include "trainingjob/api/job_state.h"

namespace kubedist::trainingjob {

inline constexpr const char* kGroup = "kubedist.io";
inline constexpr const char* kVersion = "v1alpha1";
inline constexpr const char* kApiVersion = "kubedist.io/v1alpha1";
inline constexpr const char* kKind = "TrainingJob";
inline constexpr const char* kPlural = "trainingjobs";
inline constexpr const char* kJobNameLabel = "kubedist.io/job-name";
inline constexpr const char* kNodeRankLabel = "kubedist.io/node-rank";
// The taint an administrator puts on a node confirmed shut down (Kubernetes' non-graceful node shutdown).
inline constexpr const char* kOutOfServiceTaint = "node.kubernetes.io/out-of-service";
// The taint (NoSchedule) the operator puts on a node a job came to avoid, when told to (--taint-avoided-nodes): no new
// pod of any job lands there until an administrator removes it.
inline constexpr const char* kAvoidedTaint = "kubedist.io/avoided";
// The pod volume of a job's own rendezvous Secret J-rdzv (render.h), mounted only by a job an earlier operator gave
// one or whose namespace key changed while it ran; the others derive their secret from the namespace's (below).
inline constexpr const char* kRdzvSecretVolume = "kubedist-rdzv";  // a job's own Secret J-rdzv (earlier operators)
// The namespace's rendezvous Secret (one for all its jobs, whose secrets are derived from it: contract/signed_line.h),
// also the name of the volume that mounts it into the launcher init container, and its label (value "namespace").
inline constexpr const char* kNamespaceRdzvSecret = "kubedist-rendezvous";
inline constexpr const char* kNamespaceRdzvLabel = "kubedist.io/rendezvous-secret";
// The pod annotation naming the namespace key its init container derives from: a fingerprint (rendezvous/
// rdzv_auth.h), never the key. A job whose running pods' key is no longer the namespace's is moved to a Secret of
// its own (decide/rendezvous.h).
inline constexpr const char* kRdzvKeyAnnotation = "kubedist.io/rendezvous-key";
inline constexpr size_t kMaxTopologyDomain = 64;  // of a pod's topology-domain annotation, kept (a label value: 63)
// spec.placement.topologyKey: the downward API volume that projects the pod's topology-domain annotation into the
// trainer, at kPodInfoDir/kTopologyDomainFileName (the launcher's KUBEDIST_TOPOLOGY_DOMAIN_FILE).
inline constexpr const char* kPodInfoVolume = "kubedist-podinfo";
inline constexpr const char* kPodInfoDir = "/kubedist/podinfo";
inline constexpr const char* kCheckpointVolume = "kubedist-checkpoint";  // spec.checkpoint's PVC in the trainer
inline constexpr const char* kTopologyDomainFileName = "topology-domain";
inline constexpr const char* kRendezvousSecretChanged = "RendezvousSecretChanged";  // the Event's reason
// The Event's and the condition PodsRefused's reason when the namespace key is refused (decide/rendezvous.h).
inline constexpr const char* kRendezvousKeyInvalid = "RendezvousKeyInvalid";
// What the operator keeps of a container's termination message (Kubernetes keeps up to 4096 bytes): its first line.
inline constexpr size_t kMaxTerminationMessage = 1024;
inline constexpr size_t kMaxSchedulingMessage = 512;

// Why a restart happened: the keys of status.restartsByReason and the reason label of kubedist_restarts_total. The
// launchers' causes have the names of their STATUS line (contract/restart_cause.h); pod_failure is the operator's.
inline constexpr const char* kRestartWorkerCrash = contract::kCauseWorkerCrash;  // launchers restarted in place
inline constexpr const char* kRestartPodFailure = "pod_failure";  // a pod failed retryably and was recreated
inline constexpr const char* kRestartNodeLost = contract::kCauseNodeLost;  // a pod vanished (node gone, evicted...)
inline constexpr const char* kRestartScale = contract::kCauseScale;        // the group re-formed for a new size
inline constexpr const char* kRestartHang = contract::kCauseHang;  // the launchers restarted a group that hung

enum class RestartPolicy { kOnFailure, kNever, kExitCode };
enum class CleanPodPolicy { kRunning, kAll, kNone };
// spec.placement.onePodPerNode: whether the job's pods go to distinct nodes (kubernetes.io/hostname), as a
// preference of the scheduler's (the default), a requirement, or not at all.
enum class OnePodPerNode { kPreferred, kRequired, kNone };

// nprocPerNode: a positive count, or one of the launcher's modes "auto", "gpu", "cpu".
struct NprocPerNode {
  int count = 0;             // > 0 when given as a number
  std::string mode = "auto";  // used when count == 0
  std::string str() const { return count > 0 ? std::to_string(count) : mode; }
};

// A job's pod template, parsed once and shared by every copy of the job (the informer's, each reconcile's, the
// poller's): immutable, so a copy costs a reference count instead of a deep copy of the tree.
class SharedJson {
 public:
  SharedJson() : v_(null()) {}
  explicit SharedJson(nlohmann::json v) : v_(std::make_shared<const nlohmann::json>(std::move(v))) {}
  const nlohmann::json& operator*() const { return *v_; }
  const nlohmann::json* operator->() const { return v_.get(); }
  // Whether two copies share one tree (a copy of the job, not a parse of the same text).
  bool same(const SharedJson& o) const { return v_ == o.v_; }

 private:
  static const std::shared_ptr<const nlohmann::json>& null() {
    static const auto kNull = std::make_shared<const nlohmann::json>();
    return kNull;
  }
  std::shared_ptr<const nlohmann::json> v_;
};

// spec.checkpoint: where the kubedist.checkpoint helper saves (a PVC mounted in the trainer) and on what schedule.
struct CheckpointSpec {
  std::string claim_name;
  std::string mount_path = "/checkpoints";
  int64_t every_steps = 0;  // 0: unset (the script or kubedist asks)
  int save_timeout_s = 0;   // 0: no bound
  int keep = 2;
  bool operator==(const CheckpointSpec&) const = default;
};

struct Spec {
  int replicas = 1;
  int min_replicas = 1;
  int max_replicas = 1;
  // spec.spares: pods J-spare-<i> that wait in the rendezvous, with no workers, to take a lost member's place.
  int spares = 0;
  NprocPerNode nproc_per_node;
  int master_port = 29500;
  int max_restarts = 3;
  int backoff_limit = 6;
  RestartPolicy restart_policy = RestartPolicy::kOnFailure;
  bool suspend = false;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int64_t> hang_timeout_s;  // spec.hangTimeout: the launchers restart a group without a step this long
  std::optional<int64_t> ttl_seconds_after_finished;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kRunning;
  // spec.scheduling: how the pods are placed, as switches of the integrations that place them (gang: true asks for
  // gang scheduling, gang/); a switch the job leaves unset is absent (the integration's default).
  std::map<std::string, bool> scheduling;
  OnePodPerNode one_pod_per_node = OnePodPerNode::kPreferred;
  // spec.placement.topologyKey: a node label (a rack, an NVLink domain) whose domain the job's pods, spares included,
  // prefer to share; empty: none.
  std::string topology_key;
  std::optional<CheckpointSpec> checkpoint;
  SharedJson template_;      // core/v1 PodTemplateSpec, validated to have containers with a command
  int trainer_index = 0;     // index of the container that runs under the launcher
};

// status.checkpoint: the step of the newest complete checkpoint, when node 0 heard of it, why it was taken, and how
// many ranks wrote it.
struct CheckpointStatus {
  int64_t step = 0;
  std::string time;  // RFC 3339
  std::string reason;
  int ranks = 0;
  bool operator==(const CheckpointStatus&) const = default;
};

struct Condition {
  ConditionType type = ConditionType::kCreated;
  std::string status;  // "True" | "False"
  std::string reason;
  std::string message;
  std::string last_transition_time;  // RFC 3339
  bool operator==(const Condition&) const = default;
};

// What the operator last folded in from the rendezvous service on node 0 (status.launcher): the launcher's own
// counters restart from zero when node 0's pod is replaced, so they are remembered with the pod they came from.
struct LauncherSeen {
  std::string pod_uid;                            // node 0's pod whose launcher reported these counts
  std::map<std::string, int> restarts_by_reason;  // its counts as last folded into Status::restarts_by_reason
  // Pod failures and losses the operator counted whose group re-form the launchers will report too (as node_lost
  // or scale): that many of their next node_lost/scale restarts are the same incidents, not new ones.
  int absorb = 0;
  // The other order: node_lost restarts node 0's launcher reported (and the operator counted) before the operator
  // saw a pod lost. A pod loss the operator sees within kPrepaidWindowS of that report is the same incident.
  // From launchers that name the nodes they lost (STATUS lost=[...]): prepaid_nodes, the node ranks of those
  // restarts, matched to the pod the operator later sees lost however late (its node's NotReady grace can take
  // minutes), and dropped once the launchers no longer report that rank lost (it joined again). From older
  // launchers: prepaid, a count matched to a pod loss seen within kPrepaidWindowS of prepaid_at.
  std::vector<int> prepaid_nodes;
  int prepaid = 0;
  std::string prepaid_at;  // RFC 3339: when the latest of them was counted
  // Goodput from node-0 pods before this one (whose launcher counts from zero): their productive and lost time.
  int64_t busy_before_ms = 0;
  int64_t lost_before_ms = 0;
  bool operator==(const LauncherSeen&) const = default;
};

// The elastic size the operator aims at (status.elastic), below spec.replicas while pods cannot be placed.
struct ElasticStatus {
  int target_replicas = 0;   // 0: not set (spec.replicas)
  std::string reason;        // why the target is what it is
  std::string last_change;   // RFC 3339: when the target last changed (growth is retried a grace period later)
  int spec_replicas = 0;     // spec.replicas the target was decided for; a new spec.replicas starts afresh
  bool operator==(const ElasticStatus&) const = default;
};

// The failure that ended a pod most recently, as its trainer container reported it: what kubectl describe tj shows
// first when asking why a job restarted or failed.
struct LastFailure {
  std::string time;   // RFC 3339: when the trainer container ended (else when the operator saw it)
  std::string pod;
  std::string node;
  std::optional<int> exit_code;
  std::string reason;   // the container's or the pod's termination reason (Error, OOMKilled, Evicted, ...)
  std::string message;  // the container's termination message: the launcher's one-line summary of the failed worker
  bool operator==(const LastFailure&) const = default;
};

// The rank the launchers found persistently slower than the others (status.progress.slowestRank).
struct SlowestRank {
  int rank = 0;
  std::string pod;   // J-node-<its node rank>
  std::string node;  // the pod's spec.nodeName
  double step_seconds = 0;
  double ratio = 0;  // its step time over the median of the other ranks'
  bool operator==(const SlowestRank&) const = default;
};

// How far the job is (status.progress), from what its workers report through node 0's launcher.
struct ProgressStatus {
  int64_t step = 0;
  std::optional<int64_t> total_steps;
  std::optional<int> percent;  // whole percent of total_steps
  std::optional<int64_t> epoch;
  std::optional<int64_t> samples;
  double steps_per_second = 0;
  std::map<std::string, double> metrics;
  std::string summary;                    // "24% (240/1000)" or "step 240": kubectl get tj's PROGRESS
  std::string last_step_time;             // RFC 3339
  std::string estimated_completion_time;  // RFC 3339: kubectl get tj's ETA; empty without total or rate
  std::optional<SlowestRank> slowest_rank;
  std::string started_at;  // RFC 3339: when the job's first pod started (goodput's wall time starts there)
  double productive_seconds = 0;  // making steps
  double lost_seconds = 0;        // from a restart, re-form or hang to the next step
  std::optional<double> goodput;  // productive / wall time since started_at
  bool operator==(const ProgressStatus&) const = default;
};

struct Status {
  JobPhase phase = JobPhase::kNone;  // kNone until first written
  std::vector<Condition> conditions;
  int replicas = 0;
  int ready_replicas = 0;
  int world_size = 0;
  int restarts = 0;                                // the sum of restarts_by_reason
  std::map<std::string, int> restarts_by_reason;  // keys kRestart*
  int64_t observed_generation = 0;
  std::string start_time;       // RFC 3339, empty when unset
  std::string completion_time;  // RFC 3339, empty when unset
  std::string selector;
  LauncherSeen launcher;
  ElasticStatus elastic;
  std::vector<std::string> lost_pods;  // uids of pods already counted as node_lost that still exist
  std::vector<std::string> failed_pods;  // uids of failed pods already counted as pod_failure that still exist
  std::optional<LastFailure> last_failure;
  std::optional<ProgressStatus> progress;
  // status.rendezvousSecret: the job's own Secret J-rdzv, set when the namespace key its running pods derive from
  // was deleted or replaced (decide/rendezvous.h); its new pods mount it from then on. Empty: the namespace key.
  std::string rendezvous_secret;
  // status.rendezvousSecretKey: the fingerprint of the namespace key rendezvous_secret was derived from, so that the
  // operator can make J-rdzv again before new pods mount it (decide/rendezvous.h); empty: unknown (an earlier one's).
  std::string rendezvous_secret_key;
  // status.rendezvousKeyLost: the fingerprint of a namespace key the job's running pods derive from that changed
  // before the operator saw it (so it cannot keep it for them), said once in an Event; cleared once no pod uses it.
  std::string rendezvous_key_lost;
  // status.nodeFailures: node -> failures of the job's pods there not caused by the training code (a signal, OOM,
  // a pod lost with its node or evicted by it, a hang), each counted with the failure itself (decide/bad_nodes.h).
  std::map<std::string, int> node_failures;
  // status.avoidedNodes: the nodes that reached the operator's --avoid-node-after-failures; new pods avoid them.
  std::vector<std::string> avoided_nodes;
  // status.spares: the job's spare pods that exist (not standing in); status.sparesReady: of them, those node 0's
  // rendezvous reports waiting; status.standIns: node rank (slot) -> the node rank of the pod that took its place.
  int spares = 0;
  int spares_ready = 0;
  std::map<int, int> stand_ins;
  // status.checkpoint: the newest complete checkpoint the job's rank 0 reported (the kubedist.checkpoint helper).
  std::optional<CheckpointStatus> checkpoint{};
  bool operator==(const Status&) const = default;
};

struct TrainingJob {
  std::string name;
  std::string ns;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  bool deleting = false;  // metadata.deletionTimestamp is set
  // metadata.labels: an integration may read its own there (kueue/: the queue a job waits in).
  std::map<std::string, std::string> labels;
  Spec spec;
  std::string spec_error;  // non-empty: the spec is invalid and this says why; spec holds defaults
  Status status;           // as last written
  // Two observations are the same object version when uid and resourceVersion agree.
  bool operator==(const TrainingJob& o) const { return uid == o.uid && resource_version == o.resource_version; }
};

// What the operator needs to know of a Service: that it exists and who controls it.
struct ServiceFacts {
  std::string ns;
  std::string name;
  std::string owner_uid;
  bool operator==(const ServiceFacts&) const = default;
};

// A rendezvous Secret, the namespace's kubedist-rendezvous or a job's own J-rdzv (render.h), as the cache keeps it.
struct SecretFacts {
  std::string ns;
  std::string name;
  std::string owner_uid;
  std::string job_name;     // the job-name label (J-rdzv only)
  std::string secret_b64;   // data["secret"], base64 as the API serves it
  bool operator==(const SecretFacts&) const = default;
};

// What the operator needs to know about one of a job's pods, small so that thousands fit in the cache.
struct PodFacts {
  std::string ns;
  std::string name;
  std::string job_name;   // the job-name label
  std::string uid;
  std::string owner_uid;  // uid of the controller owner reference, empty if none
  int rank = -1;          // from the node-rank label; -1 if absent or malformed
  std::string phase;      // Pending | Running | Succeeded | Failed | Unknown
  bool deleting = false;  // metadata.deletionTimestamp is set
  bool ready = false;     // the Ready condition is True
  std::optional<int> exit_code;   // the trainer container's terminated exit code, if any
  std::string failure_reason;     // the pod's or the trainer container's termination reason
  std::string finished_at;        // the trainer container's terminated.finishedAt
  std::string termination_message;  // its terminated.message: first line, at most kMaxTerminationMessage bytes
  std::string start_time;         // status.startTime
  std::string node_name;          // spec.nodeName, empty until scheduled
  std::string pod_ip;             // status.podIP
  std::string unschedulable_since;  // RFC 3339: PodScheduled is False with reason Unschedulable since then
  // That condition's message (the scheduler's why), first line, at most kMaxSchedulingMessage bytes.
  std::string unschedulable_message{};
  bool rdzv_secret = false;       // mounts a rendezvous Secret (its launcher signs the rendezvous)
  bool job_rdzv_secret = false;   // that Secret is the job's own J-rdzv (an earlier operator's), not the namespace's
  std::string rdzv_key;           // annotation kRdzvKeyAnnotation: the fingerprint of the namespace key it derives from
  // annotation contract::kTopologyDomainAnnotation: its node's topology domain as the operator wrote it (unset: not
  // written yet; "-": the node has no such label)
  std::optional<std::string> topology_domain{};  // at most kMaxTopologyDomain bytes kept
  bool operator==(const PodFacts&) const = default;
};

// What the operator needs to know about a node: whether pods on it are still alive.
struct NodeFacts {
  std::string name;
  bool ready = true;             // the Ready condition is True
  std::string not_ready_since;   // RFC 3339: Ready's lastTransitionTime when it is not True
  bool unschedulable = false;    // cordoned
  std::string schedulable_since;  // RFC 3339: the later of creation and turning Ready, when ready (new capacity)
  // Taint node.kubernetes.io/out-of-service: an administrator says the node is shut down and its pods are dead.
  bool out_of_service = false;
  bool avoided_taint = false;                       // has taint kAvoidedTaint
  std::string resource_version{};                   // for a write of its taints decided on this version
  nlohmann::json taints = nlohmann::json::array();  // spec.taints as served (kept only when not empty)
  bool operator==(const NodeFacts&) const = default;
};

// The latest STATUS answer of the rendezvous service on a job's node 0 (see launcher_poller.h).
struct LauncherReport {
  std::string pod_uid;  // the node-0 pod that answered
  int round = -1;
  int restarts = 0;
  std::map<std::string, int> restarts_by_reason;  // worker_crash, node_lost, scale
  int nodes = 0;
  int world_size = 0;
  std::string phase;  // gathering | running | over
  std::string run_id;  // the rendezvous' run id (the job's name unless the user set another); "" from old launchers
  std::optional<contract::StatusProgress> progress;  // once a worker reported a step
  UnixSeconds polled_at = 0;  // when node 0 answered (its progress' ages count back from here)
  std::vector<int> lost_nodes;  // node ranks lost and not back (always empty from launchers older than the field)
  // The counts node 0's rendezvous took over from the node 0 before it (contract::StatusReport::carried), included
  // in restarts_by_reason; nullopt from launchers older than the field, whose counts start from zero.
  std::optional<std::map<std::string, int>> carried;
  std::vector<int> spares;        // node ranks of the spares waiting (contract::StatusReport::spares)
  std::map<int, int> stand_ins;   // slot -> node rank of the spare standing in
  std::optional<contract::StatusCheckpoint> checkpoint{};  // the newest complete one rank 0 reported
  bool operator==(const LauncherReport&) const = default;
};

const char* to_string(RestartPolicy p);
const char* to_string(CleanPodPolicy p);
const char* to_string(OnePodPerNode p);

}  // namespace kubedist::trainingjob
