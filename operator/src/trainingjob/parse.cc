#include "trainingjob/parse.h"

#include <regex>
#include <string>

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

std::string show(const json& v) { return v.dump(); }

Result<int64_t> read_int(const json& spec, const char* field, int64_t dflt, int64_t min, int64_t max) {
  auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return dflt;
  if (!it->is_number_integer() && !(it->is_number_float() && it->get<double>() == static_cast<int64_t>(it->get<double>()))) {
    return Error::invalid(std::string("spec.") + field + ": must be an integer, got " + show(*it));
  }
  int64_t v = it->is_number_integer() ? it->get<int64_t>() : static_cast<int64_t>(it->get<double>());
  if (v < min || v > max) {
    return Error::invalid(std::string("spec.") + field + ": must be between " + std::to_string(min) + " and " +
                          std::to_string(max) + ", got " + std::to_string(v));
  }
  return v;
}

Result<std::optional<int64_t>> read_optional_int(const json& spec, const char* field, int64_t min) {
  auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return std::optional<int64_t>();
  auto v = read_int(spec, field, 0, min, INT64_MAX / 2);
  if (!v) return v.error();
  return std::optional<int64_t>(*v);
}

bool is_dns1035_label(const std::string& s) {
  static const std::regex re("[a-z]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

Result<NprocPerNode> read_nproc(const json& spec) {
  NprocPerNode n;
  auto it = spec.find("nprocPerNode");
  if (it == spec.end() || it->is_null()) return n;
  const std::string err = "spec.nprocPerNode: must be an integer >= 1 or one of auto, gpu, cpu, got " + show(*it);
  if (it->is_number_integer()) {
    if (it->get<int64_t>() < 1 || it->get<int64_t>() > 1024) return Error::invalid(err);
    n.count = it->get<int>();
    return n;
  }
  if (!it->is_string()) return Error::invalid(err);
  const auto s = it->get<std::string>();
  if (s == "auto" || s == "gpu" || s == "cpu") {
    n.mode = s;
    return n;
  }
  static const std::regex digits("[1-9][0-9]{0,3}");
  if (std::regex_match(s, digits)) {
    n.count = std::stoi(s);
    return n;
  }
  return Error::invalid(err);
}

Result<int> find_trainer(const json& tmpl) {
  if (!tmpl.is_object()) return Error::invalid("spec.template: required, must be a pod template object");
  auto spec = tmpl.find("spec");
  if (spec == tmpl.end() || !spec->is_object()) return Error::invalid("spec.template.spec: required");
  auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array() || containers->empty()) {
    return Error::invalid("spec.template.spec.containers: at least one container is required");
  }
  int trainer = -1;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || c["name"].get<std::string>().empty()) {
      return Error::invalid("spec.template.spec.containers[" + std::to_string(i) + "]: a name is required");
    }
    if (c["name"] == "trainer" && trainer < 0) trainer = static_cast<int>(i);
  }
  // One container is the trainer whatever its name; of several, the launcher must be told which (the schema's CEL
  // rule refuses such a template already; this covers objects stored before it).
  if (trainer < 0 && containers->size() > 1) {
    return Error::invalid("spec.template.spec.containers: " + std::to_string(containers->size()) +
                          " containers and none named \"trainer\": name the one that runs under the launcher "
                          "\"trainer\"");
  }
  if (trainer < 0) trainer = 0;
  const json& c = (*containers)[trainer];
  const std::string where = "spec.template.spec.containers[" + std::to_string(trainer) + "] (" +
                            c["name"].get<std::string>() + ")";
  auto cmd = c.find("command");
  if (cmd == c.end() || !cmd->is_array() || cmd->empty()) {
    return Error::invalid(where +
                          ": command is required; the operator runs it under the launcher and cannot wrap the "
                          "image's entrypoint");
  }
  for (const auto& part : *cmd) {
    if (!part.is_string()) return Error::invalid(where + ".command: every element must be a string");
  }
  if (c.contains("args") && !c["args"].is_null()) {
    if (!c["args"].is_array()) return Error::invalid(where + ".args: must be a list of strings");
    for (const auto& part : c["args"]) {
      if (!part.is_string()) return Error::invalid(where + ".args: every element must be a string");
    }
  }
  if (c.contains("env") && !c["env"].is_null() && !c["env"].is_array()) {
    return Error::invalid(where + ".env: must be a list");
  }
  if (c.contains("ports") && !c["ports"].is_null() && !c["ports"].is_array()) {
    return Error::invalid(where + ".ports: must be a list");
  }
  for (const char* list : {"volumes", "initContainers"}) {
    auto it = spec->find(list);
    if (it == spec->end() || it->is_null()) continue;
    if (!it->is_array()) return Error::invalid(std::string("spec.template.spec.") + list + ": must be a list");
    for (const auto& v : *it) {
      if (v.is_object() && v.value("name", "") == (std::string(list) == "volumes" ? "kubedist-bin" : "kubedist-launcher")) {
        return Error::invalid(std::string("spec.template.spec.") + list + ": the name \"" + v.value("name", "") +
                              "\" is reserved for the operator");
      }
    }
  }
  return trainer;
}

