#include "trainingjob/api/status_json.h"

#include <algorithm>

#include "trainingjob/api/json_fields.h"

namespace kubedist::trainingjob {

using nlohmann::json;

namespace {

// The integer entries of a {reason: count} object; others are skipped.
std::map<std::string, int> counts_at(const json& obj, const char* key) {
  std::map<std::string, int> counts;
  if (auto it = obj.find(key); it != obj.end() && it->is_object()) {
    for (const auto& [reason, n] : it->items()) {
      if (n.is_number_integer()) counts[reason] = n.get<int>();
    }
  }
  return counts;
}

}  // namespace

void to_json(json& j, const Condition& c) {
  j = {{"type", to_string(c.type)},
       {"status", c.status},
       {"reason", c.reason},
       {"message", c.message},
       {"lastTransitionTime", c.last_transition_time}};
}

// A condition of one of the kept types; nullopt for any other (the status is the operator's alone, and is rewritten
// whole).
std::optional<Condition> condition_from_json(const json& j, const std::vector<ConditionType>& kept) {
  const auto type = parse_condition_type(string_at(j, "type"), kept);
  if (!type) return std::nullopt;
  return Condition{*type, string_at(j, "status"), string_at(j, "reason"), string_at(j, "message"),
                   string_at(j, "lastTransitionTime")};
}

void to_json(json& j, const LauncherSeen& l) {
  j = {{"podUID", l.pod_uid}, {"restartsByReason", l.restarts_by_reason}, {"absorb", l.absorb}};
  if (l.prepaid > 0) {
    j["prepaid"] = l.prepaid;
    j["prepaidAt"] = l.prepaid_at;
  }
}

void from_json(const json& j, LauncherSeen& l) {
  l.pod_uid = string_at(j, "podUID");
  if (auto a = j.find("absorb"); a != j.end() && a->is_number_integer()) l.absorb = std::max(0, a->get<int>());
  if (auto p = j.find("prepaid"); p != j.end() && p->is_number_integer()) l.prepaid = std::max(0, p->get<int>());
  l.prepaid_at = string_at(j, "prepaidAt");
  l.restarts_by_reason = counts_at(j, "restartsByReason");
}

void to_json(json& j, const ElasticStatus& e) {
  j = {{"targetReplicas", e.target_replicas},
       {"reason", e.reason},
       {"lastChange", e.last_change},
       {"specReplicas", e.spec_replicas}};
}

void from_json(const json& j, ElasticStatus& e) {
  e.target_replicas = j.value("targetReplicas", 0);
  e.reason = string_at(j, "reason");
  e.last_change = string_at(j, "lastChange");
  e.spec_replicas = j.value("specReplicas", 0);
}

void to_json(json& j, const LastFailure& f) {
  j = {{"time", f.time}, {"pod", f.pod}, {"node", f.node}, {"reason", f.reason}, {"message", f.message}};
  j["exitCode"] = f.exit_code ? json(*f.exit_code) : json(nullptr);
}

void from_json(const json& j, LastFailure& f) {
  f = {string_at(j, "time"), string_at(j, "pod"), string_at(j, "node"), std::nullopt, string_at(j, "reason"),
       string_at(j, "message")};
  if (auto code = j.find("exitCode"); code != j.end() && code->is_number_integer()) f.exit_code = code->get<int>();
}

void to_json(json& j, const Status& s) {
  j = json::object();
  j["phase"] = to_string(s.phase);
  j["conditions"] = s.conditions;
  j["replicas"] = s.replicas;
  j["readyReplicas"] = s.ready_replicas;
  j["worldSize"] = s.world_size;
  j["restarts"] = s.restarts;
  j["restartsByReason"] = s.restarts_by_reason;
  j["observedGeneration"] = s.observed_generation;
  j["startTime"] = s.start_time.empty() ? json(nullptr) : json(s.start_time);
  j["completionTime"] = s.completion_time.empty() ? json(nullptr) : json(s.completion_time);
  j["selector"] = s.selector;
  // Merge-patch semantics: null removes a field that is no longer wanted.
  j["launcher"] = s.launcher.pod_uid.empty() && s.launcher.absorb == 0 && s.launcher.prepaid == 0 ? json(nullptr)
                                                                                                  : json(s.launcher);
  j["elastic"] = s.elastic.target_replicas == 0 ? json(nullptr) : json(s.elastic);
  j["lostPods"] = s.lost_pods.empty() ? json(nullptr) : json(s.lost_pods);
  j["lastFailure"] = s.last_failure ? json(*s.last_failure) : json(nullptr);
}

void from_json(const json& st, Status& s) {
  s = Status{};
  if (!st.is_object()) return;
  s.phase = parse_job_phase(string_at(st, "phase"));
  s.replicas = st.value("replicas", 0);
  s.ready_replicas = st.value("readyReplicas", 0);
  s.world_size = st.value("worldSize", 0);
  s.restarts = st.value("restarts", 0);
  s.restarts_by_reason = counts_at(st, "restartsByReason");
  s.observed_generation = st.value("observedGeneration", int64_t{0});
  s.start_time = string_at(st, "startTime");
  s.completion_time = string_at(st, "completionTime");
  s.selector = string_at(st, "selector");
  if (auto it = st.find("launcher"); it != st.end() && it->is_object()) s.launcher = it->get<LauncherSeen>();
  if (auto it = st.find("elastic"); it != st.end() && it->is_object()) s.elastic = it->get<ElasticStatus>();
  if (auto it = st.find("lostPods"); it != st.end() && it->is_array()) {
    for (const auto& uid : *it) {
      if (uid.is_string()) s.lost_pods.push_back(uid.get<std::string>());
    }
  }
  if (auto it = st.find("lastFailure"); it != st.end() && it->is_object()) s.last_failure = it->get<LastFailure>();
}

Status parse_status(const json& st, const std::vector<ConditionType>& kept) {
  Status s;
  try {
    s = st.get<Status>();
  } catch (const json::exception&) {  // a status someone else wrote with wrong types: start afresh
    return Status{};
  }
  if (auto it = st.find("conditions"); it != st.end() && it->is_array()) {
    for (const auto& c : *it) {
      if (!c.is_object()) continue;
      if (auto condition = condition_from_json(c, kept)) s.conditions.push_back(std::move(*condition));
    }
  }
  return s;
}

json status_to_json(const Status& s) { return s; }

}  // namespace kubedist::trainingjob
