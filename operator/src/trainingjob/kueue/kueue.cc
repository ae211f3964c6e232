#include "trainingjob/kueue/kueue.h"

#include <algorithm>
#include <set>

#include "trainingjob/api/json_fields.h"
#include "trainingjob/api/parse.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

int integer(const json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int>() : 0;
}

const json* object_at(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? &*it : nullptr;
}

const json* condition(const json& conditions, const std::string& type) {
  if (!conditions.is_array()) return nullptr;
  for (const auto& c : conditions) {
    if (c.is_object() && string_at(c, "type") == type) return &c;
  }
  return nullptr;
}

bool is_true(const json* c) { return c != nullptr && string_at(*c, "status") == "True"; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

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
void set_condition(json& conditions, const std::string& type, const std::string& status, const std::string& reason,
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
      f.count = integer(ps, "count");
      f.min_count = integer(ps, "minCount");
    }
  }
  const json st = wl.value("status", json::object());
  if (st.is_object() && st.contains("conditions") && st["conditions"].is_array()) f.conditions = st["conditions"];
  const json* quota = condition(f.conditions, "QuotaReserved");
  const json* admitted = condition(f.conditions, "Admitted");
  const json* evicted = condition(f.conditions, "Evicted");
  const json* requeued = condition(f.conditions, "Requeued");
  f.quota_reserved = is_true(quota);
  f.admitted = is_true(admitted);
  f.evicted = is_true(evicted);
  f.finished = is_true(condition(f.conditions, "Finished"));
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
      f.admitted_count = a.contains("count") ? integer(a, "count") : f.count;
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
  return {string_at(pc.value("metadata", json::object()), "name"), integer(pc, "value")};
}

Admission decide_admission(const TrainingJob& job, const KueueObserved& kueue) {
  using State = Admission::State;
  Admission a;
  auto waiting = [&](State state, std::string reason, std::string message) {
    a.state = state;
    a.reason = std::move(reason);
    a.message = std::move(message);
    return a;
  };
  const std::string queue = "LocalQueue " + job.queue_name;
  if (!kueue.api) {
    return waiting(State::kUnavailable, "KueueUnavailable",
                   "the job waits for admission by " + queue + ", but the operator sees no Kueue (" +
                       kKueueApiVersion + " Workloads, ResourceFlavors and WorkloadPriorityClasses, or its RBAC " +
                       "to them); it runs once Kueue is installed and the operator restarted");
  }
  if (kueue.workload && kueue.workload->owner_uid != job.uid) {
    return waiting(State::kConflict, "WorkloadConflict",
                   "Kueue Workload " + job.name + " exists but is not this job's: delete it or rename the job");
  }
  const int min_count = job.spec.min_replicas < job.spec.replicas ? job.spec.min_replicas : 0;
  if (!kueue.workload) {
    if (!job.priority_class.empty()) {
      for (const auto& p : kueue.priorities) {
        if (p.name == job.priority_class) a.priority = p;
      }
      if (!a.priority) {
        return waiting(State::kWaiting, "PriorityClassNotFound",
                       "WorkloadPriorityClass " + job.priority_class + " (label " + kPriorityClassLabel +
                           ") does not exist; the job is queued once it does");
      }
    }
    return waiting(State::kCreate, "Queued", "waiting for admission by " + queue);
  }
  const KueueWorkloadFacts& wl = *kueue.workload;
  if (wl.finished) {
    // Finished by Kueue (e.g. it could not start) or by an earlier operator: the job cannot be admitted again.
    return waiting(State::kRecreate, "WorkloadFinished", "Workload " + wl.name + " is finished; queueing anew");
  }
  if (wl.evicted && (wl.quota_reserved || wl.admitted)) {
    return waiting(State::kEvicted, wl.reason.empty() ? "Evicted" : wl.reason,
                   "Kueue evicted the job" + (wl.message.empty() ? std::string() : ": " + wl.message));
  }
  if (wl.count != job.spec.replicas || wl.min_count != min_count || wl.queue_name != job.queue_name) {
    return waiting(State::kRecreate, "SpecChanged",
                   "the job's size or queue changed (Workload asks for " + std::to_string(wl.count) + " nodes in " +
                       wl.queue_name + "); queueing it anew");
  }
  if (!wl.admitted) {
    std::string message = "waiting for admission by " + queue;
    if (!wl.message.empty()) message += ": " + wl.message;
    return waiting(State::kWaiting, wl.reason.empty() ? "Queued" : wl.reason, message);
  }
  std::vector<std::string> missing;
  for (const auto& name : wl.flavors) {
    auto it = std::find_if(kueue.flavors.begin(), kueue.flavors.end(),
                           [&](const FlavorFacts& f) { return f.name == name; });
    if (it == kueue.flavors.end()) {
      missing.push_back(name);
      continue;
    }
    for (const auto& [k, v] : it->node_labels) a.placement.node_selector[k] = v;
    for (const auto& t : it->tolerations) a.placement.tolerations.push_back(t);
  }
  if (!missing.empty()) {
    return waiting(State::kWaiting, "FlavorNotFound",
                   "admitted on ResourceFlavor " + join(missing) + ", which the operator does not see (yet)");
  }
  a.state = State::kAdmitted;
  a.admitted_count = std::clamp(wl.admitted_count > 0 ? wl.admitted_count : wl.count, 1, job.spec.replicas);
  a.reason = "Admitted";
  a.message = "admitted by ClusterQueue " + wl.cluster_queue + " (" + std::to_string(a.admitted_count) + " of " +
              std::to_string(job.spec.replicas) + " nodes" +
              (wl.flavors.empty() ? std::string() : ", flavor " + join(wl.flavors)) + ")";
  return a;
}

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