std::string string_at(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The first non-empty line of text, at most max bytes (cut at a UTF-8 character boundary).
std::string first_line(const std::string& text, size_t max) {
  size_t start = text.find_first_not_of("\r\n");
  if (start == std::string::npos) return "";
  std::string line = text.substr(start, text.find_first_of("\r\n", start) - start);
  if (line.size() > max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line.resize(cut);
  }
  return line;
}

}  // namespace

const char* to_string(RestartPolicy p) {
  switch (p) {
    case RestartPolicy::kOnFailure: return "OnFailure";
    case RestartPolicy::kNever: return "Never";
    case RestartPolicy::kExitCode: return "ExitCode";
  }
  return "?";
}

const char* to_string(CleanPodPolicy p) {
  switch (p) {
    case CleanPodPolicy::kRunning: return "Running";
    case CleanPodPolicy::kAll: return "All";
    case CleanPodPolicy::kNone: return "None";
  }
  return "?";
}

Result<Spec> parse_spec(const json& spec, const std::string& job_name) {
  if (!spec.is_object()) return Error::invalid("spec: required, must be an object");
  Spec s;
  auto replicas = read_int(spec, "replicas", 1, 1, 10000);
  if (!replicas) return replicas.error();
  s.replicas = static_cast<int>(*replicas);
  auto min = read_int(spec, "minReplicas", s.replicas, 1, 10000);
  if (!min) return min.error();
  auto max = read_int(spec, "maxReplicas", s.replicas, 1, 10000);
  if (!max) return max.error();
  s.min_replicas = static_cast<int>(*min);
  s.max_replicas = static_cast<int>(*max);
  if (!(s.min_replicas <= s.replicas && s.replicas <= s.max_replicas)) {
    return Error::invalid("spec: minReplicas <= replicas <= maxReplicas must hold, got " +
                          std::to_string(s.min_replicas) + " <= " + std::to_string(s.replicas) + " <= " +
                          std::to_string(s.max_replicas));
  }
  auto nproc = read_nproc(spec);
  if (!nproc) return nproc.error();
  s.nproc_per_node = *nproc;
  // The launcher's rendezvous listens on masterPort + 1, so that must be a port too.
  auto port = read_int(spec, "masterPort", 29500, 1, 65534);
  if (!port) return port.error();
  s.master_port = static_cast<int>(*port);
  auto max_restarts = read_int(spec, "maxRestarts", 3, 0, 1000000);
  if (!max_restarts) return max_restarts.error();
  s.max_restarts = static_cast<int>(*max_restarts);
  auto backoff = read_int(spec, "backoffLimit", 6, 0, 1000000);
  if (!backoff) return backoff.error();
  s.backoff_limit = static_cast<int>(*backoff);

  if (auto it = spec.find("restartPolicy"); it != spec.end() && !it->is_null()) {
    if (*it == "OnFailure") s.restart_policy = RestartPolicy::kOnFailure;
    else if (*it == "Never") s.restart_policy = RestartPolicy::kNever;
    else if (*it == "ExitCode") s.restart_policy = RestartPolicy::kExitCode;
    else return Error::invalid("spec.restartPolicy: must be OnFailure, Never or ExitCode, got " + show(*it));
  }
  if (auto it = spec.find("cleanPodPolicy"); it != spec.end() && !it->is_null()) {
    if (*it == "Running") s.clean_pod_policy = CleanPodPolicy::kRunning;
    else if (*it == "All") s.clean_pod_policy = CleanPodPolicy::kAll;
    else if (*it == "None") s.clean_pod_policy = CleanPodPolicy::kNone;
    else return Error::invalid("spec.cleanPodPolicy: must be Running, All or None, got " + show(*it));
  }
  if (auto it = spec.find("scheduling"); it != spec.end() && !it->is_null()) {
    if (!it->is_object()) return Error::invalid("spec.scheduling: must be an object, got " + show(*it));
    if (auto g = it->find("gang"); g != it->end() && !g->is_null()) {
      if (!g->is_boolean()) return Error::invalid("spec.scheduling.gang: must be true or false, got " + show(*g));
      s.gang = g->get<bool>();
    }
  }
  if (auto it = spec.find("suspend"); it != spec.end() && !it->is_null()) {
    if (!it->is_boolean()) return Error::invalid("spec.suspend: must be true or false, got " + show(*it));
    s.suspend = it->get<bool>();
  }
  auto ads = read_optional_int(spec, "activeDeadlineSeconds", 1);
  if (!ads) return ads.error();
  s.active_deadline_seconds = *ads;
  auto ttl = read_optional_int(spec, "ttlSecondsAfterFinished", 0);
  if (!ttl) return ttl.error();
  s.ttl_seconds_after_finished = *ttl;

  auto tmpl = spec.find("template");
  if (tmpl == spec.end() || tmpl->is_null()) return Error::invalid("spec.template: required");
  auto trainer = find_trainer(*tmpl);
  if (!trainer) return trainer.error();
  s.trainer_index = *trainer;
  s.template_ = *tmpl;

  // Pod J-node-i must be a valid hostname and the Service J a DNS-1035 label.
  const std::string longest = job_name + "-node-" + std::to_string(s.max_replicas - 1);
  if (!is_dns1035_label(job_name) || longest.size() > 63) {
    return Error::invalid("metadata.name: \"" + job_name +
                          "\" must be a DNS-1035 label (lower-case letters, digits, '-', starting with a letter) "
                          "short enough that pod hostname \"" + longest + "\" fits in 63 characters");
  }
  return s;
}

