#include "trainingjob/kueue/facts.h"

#include <set>

#include "trainingjob/api/facts.h"
#include "trainingjob/api/json_fields.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

bool is_true(const json* c) { return c != nullptr && string_at(*c, "status") == "True"; }

std::string label(const TrainingJob& job, const char* key) {
  auto it = job.labels.find(key);
  return it != job.labels.end() ? it->second : std::string();
}

}  // namespace

std::string queue_name(const TrainingJob& job) { return label(job, kQueueNameLabel); }
std::string priority_class(const TrainingJob& job) { return label(job, kPriorityClassLabel); }

KueueWorkloadFacts parse_kueue_workload_facts(const json& wl) {
  KueueWorkloadFacts f;
  const json md = wl.value("metadata", json::object());
  f.ns = string_at(md, "namespace");
  f.name = string_at(md, "name");
  f.resource_version = string_at(md, "resourceVersion");
  f.owner_uid = controller_uid(wl);
  const json spec = wl.value("spec", json::object());
  f.queue_name = string_at(spec, "queueName");
  if (spec.is_object() && spec.contains("active") && spec["active"].is_boolean()) f.active = spec["active"].get<bool>();
  if (spec.is_object() && spec.contains("podSets") && spec["podSets"].is_array()) {
    for (const auto& ps : spec["podSets"]) {
      if (string_at(ps, "name") != kKueuePodSet) continue;
      f.count = int_at(ps, "count");
      f.min_count = int_at(ps, "minCount");
    }
  }
  const json st = wl.value("status", json::object());
  if (st.is_object() && st.contains("conditions") && st["conditions"].is_array()) f.conditions = st["conditions"];
  const json* quota = condition_at(f.conditions, "QuotaReserved");
  const json* admitted = condition_at(f.conditions, "Admitted");
  const json* evicted = condition_at(f.conditions, "Evicted");
  const json* requeued = condition_at(f.conditions, "Requeued");
  f.quota_reserved = is_true(quota);
  f.admitted = is_true(admitted);
  f.evicted = is_true(evicted);
  f.finished = is_true(condition_at(f.conditions, "Finished"));
  const json* why = f.evicted ? evicted : (quota != nullptr && !f.quota_reserved ? quota : nullptr);
  if (why != nullptr) {
    f.reason = string_at(*why, "reason");
    f.message = string_at(*why, "message");
  }
  if (f.admitted) f.admitted_at = string_at(*admitted, "lastTransitionTime");
  f.waiting_since = requeued != nullptr ? string_at(*requeued, "lastTransitionTime") : string_at(md, "creationTimestamp");
  if (const json* adm = object_at(st, "admission")) {
    f.cluster_queue = string_at(*adm, "clusterQueue");
    std::set<std::string> flavors;
    for (const auto& a : adm->value("podSetAssignments", json::array())) {
      if (string_at(a, "name") != kKueuePodSet) continue;
      f.admitted_count = a.contains("count") ? int_at(a, "count") : f.count;
      if (const json* fl = object_at(a, "flavors")) {
        for (const auto& [resource, flavor] : fl->items()) {
          if (flavor.is_string()) flavors.insert(flavor.get<std::string>());
        }
      }
    }
    f.flavors.assign(flavors.begin(), flavors.end());
  }
  return f;
}

FlavorFacts parse_flavor_facts(const json& flavor) {
  FlavorFacts f;
  f.name = string_at(flavor.value("metadata", json::object()), "name");
  const json spec = flavor.value("spec", json::object());
  if (const json* labels = object_at(spec, "nodeLabels")) {
    for (const auto& [k, v] : labels->items()) {
      if (v.is_string()) f.node_labels[k] = v.get<std::string>();
    }
  }
  if (spec.is_object() && spec.contains("tolerations") && spec["tolerations"].is_array()) {
    f.tolerations = spec["tolerations"];
  }
  return f;
}

PriorityClassFacts parse_priority_class_facts(const json& pc) {
  return {string_at(pc.value("metadata", json::object()), "name"), int_at(pc, "value")};
}

}  // namespace kubedist::trainingjob
