#include "trainingjob/api/status_json.h"

#include <algorithm>

#include "contract/pod_env.h"
#include "contract/status_line.h"
#include "trainingjob/api/bounds.h"
#include "trainingjob/api/json_fields.h"

namespace kubedist::trainingjob {

using nlohmann::json;

namespace {

// The integer entries of a {reason: count} object, each in [0, kMaxRestarts] (counts are added to); others are
// skipped.
std::map<std::string, int> counts_at(const json& obj, const char* key) {
  std::map<std::string, int> counts;
  if (auto it = obj.find(key); it != obj.end() && it->is_object()) {
    for (const auto& [reason, n] : it->items()) {
      if (n.is_number_integer()) counts[reason] = restart_count(int64_at(*it, reason.c_str()));
    }
  }
  return counts;
}

// obj[key]'s strings, in order; whatever else the array holds (someone else's types) is left out.
std::vector<std::string> strings_at(const json& obj, const char* key) {
  std::vector<std::string> out;
  if (auto it = obj.find(key); it != obj.end() && it->is_array()) {
    for (const auto& v : *it) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
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
  if (!l.prepaid_nodes.empty()) j["prepaidNodes"] = l.prepaid_nodes;
  if (l.prepaid > 0) {
    j["prepaid"] = l.prepaid;
    j["prepaidAt"] = l.prepaid_at;
  }
  if (l.busy_before_ms > 0) j["busyBeforeMs"] = l.busy_before_ms;
  if (l.lost_before_ms > 0) j["lostBeforeMs"] = l.lost_before_ms;
}

void from_json(const json& j, LauncherSeen& l) {
  l.pod_uid = string_at(j, "podUID");
  l.absorb = restart_count(int64_at(j, "absorb"));  // counts of restarts, added to and taken from
  l.prepaid = restart_count(int64_at(j, "prepaid"));
  l.prepaid_at = string_at(j, "prepaidAt");
  if (auto p = j.find("prepaidNodes"); p != j.end() && p->is_array()) {
    for (const auto& rank : *p)
      if (rank.is_number_integer() && rank.get<int64_t>() >= 0 && rank.get<int64_t>() < (1 << 30) &&
          l.prepaid_nodes.size() < contract::kMaxLostNodes)
        l.prepaid_nodes.push_back(rank.get<int>());
  }
  l.restarts_by_reason = counts_at(j, "restartsByReason");
  l.busy_before_ms = bounded(int64_at(j, "busyBeforeMs").value_or(0), 0, kMaxDurationMs);
  l.lost_before_ms = bounded(int64_at(j, "lostBeforeMs").value_or(0), 0, kMaxDurationMs);
}

void to_json(json& j, const SlowestRank& r) {
  j = {{"rank", r.rank}, {"pod", r.pod}, {"node", r.node}, {"stepSeconds", r.step_seconds}, {"ratio", r.ratio}};
}

void from_json(const json& j, SlowestRank& r) {
  r = {static_cast<int>(int64_at(j, "rank").value_or(0)), string_at(j, "pod"), string_at(j, "node"),
       number_at(j, "stepSeconds").value_or(0), number_at(j, "ratio").value_or(0)};
}

void to_json(json& j, const ProgressStatus& p) {
  j = {{"step", p.step}, {"stepsPerSecond", p.steps_per_second}, {"summary", p.summary},
       {"productiveSeconds", p.productive_seconds}, {"lostSeconds", p.lost_seconds}};
  // Merge-patch semantics: null removes what a report no longer says.
  const auto or_null = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  const auto text_or_null = [](const std::string& v) { return v.empty() ? json(nullptr) : json(v); };
  j["totalSteps"] = or_null(p.total_steps);
  j["percent"] = or_null(p.percent);
  j["epoch"] = or_null(p.epoch);
  j["samples"] = or_null(p.samples);
  j["metrics"] = p.metrics.empty() ? json(nullptr) : json(p.metrics);
  j["lastStepTime"] = text_or_null(p.last_step_time);
  j["estimatedCompletionTime"] = text_or_null(p.estimated_completion_time);
  j["slowestRank"] = p.slowest_rank ? json(*p.slowest_rank) : json(nullptr);
  j["startedAt"] = text_or_null(p.started_at);
  j["goodput"] = or_null(p.goodput);
}

void from_json(const json& j, ProgressStatus& p) {
  p = ProgressStatus{};
  p.step = bounded(int64_at(j, "step").value_or(0), 0, kMaxCount);
  p.total_steps = int64_at(j, "totalSteps");
  if (const auto percent = int64_at(j, "percent")) p.percent = static_cast<int>(*percent);
  p.epoch = int64_at(j, "epoch");
  p.samples = int64_at(j, "samples");
  p.steps_per_second = number_at(j, "stepsPerSecond").value_or(0);
  if (auto it = j.find("metrics"); it != j.end() && it->is_object()) {
    for (const auto& [name, v] : it->items())
      if (v.is_number()) p.metrics[name] = v.get<double>();
  }
  p.summary = string_at(j, "summary");
  p.last_step_time = string_at(j, "lastStepTime");
  p.estimated_completion_time = string_at(j, "estimatedCompletionTime");
  if (auto it = j.find("slowestRank"); it != j.end() && it->is_object()) p.slowest_rank = it->get<SlowestRank>();
  p.started_at = string_at(j, "startedAt");
  // Read back into milliseconds (decide/progress.cc): bounded so that llround and the sums stay in range.
  p.productive_seconds = bounded(number_at(j, "productiveSeconds").value_or(0), kMaxDurationMs / 1000.0);
  p.lost_seconds = bounded(number_at(j, "lostSeconds").value_or(0), kMaxDurationMs / 1000.0);
  p.goodput = number_at(j, "goodput");
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
  j["launcher"] = s.launcher == LauncherSeen{} ? json(nullptr) : json(s.launcher);
  j["elastic"] = s.elastic.target_replicas == 0 ? json(nullptr) : json(s.elastic);
  j["lostPods"] = s.lost_pods.empty() ? json(nullptr) : json(s.lost_pods);
  j["failedPods"] = s.failed_pods.empty() ? json(nullptr) : json(s.failed_pods);
  j["lastFailure"] = s.last_failure ? json(*s.last_failure) : json(nullptr);
  j["progress"] = s.progress ? json(*s.progress) : json(nullptr);
  j["rendezvousSecret"] = s.rendezvous_secret.empty() ? json(nullptr) : json(s.rendezvous_secret);
  j["rendezvousKeyLost"] = s.rendezvous_key_lost.empty() ? json(nullptr) : json(s.rendezvous_key_lost);
  j["rendezvousSecretKey"] = s.rendezvous_secret_key.empty() ? json(nullptr) : json(s.rendezvous_secret_key);
  j["nodeFailures"] = s.node_failures.empty() ? json(nullptr) : json(s.node_failures);
  j["avoidedNodes"] = s.avoided_nodes.empty() ? json(nullptr) : json(s.avoided_nodes);
  j["spares"] = s.spares == 0 ? json(nullptr) : json(s.spares);
  j["sparesReady"] = s.spares == 0 && s.spares_ready == 0 ? json(nullptr) : json(s.spares_ready);
  json stand_ins = json::array();
  for (const auto& [slot, rank] : s.stand_ins) stand_ins.push_back({{"nodeRank", slot}, {"podNodeRank", rank}});
  j["standIns"] = s.stand_ins.empty() ? json(nullptr) : stand_ins;
  j["checkpoint"] = s.checkpoint ? json{{"step", s.checkpoint->step}, {"time", s.checkpoint->time},
                                        {"reason", s.checkpoint->reason}, {"ranks", s.checkpoint->ranks}}
                                 : json(nullptr);
}

void from_json(const json& st, Status& s) {
  s = Status{};
  if (!st.is_object()) return;
  s.phase = parse_job_phase(string_at(st, "phase"));
  s.replicas = st.value("replicas", 0);
  s.ready_replicas = st.value("readyReplicas", 0);
  s.world_size = st.value("worldSize", 0);
  s.restarts = restart_count(int64_at(st, "restarts"));
  s.restarts_by_reason = counts_at(st, "restartsByReason");
  s.observed_generation = st.value("observedGeneration", int64_t{0});
  s.start_time = string_at(st, "startTime");
  s.completion_time = string_at(st, "completionTime");
  s.selector = string_at(st, "selector");
  if (auto it = st.find("launcher"); it != st.end() && it->is_object()) s.launcher = it->get<LauncherSeen>();
  if (auto it = st.find("elastic"); it != st.end() && it->is_object()) s.elastic = it->get<ElasticStatus>();
  s.lost_pods = strings_at(st, "lostPods");
  s.failed_pods = strings_at(st, "failedPods");
  if (auto it = st.find("lastFailure"); it != st.end() && it->is_object()) s.last_failure = it->get<LastFailure>();
  if (auto it = st.find("progress"); it != st.end() && it->is_object()) s.progress = it->get<ProgressStatus>();
  s.rendezvous_secret = string_at(st, "rendezvousSecret");
  s.rendezvous_key_lost = string_at(st, "rendezvousKeyLost");
  s.rendezvous_secret_key = string_at(st, "rendezvousSecretKey");
  s.node_failures = counts_at(st, "nodeFailures");
  s.avoided_nodes = strings_at(st, "avoidedNodes");
  s.spares = restart_count(int64_at(st, "spares"));
  s.spares_ready = restart_count(int64_at(st, "sparesReady"));
  if (auto it = st.find("standIns"); it != st.end() && it->is_array()) {
    for (const auto& e : *it) {
      if (!e.is_object()) continue;
      const auto slot = int64_at(e, "nodeRank"), rank = int64_at(e, "podNodeRank");
      if (slot && rank && *slot > 0 && *slot < contract::kSpareNodeRankBase && *rank > 0 && *rank <= 1000000 &&
          s.stand_ins.size() < contract::kMaxStatusSpares)
        s.stand_ins[static_cast<int>(*slot)] = static_cast<int>(*rank);
    }
  }
  if (auto it = st.find("checkpoint"); it != st.end() && it->is_object()) {
    const auto step = int64_at(*it, "step");
    const auto ranks = int64_at(*it, "ranks");
    if (step && *step >= 0 && *step <= kMaxCount) {
      s.checkpoint = CheckpointStatus{*step, string_at(*it, "time"), string_at(*it, "reason"),
                                      ranks && *ranks > 0 && *ranks <= 1000000 ? static_cast<int>(*ranks) : 0};
    }
  }
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

json status_patch(const Status& before, const Status& after) {
  json patch = status_to_json(after);
  if (before.progress && after.progress && patch["progress"].is_object()) {
    json& metrics = patch["progress"]["metrics"];
    if (metrics.is_null()) return patch;  // null removes the whole map
    for (const auto& [name, value] : before.progress->metrics)
      if (!after.progress->metrics.count(name)) metrics[name] = nullptr;
  }
  return patch;
}

}  // namespace kubedist::trainingjob
