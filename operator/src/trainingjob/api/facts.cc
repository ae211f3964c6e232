#include "trainingjob/api/facts.h"

#include <regex>

#include "trainingjob/api/json_fields.h"

namespace kubedist::trainingjob {
using nlohmann::json;

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
      for (const auto& v : *vols) {
        const std::string name = v.is_object() ? string_at(v, "name") : "";
        f.rdzv_secret = f.rdzv_secret || name == kRdzvSecretVolume || name == kNamespaceRdzvSecret;
        f.job_rdzv_secret = f.job_rdzv_secret || name == kRdzvSecretVolume;
      }
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

}  // namespace kubedist::trainingjob