static Status parse_status_fields(const json& st);

Status parse_status(const json& st) {
  try {
    return parse_status_fields(st);
  } catch (const json::exception&) {  // a status someone else wrote with wrong types: start afresh
    return Status{};
  }
}

static Status parse_status_fields(const json& st) {
  Status s;
  if (!st.is_object()) return s;
  s.phase = string_at(st, "phase");
  s.replicas = st.value("replicas", 0);
  s.ready_replicas = st.value("readyReplicas", 0);
  s.world_size = st.value("worldSize", 0);
  s.restarts = st.value("restarts", 0);
  if (auto it = st.find("restartsByReason"); it != st.end() && it->is_object()) {
    for (const auto& [reason, n] : it->items()) {
      if (n.is_number_integer()) s.restarts_by_reason[reason] = n.get<int>();
    }
  }
  s.observed_generation = st.value("observedGeneration", int64_t{0});
  s.start_time = string_at(st, "startTime");
  s.completion_time = string_at(st, "completionTime");
  s.selector = string_at(st, "selector");
  if (auto it = st.find("launcher"); it != st.end() && it->is_object()) {
    s.launcher.pod_uid = string_at(*it, "podUID");
    if (auto a = it->find("absorb"); a != it->end() && a->is_number_integer()) s.launcher.absorb = std::max(0, a->get<int>());
    if (auto r = it->find("restartsByReason"); r != it->end() && r->is_object()) {
      for (const auto& [reason, n] : r->items()) {
        if (n.is_number_integer()) s.launcher.restarts_by_reason[reason] = n.get<int>();
      }
    }
  }
  if (auto it = st.find("elastic"); it != st.end() && it->is_object()) {
    s.elastic.target_replicas = it->value("targetReplicas", 0);
    s.elastic.reason = string_at(*it, "reason");
    s.elastic.last_change = string_at(*it, "lastChange");
    s.elastic.spec_replicas = it->value("specReplicas", 0);
  }
  if (auto it = st.find("lostPods"); it != st.end() && it->is_array()) {
    for (const auto& uid : *it) {
      if (uid.is_string()) s.lost_pods.push_back(uid.get<std::string>());
    }
  }
  if (auto it = st.find("lastFailure"); it != st.end() && it->is_object()) {
    LastFailure f{string_at(*it, "time"), string_at(*it, "pod"), string_at(*it, "node"), std::nullopt,
                  string_at(*it, "reason"), string_at(*it, "message")};
    if (auto code = it->find("exitCode"); code != it->end() && code->is_number_integer()) f.exit_code = code->get<int>();
    s.last_failure = f;
  }
  if (auto it = st.find("conditions"); it != st.end() && it->is_array()) {
    for (const auto& c : *it) {
      if (!c.is_object()) continue;
      s.conditions.push_back({string_at(c, "type"), string_at(c, "status"), string_at(c, "reason"),
                              string_at(c, "message"), string_at(c, "lastTransitionTime")});
    }
  }
  return s;
}

