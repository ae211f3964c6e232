// What Kueue admission reads: a queued job's labels, Kueue's Workload, ResourceFlavors and WorkloadPriorityClasses,
// and its facts about a job for decide().
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"
#include "trainingjob/decide/hook.h"

namespace kubedist::trainingjob {

// A job carrying this label waits for Kueue (the LocalQueue it names) before any pod is created.
inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
// Optional: a WorkloadPriorityClass whose value becomes the Workload's priority (Kueue's preemption order).
inline constexpr const char* kPriorityClassLabel = "kueue.x-k8s.io/priority-class";
inline constexpr const char* kKueueApiVersion = "kueue.x-k8s.io/v1beta2";
inline std::string kueue_api_path() { return std::string("/apis/") + kKueueApiVersion; }
// The Workload's pod set of the job's node pods.
inline constexpr const char* kKueuePodSet = "nodes";
// The pod set of the job's spec.spares (render.cc), admitted with the nodes'.
inline constexpr const char* kKueueSparesPodSet = "spares";

// The LocalQueue the job waits in (label kueue.x-k8s.io/queue-name), "" when it is not queued; and its
// WorkloadPriorityClass (label kueue.x-k8s.io/priority-class), "" for none.
std::string queue_name(const TrainingJob& job);
std::string priority_class(const TrainingJob& job);

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
inline std::string job_key_of(const KueueWorkloadFacts& w) { return w.ns + "/" + w.name; }

// Kueue's view of a queued job (decide/hook.h).
struct KueueFacts final : IntegrationFacts {
  bool api = false;  // the operator watches Kueue's Workloads, ResourceFlavors and WorkloadPriorityClasses
  std::optional<KueueWorkloadFacts> workload;  // Workload J
  std::vector<FlavorFacts> flavors;
  std::vector<PriorityClassFacts> priorities;
  // A hook for a queued job (kueue/decide.h); null for any other.
  std::unique_ptr<Hook> hook(const TrainingJob& job) const override;
};

}  // namespace kubedist::trainingjob
