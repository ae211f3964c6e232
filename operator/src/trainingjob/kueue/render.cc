#include "trainingjob/kueue/render.h"

#include <algorithm>

#include "trainingjob/api/json_fields.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

// Kueue counts a container's requests; a limit without a request is a request of the same amount for a pod.
void limits_as_requests(json& containers) {
  if (!containers.is_array()) return;
  for (auto& c : containers) {
    if (!c.is_object()) continue;
    const json* res = object_at(c, "resources");
    const json* limits = res != nullptr ? object_at(*res, "limits") : nullptr;
    if (limits == nullptr) continue;
    json requests = res->value("requests", json::object());
    if (!requests.is_object()) requests = json::object();
    for (const auto& [name, amount] : limits->items()) {
      if (!requests.contains(name)) requests[name] = amount;
    }
    c["resources"]["requests"] = requests;
  }
}

// Sets a condition in a served conditions list the way the API's conventions want it: the transition time moves
// only when the status changes.
void set_served_condition(json& conditions, const std::string& type, const std::string& status, const std::string& reason,
                   const std::string& message, UnixSeconds now) {
  if (!conditions.is_array()) conditions = json::array();
  for (auto& c : conditions) {
    if (!c.is_object() || string_at(c, "type") != type) continue;
    if (string_at(c, "status") != status) c["lastTransitionTime"] = format_rfc3339(now);
    c["status"] = status;
    c["reason"] = reason;
    c["message"] = message;
    return;
  }
  conditions.push_back({{"type", type}, {"status", status}, {"reason", reason}, {"message", message},
                        {"lastTransitionTime", format_rfc3339(now)}});
}

}  // namespace

void apply_placement(json& pod, const Placement& placement) {
  json& spec = pod["spec"];
  if (!placement.node_selector.empty()) {
    if (!spec.contains("nodeSelector") || !spec["nodeSelector"].is_object()) spec["nodeSelector"] = json::object();
    for (const auto& [k, v] : placement.node_selector) spec["nodeSelector"][k] = v;
  }
  if (!placement.tolerations.empty()) {
    if (!spec.contains("tolerations") || !spec["tolerations"].is_array()) spec["tolerations"] = json::array();
    for (const auto& t : placement.tolerations) {
      if (std::find(spec["tolerations"].begin(), spec["tolerations"].end(), t) == spec["tolerations"].end()) {
        spec["tolerations"].push_back(t);
      }
    }
  }
}

json render_kueue_workload(const TrainingJob& job, std::optional<PriorityClassFacts> priority) {
  json tmpl = *job.spec.template_;
  json& pod_spec = tmpl["spec"];
  limits_as_requests(pod_spec["containers"]);
  if (pod_spec.contains("initContainers")) limits_as_requests(pod_spec["initContainers"]);
  json pod_set = {{"name", kKueuePodSet}, {"count", job.spec.replicas}, {"template", tmpl}};
  if (job.spec.min_replicas < job.spec.replicas) pod_set["minCount"] = job.spec.min_replicas;
  json pod_sets = json::array({pod_set});
  // Spares are part of what the job asks for: admitted (and charged to the quota) with it, never taken unasked.
  if (job.spec.spares > 0) pod_sets.push_back({{"name", kKueueSparesPodSet}, {"count", job.spec.spares}, {"template", tmpl}});
  json spec = {{"queueName", queue_name(job)}, {"podSets", pod_sets}};
  if (priority) {
    spec["priorityClassRef"] = {{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", priority->name}};
    spec["priority"] = priority->value;
  }
  return {{"apiVersion", kKueueApiVersion},
          {"kind", "Workload"},
          {"metadata", owned_metadata(job)},
          {"spec", spec}};
}

json kueue_status_patch(const KueueWorkloadFacts& wl, const KueueStatusWrite& write, UnixSeconds now) {
  json conditions = wl.conditions;
  json status = json::object();
  if (write.kind == KueueStatusWrite::Kind::kFinish) {
    set_served_condition(conditions, "Finished", "True", write.reason, write.message, now);
  } else {
    // What Kueue's job integrations do once an evicted job has stopped: the quota goes back, and a preempted
    // workload is marked requeued so that Kueue admits it again when it can.
    const bool requeued = write.reason == "Preempted" || write.reason == "NodeFailures";
    set_served_condition(conditions, "Requeued", requeued ? "True" : "False", write.reason, write.message, now);
    set_served_condition(conditions, "QuotaReserved", "False", "Pending", write.message, now);
    if (condition_at(conditions, "Admitted") != nullptr) {
      set_served_condition(conditions, "Admitted", "False", "NoReservation", "The workload has no reservation", now);
    }
    status["admission"] = nullptr;
  }
  status["conditions"] = conditions;
  return {{"metadata", {{"resourceVersion", wl.resource_version}}}, {"status", status}};
}

}  // namespace kubedist::trainingjob