json status_to_json(const Status& s) {
  json j = json::object();
  j["phase"] = s.phase;
  json conds = json::array();
  for (const auto& c : s.conditions) {
    conds.push_back({{"type", c.type},
                     {"status", c.status},
                     {"reason", c.reason},
                     {"message", c.message},
                     {"lastTransitionTime", c.last_transition_time}});
  }
  j["conditions"] = conds;
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
  j["launcher"] = s.launcher.pod_uid.empty() && s.launcher.absorb == 0
                      ? json(nullptr)
                      : json{{"podUID", s.launcher.pod_uid},
                             {"restartsByReason", s.launcher.restarts_by_reason},
                             {"absorb", s.launcher.absorb}};
  j["elastic"] = s.elastic.target_replicas == 0 ? json(nullptr)
                                                 : json{{"targetReplicas", s.elastic.target_replicas},
                                                        {"reason", s.elastic.reason},
                                                        {"lastChange", s.elastic.last_change},
                                                        {"specReplicas", s.elastic.spec_replicas}};
  j["lostPods"] = s.lost_pods.empty() ? json(nullptr) : json(s.lost_pods);
  if (s.last_failure) {
    const LastFailure& f = *s.last_failure;
    j["lastFailure"] = {{"time", f.time}, {"pod", f.pod}, {"node", f.node}, {"reason", f.reason}, {"message", f.message}};
    j["lastFailure"]["exitCode"] = f.exit_code ? json(*f.exit_code) : json(nullptr);
  } else {
    j["lastFailure"] = nullptr;
  }
  return j;
}

Result<TrainingJob> parse_training_job(const json& obj) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) {
    return Error::invalid("TrainingJob without metadata");
  }
  const json& md = obj["metadata"];
  TrainingJob job;
  job.name = string_at(md, "name");
  job.ns = string_at(md, "namespace");
  if (job.name.empty() || job.ns.empty()) return Error::invalid("TrainingJob without name or namespace");
  job.uid = string_at(md, "uid");
  job.resource_version = string_at(md, "resourceVersion");
  job.generation = md.contains("generation") && md["generation"].is_number_integer() ? md["generation"].get<int64_t>() : 0;
  job.deleting = md.contains("deletionTimestamp") && !md["deletionTimestamp"].is_null();
  job.status = parse_status(obj.value("status", json::object()));
  auto spec = parse_spec(obj.value("spec", json()), job.name);
  if (spec) {
    job.spec = std::move(*spec);
  } else {
    job.spec_error = spec.error().message;
  }
  return job;
}

PodFacts parse_pod_facts(const json& pod) {
  PodFacts f;
  const json md = pod.value("metadata", json::object());
  f.ns = string_at(md, "namespace");
  f.name = string_at(md, "name");
  f.uid = string_at(md, "uid");
  f.deleting = md.contains("deletionTimestamp") && !md["deletionTimestamp"].is_null();
  f.owner_uid = controller_uid(pod);
  if (auto labels = md.find("labels"); labels != md.end() && labels->is_object()) {
    f.job_name = string_at(*labels, kJobNameLabel);
    const std::string rank = string_at(*labels, kNodeRankLabel);
    static const std::regex digits("0|[1-9][0-9]{0,5}");
    if (std::regex_match(rank, digits)) f.rank = std::stoi(rank);
  }
  const json st = pod.value("status", json::object());
  f.phase = string_at(st, "phase");
  if (f.phase.empty()) f.phase = "Pending";
  f.start_time = string_at(st, "startTime");
  f.pod_ip = string_at(st, "podIP");
  f.failure_reason = string_at(st, "reason");
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    f.node_name = string_at(*spec, "nodeName");
    if (auto vols = spec->find("volumes"); vols != spec->end() && vols->is_array()) {
      for (const auto& v : *vols) f.rdzv_secret = f.rdzv_secret || (v.is_object() && string_at(v, "name") == kRdzvSecretVolume);
    }
  }
  if (auto conds = st.find("conditions"); conds != st.end() && conds->is_array()) {
    for (const auto& c : *conds) {
      if (!c.is_object()) continue;
      const std::string type = string_at(c, "type");
      if (type == "Ready") f.ready = string_at(c, "status") == "True";
      if (type == "PodScheduled" && string_at(c, "status") == "False" && string_at(c, "reason") == "Unschedulable") {
        f.unschedulable_since = string_at(c, "lastTransitionTime");
      }
    }
  }
  // The trainer container is the one the operator wrapped: named "trainer", else the only one.
  std::string trainer;
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    auto cs = spec->find("containers");
    if (cs != spec->end() && cs->is_array() && !cs->empty()) {
      trainer = (*cs)[0].value("name", "");
      for (const auto& c : *cs) {
        if (c.value("name", "") == "trainer") trainer = "trainer";
      }
    }
  }
  if (auto cs = st.find("containerStatuses"); cs != st.end() && cs->is_array()) {
    for (const auto& c : *cs) {
      if (!c.is_object() || (!trainer.empty() && c.value("name", "") != trainer)) continue;
      const json state = c.value("state", json::object());
      if (auto t = state.find("terminated"); t != state.end() && t->is_object()) {
        if (t->contains("exitCode") && (*t)["exitCode"].is_number_integer()) f.exit_code = (*t)["exitCode"].get<int>();
        if (f.failure_reason.empty()) f.failure_reason = string_at(*t, "reason");
        f.finished_at = string_at(*t, "finishedAt");
        f.termination_message = first_line(string_at(*t, "message"), kMaxTerminationMessage);
      }
    }
  }
  return f;
}

