// Kueue admission of TrainingJobs: the facts the operator reads from Kueue's objects, the Workload it writes for a
// queued job, and the pure decision of what the job may run (nothing, or the admitted nodes on their flavors).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// A job carrying this label waits for Kueue (the LocalQueue it names) before any pod is created.
inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
// Optional: a WorkloadPriorityClass whose value becomes the Workload's priority (Kueue's preemption order).
inline constexpr const char* kPriorityClassLabel = "kueue.x-k8s.io/priority-class";
inline constexpr const char* kKueueApiVersion = "kueue.x-k8s.io/v1beta2";
inline std::string kueue_api_path() { return std::string("/apis/") + kKueueApiVersion; }
// The Workload's one pod set: the job's node pods.
inline constexpr const char* kKueuePodSet = "nodes";

// Kueue's Workload J (kueue.x-k8s.io/v1beta2), as far as the operator needs it.
struct KueueWorkloadFacts {
  std::string ns;
  std::string name;
  std::string owner_uid;
  std::string resource_version;
  std::string queue_name;
  int count = 0;           // podSets[nodes].count: the nodes asked for (spec.replicas)
  int min_count = 0;       // podSets[nodes].minCount (partial admission); 0 when absent
  bool active = true;      // spec.active
  bool quota_reserved = false;
  bool admitted = false;
  bool evicted = false;
  bool finished = false;
  std::string reason;      // why: Evicted's reason when evicted, else QuotaReserved's when it is False
  std::string message;     // and its message
  std::string waiting_since;  // RFC 3339: when the workload last began to wait (creation, or its last requeue)
  std::string admitted_at;    // RFC 3339: Admitted's lastTransitionTime while admitted
  std::string cluster_queue;  // status.admission.clusterQueue
  int admitted_count = 0;     // the nodes pod set's admitted count
  std::vector<std::string> flavors;  // the flavors assigned to the nodes pod set, sorted, unique
  nlohmann::json conditions = nlohmann::json::array();  // status.conditions as served: a status write keeps the rest
  bool operator==(const KueueWorkloadFacts&) const = default;
};

// A ResourceFlavor: what pods admitted on it must carry to land on its nodes.
struct FlavorFacts {
  std::string name;
  std::map<std::string, std::string> node_labels;
  nlohmann::json tolerations = nlohmann::json::array();
  bool operator==(const FlavorFacts&) const = default;
};

// A WorkloadPriorityClass: its value.
struct PriorityClassFacts {
  std::string name;
  int value = 0;
  bool operator==(const PriorityClassFacts&) const = default;
};

KueueWorkloadFacts parse_kueue_workload_facts(const nlohmann::json& workload);
FlavorFacts parse_flavor_facts(const nlohmann::json& flavor);
PriorityClassFacts parse_priority_class_facts(const nlohmann::json& priority_class);

// Where the admitted pods go: the admitted flavors' node labels (into nodeSelector) and tolerations.
struct Placement {
  std::map<std::string, std::string> node_selector;
  nlohmann::json tolerations = nlohmann::json::array();
  bool operator==(const Placement&) const = default;
};

// Adds the placement to a rendered pod: the node selector (a flavor's label wins over the template's same key, as
// the pod must land on the flavor's nodes) and the tolerations.
void apply_placement(nlohmann::json& pod, const Placement& placement);

// What Kueue says about a queued job, as decide() acts on it.
struct Admission {
  enum class State {
    kUnavailable,  // the operator does not see Kueue's API: the job waits, saying so
    kConflict,     // a Workload of the job's name belongs to something else
    kCreate,       // no Workload yet: create it, wait
    kRecreate,     // the Workload asks for another size (spec changed): delete it, wait, create it anew
    kWaiting,      // queued: no quota reserved yet
    kEvicted,      // Kueue evicted or preempted it: remove the pods, then give the quota back
    kAdmitted,     // run admitted_count nodes with the placement
  };
  State state = State::kWaiting;
  std::string reason;   // for the Admitted condition
  std::string message;
  int admitted_count = 0;
  Placement placement;
  std::optional<PriorityClassFacts> priority;  // kCreate: the job's WorkloadPriorityClass, when it names one
};

// What decide_admission reads besides the job (Observed holds it).
struct KueueObserved {
  bool api = false;  // the operator watches Kueue's Workloads, ResourceFlavors and WorkloadPriorityClasses
  std::optional<KueueWorkloadFacts> workload;  // Workload J
  std::vector<FlavorFacts> flavors;
  std::vector<PriorityClassFacts> priorities;
};

// The decision for a queued (job.queue_name set), unfinished job. A flavor or priority class the caches do not
// show (yet) keeps the job waiting with a reason, rather than placing pods wrongly or queueing at the wrong priority.
Admission decide_admission(const TrainingJob& job, const KueueObserved& kueue);

// The job as it runs on `nodes` admitted nodes (partial admission, fewer than spec.replicas): replicas and
// maxReplicas are capped, so that decide() and the pods' NNODES agree on the size.
TrainingJob with_admitted_nodes(const TrainingJob& job, int nodes);

// Workload J for a queued job: one pod set "nodes" of the job's pod template (limits copied to missing requests, as
// the API server does for pods, since Kueue counts requests), count spec.replicas, minCount spec.minReplicas when
// smaller (partial admission), the queue, and the priority (value of the job's WorkloadPriorityClass) if any.
nlohmann::json render_kueue_workload(const TrainingJob& job, std::optional<PriorityClassFacts> priority);

// A status write to Workload J, as Kueue's own job integrations make them.
struct KueueStatusWrite {
  enum class Kind {
    kReleaseQuota,  // after an eviction, once the pods are gone: no admission, QuotaReserved False, Requeued
    kFinish,        // the job finished: Finished True, and Kueue releases the quota
  };
  Kind kind = Kind::kFinish;
  std::string reason;   // Finished: Succeeded | Failed; ReleaseQuota: the eviction's reason
  std::string message;
  bool operator==(const KueueStatusWrite&) const = default;
};

// The merge patch of Workload J's status for a write: it carries the workload's resourceVersion (a concurrent
// write by Kueue makes it fail with a conflict instead of being lost) and the whole conditions list, changed.
nlohmann::json kueue_status_patch(const KueueWorkloadFacts& workload, const KueueStatusWrite& write, UnixSeconds now);

}  // namespace kubedist::trainingjob