TrainingJob with_admitted_nodes(const TrainingJob& job, int nodes) {
  TrainingJob capped = job;
  capped.spec.replicas = std::min(job.spec.replicas, nodes);
  capped.spec.max_replicas = std::min(job.spec.max_replicas, capped.spec.replicas);
  capped.spec.min_replicas = std::min(job.spec.min_replicas, capped.spec.replicas);
  return capped;
}

json render_kueue_workload(const TrainingJob& job, std::optional<PriorityClassFacts> priority) {
  json tmpl = job.spec.template_;
  json& pod_spec = tmpl["spec"];
  limits_as_requests(pod_spec["containers"]);
  if (pod_spec.contains("initContainers")) limits_as_requests(pod_spec["initContainers"]);
  json pod_set = {{"name", kKueuePodSet}, {"count", job.spec.replicas}, {"template", tmpl}};
  if (job.spec.min_replicas < job.spec.replicas) pod_set["minCount"] = job.spec.min_replicas;
  json spec = {{"queueName", job.queue_name}, {"podSets", json::array({pod_set})}};
  if (priority) {
    spec["priorityClassRef"] = {{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", priority->name}};
    spec["priority"] = priority->value;
  }
  return {{"apiVersion", kKueueApiVersion},
          {"kind", "Workload"},
          {"metadata",
           {{"name", job.name},
            {"namespace", job.ns},
            {"labels", {{kJobNameLabel, job.name}}},
            {"ownerReferences", json::array({owner_reference(job)})}}},
          {"spec", spec}};
}

json kueue_status_patch(const KueueWorkloadFacts& wl, const KueueStatusWrite& write, UnixSeconds now) {
  json conditions = wl.conditions;
  json status = json::object();
  if (write.kind == KueueStatusWrite::Kind::kFinish) {
    set_condition(conditions, "Finished", "True", write.reason, write.message, now);
  } else {
    // What Kueue's job integrations do once an evicted job has stopped: the quota goes back, and a preempted
    // workload is marked requeued so that Kueue admits it again when it can.
    const bool requeued = write.reason == "Preempted" || write.reason == "NodeFailures";
    set_condition(conditions, "Requeued", requeued ? "True" : "False", write.reason, write.message, now);
    set_condition(conditions, "QuotaReserved", "False", "Pending", write.message, now);
    if (condition(conditions, "Admitted") != nullptr) {
      set_condition(conditions, "Admitted", "False", "NoReservation", "The workload has no reservation", now);
    }
    status["admission"] = nullptr;
  }
  status["conditions"] = conditions;
  return {{"metadata", {{"resourceVersion", wl.resource_version}}}, {"status", status}};
}

}  // namespace kubedist::trainingjob