std::string controller_uid(const json& obj) {
  const json md = obj.value("metadata", json::object());
  if (auto refs = md.find("ownerReferences"); refs != md.end() && refs->is_array()) {
    for (const auto& r : *refs) {
      if (r.is_object() && r.value("controller", false)) return string_at(r, "uid");
    }
  }
  return "";
}

ServiceFacts parse_service_facts(const json& svc) {
  const json md = svc.value("metadata", json::object());
  return {string_at(md, "namespace"), string_at(md, "name"), controller_uid(svc)};
}

SecretFacts parse_secret_facts(const json& secret) {
  const json md = secret.value("metadata", json::object());
  SecretFacts f{string_at(md, "namespace"), string_at(md, "name"), controller_uid(secret), "", ""};
  if (auto labels = md.find("labels"); labels != md.end() && labels->is_object()) {
    f.job_name = string_at(*labels, kJobNameLabel);
  }
  if (auto data = secret.find("data"); data != secret.end() && data->is_object()) f.secret_b64 = string_at(*data, "secret");
  return f;
}

NodeFacts parse_node_facts(const json& node) {
  NodeFacts f;
  const json md = node.value("metadata", json::object());
  f.name = string_at(md, "name");
  const json spec = node.value("spec", json::object());
  f.unschedulable = spec.is_object() && spec.value("unschedulable", false);
  const json st = node.value("status", json::object());
  if (auto conds = st.find("conditions"); conds != st.end() && conds->is_array()) {
    for (const auto& c : *conds) {
      if (!c.is_object() || string_at(c, "type") != "Ready") continue;
      f.ready = string_at(c, "status") == "True";
      (f.ready ? f.schedulable_since : f.not_ready_since) = string_at(c, "lastTransitionTime");
    }
  }
  const std::string created = string_at(md, "creationTimestamp");
  if (f.ready && created > f.schedulable_since) f.schedulable_since = created;  // RFC 3339 UTC sorts as text
  if (!f.ready) f.schedulable_since.clear();
  return f;
}

PodGroupFacts parse_pod_group_facts(const json& pg) {
  PodGroupFacts f;
  const json md = pg.value("metadata", json::object());
  f.ns = string_at(md, "namespace");
  f.name = string_at(md, "name");
  f.owner_uid = controller_uid(pg);
  const json spec = pg.value("spec", json::object());
  const json policy = spec.is_object() ? spec.value("schedulingPolicy", json::object()) : json::object();
  const json gang = policy.is_object() ? policy.value("gang", json::object()) : json::object();
  if (gang.is_object() && gang.contains("minCount") && gang["minCount"].is_number_integer()) {
    f.min_count = gang["minCount"].get<int>();
  }
  const json st = pg.value("status", json::object());
  if (auto conds = st.find("conditions"); conds != st.end() && conds->is_array()) {
    for (const auto& c : *conds) {
      if (!c.is_object() || string_at(c, "type") != "PodGroupScheduled") continue;
      f.scheduled = string_at(c, "status");
      f.reason = string_at(c, "reason");
      f.message = first_line(string_at(c, "message"), kMaxTerminationMessage);
    }
  }
  return f;
}

}  // namespace kubedist::trainingjob
