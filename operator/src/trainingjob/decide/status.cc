#include "trainingjob/decide/status.h"

#include <regex>

namespace kubedist::trainingjob {

int procs_per_node(const Spec& spec) {
  if (spec.nproc_per_node.count > 0) return spec.nproc_per_node.count;
  const nlohmann::json& tmpl = *spec.template_;
  if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].contains("containers")) return 1;
  const auto& containers = tmpl["spec"]["containers"];
  const auto& trainer = containers[spec.trainer_index];
  auto limit = [&](const char* name) -> int {
    for (const char* section : {"limits", "requests"}) {
      auto res = trainer.find("resources");
      if (res == trainer.end() || !res->is_object() || !res->contains(section)) continue;
      const auto& m = (*res)[section];
      if (!m.is_object() || !m.contains(name)) continue;
      const auto& v = m[name];
      if (v.is_number_integer()) return v.get<int>();
      static const std::regex whole("[1-9][0-9]{0,4}");
      if (v.is_string() && std::regex_match(v.get<std::string>(), whole)) return std::stoi(v.get<std::string>());
    }
    return 0;
  };
  const std::string& mode = spec.nproc_per_node.mode;
  if (mode == "auto" || mode == "gpu") {
    if (int gpus = limit("nvidia.com/gpu"); gpus > 0) return gpus;
  } else if (mode == "cpu") {
    if (int cpus = limit("cpu"); cpus > 0) return cpus;
  }
  return 1;
}

const Condition* find_condition(const Status& status, ConditionType type) {
  for (const auto& c : status.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool condition_true(const Status& status, ConditionType type) {
  const Condition* c = find_condition(status, type);
  return c != nullptr && c->status == "True";
}

void set_condition(Status& status, ConditionType type, bool value, const std::string& reason,
                   const std::string& message, UnixSeconds now) {
  const std::string s = value ? "True" : "False";
  for (auto& c : status.conditions) {
    if (c.type != type) continue;
    if (c.status != s) c.last_transition_time = format_rfc3339(now);
    c.status = s;
    c.reason = reason;
    c.message = message;
    return;
  }
  status.conditions.push_back({type, s, reason, message, format_rfc3339(now)});
}

void observe_pods(Status& status, const Spec& spec, const std::vector<PodFacts>& live_pods) {
  int running = 0;
  for (const auto& p : live_pods) running += p.phase == "Running" ? 1 : 0;
  status.replicas = static_cast<int>(live_pods.size());
  status.ready_replicas = running;
  status.world_size = running * procs_per_node(spec);
}

std::string selector_for(const std::string& job_name) { return std::string(kJobNameLabel) + "=" + job_name; }

}  // namespace kubedist::trainingjob
