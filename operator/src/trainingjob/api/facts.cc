#include "trainingjob/api/facts.h"

#include <stdexcept>

#include "contract/pod_env.h"
#include "trainingjob/api/json_fields.h"

namespace kubedist::trainingjob {
using nlohmann::json;

// Facts are read on every watch event of every pod: through references into the event's JSON, copying only the
// strings they keep.
namespace {

// The parsers' inputs are objects; anything else is refused as before (the informer's store skips it).
void require_object(const json& obj, const char* kind) {
  if (!obj.is_object()) throw std::invalid_argument(std::string("a ") + kind + " must be a JSON object");
}

}  // namespace

int node_rank_from_label(std::string_view label) {
  // 0, or up to six digits without a leading zero: what render_pod writes, and nothing an int cannot hold.
  if (label.empty() || label.size() > 6 || (label[0] == '0' && label.size() > 1)) return -1;
  int rank = 0;
  for (char c : label) {
    if (c < '0' || c > '9') return -1;
    rank = rank * 10 + (c - '0');
  }
  return rank;
}

PodFacts parse_pod_facts(const json& pod) {
  require_object(pod, "pod");
  PodFacts f;
  const json& md = object_or_empty(pod, "metadata");
  f.ns = string_at(md, "namespace");
  f.name = string_at(md, "name");
  f.uid = string_at(md, "uid");
  if (auto ts = md.find("deletionTimestamp"); ts != md.end()) f.deleting = !ts->is_null();
  f.owner_uid = controller_uid(pod);
  if (const json* annotations = object_at(md, "annotations")) {
    f.rdzv_key = string_at(*annotations, kRdzvKeyAnnotation);
    if (auto d = annotations->find(contract::kTopologyDomainAnnotation); d != annotations->end() && d->is_string())
      f.topology_domain = d->get<std::string>().substr(0, kMaxTopologyDomain);
  }
  if (const json* labels = object_at(md, "labels")) {
    f.job_name = string_at(*labels, kJobNameLabel);
    f.rank = node_rank_from_label(text_at(*labels, kNodeRankLabel));
  }
  const json& st = object_or_empty(pod, "status");
  f.phase = string_at(st, "phase");
  if (f.phase.empty()) f.phase = "Pending";
  f.start_time = string_at(st, "startTime");
  f.pod_ip = string_at(st, "podIP");
  f.failure_reason = string_at(st, "reason");
  // The trainer container is the one the operator wrapped: named "trainer", else the only one.
  std::string_view trainer;
  if (const json* spec = object_at(pod, "spec")) {
    f.node_name = string_at(*spec, "nodeName");
    if (auto vols = spec->find("volumes"); vols != spec->end() && vols->is_array()) {
      for (const auto& v : *vols) {
        const std::string_view name = text_at(v, "name");
        f.rdzv_secret = f.rdzv_secret || name == kRdzvSecretVolume || name == kNamespaceRdzvSecret;
        f.job_rdzv_secret = f.job_rdzv_secret || name == kRdzvSecretVolume;
      }
    }
    auto cs = spec->find("containers");
    if (cs != spec->end() && cs->is_array() && !cs->empty()) {
      require_object((*cs)[0], "container");
      trainer = text_at((*cs)[0], "name");
      for (const auto& c : *cs) {
        require_object(c, "container");
        if (text_at(c, "name") == "trainer") trainer = "trainer";
      }
    }
  }
  if (auto conds = st.find("conditions"); conds != st.end() && conds->is_array()) {
    for (const auto& c : *conds) {
      if (!c.is_object()) continue;
      const std::string_view type = text_at(c, "type");
      if (type == "Ready") f.ready = text_at(c, "status") == "True";
      if (type == "PodScheduled" && text_at(c, "status") == "False" && text_at(c, "reason") == "Unschedulable") {
        f.unschedulable_since = string_at(c, "lastTransitionTime");
        f.unschedulable_message = first_line(text_at(c, "message"), kMaxSchedulingMessage);
      }
    }
  }
  if (auto cs = st.find("containerStatuses"); cs != st.end() && cs->is_array()) {
    for (const auto& c : *cs) {
      if (!c.is_object() || (!trainer.empty() && text_at(c, "name") != trainer)) continue;
      const json* state = object_at(c, "state");
      const json* t = state ? object_at(*state, "terminated") : nullptr;
      if (t == nullptr) continue;
      if (auto code = t->find("exitCode"); code != t->end() && code->is_number_integer()) {
        f.exit_code = code->get<int>();
      }
      if (f.failure_reason.empty()) f.failure_reason = string_at(*t, "reason");
      f.finished_at = string_at(*t, "finishedAt");
      f.termination_message = first_line(text_at(*t, "message"), kMaxTerminationMessage);
    }
  }
  return f;
}

std::string controller_uid(const json& obj) {
  const json& md = object_or_empty(obj, "metadata");
  if (auto refs = md.find("ownerReferences"); refs != md.end() && refs->is_array()) {
    for (const auto& r : *refs) {
      if (r.is_object() && r.value("controller", false)) return string_at(r, "uid");
    }
  }
  return "";
}

ServiceFacts parse_service_facts(const json& svc) {
  require_object(svc, "Service");
  const json& md = object_or_empty(svc, "metadata");
  return {string_at(md, "namespace"), string_at(md, "name"), controller_uid(svc)};
}

SecretFacts parse_secret_facts(const json& secret) {
  require_object(secret, "Secret");
  const json& md = object_or_empty(secret, "metadata");
  SecretFacts f{string_at(md, "namespace"), string_at(md, "name"), controller_uid(secret), "", ""};
  if (const json* labels = object_at(md, "labels")) f.job_name = string_at(*labels, kJobNameLabel);
  if (const json* data = object_at(secret, "data")) f.secret_b64 = string_at(*data, "secret");
  return f;
}

NodeFacts parse_node_facts(const json& node) {
  require_object(node, "node");
  NodeFacts f;
  const json& md = object_or_empty(node, "metadata");
  f.name = string_at(md, "name");
  f.resource_version = string_at(md, "resourceVersion");
  const json* spec = object_at(node, "spec");
  f.unschedulable = spec != nullptr && spec->value("unschedulable", false);
  if (spec != nullptr) {
    if (auto taints = spec->find("taints"); taints != spec->end() && taints->is_array()) {
      for (const auto& t : *taints) {
        f.out_of_service = f.out_of_service || (t.is_object() && text_at(t, "key") == kOutOfServiceTaint);
        f.avoided_taint = f.avoided_taint || (t.is_object() && text_at(t, "key") == kAvoidedTaint);
      }
      if (!taints->empty()) f.taints = *taints;
    }
  }
  const json& st = object_or_empty(node, "status");
  if (auto conds = st.find("conditions"); conds != st.end() && conds->is_array()) {
    for (const auto& c : *conds) {
      if (!c.is_object() || text_at(c, "type") != "Ready") continue;
      f.ready = text_at(c, "status") == "True";
      (f.ready ? f.schedulable_since : f.not_ready_since) = string_at(c, "lastTransitionTime");
    }
  }
  const std::string_view created = text_at(md, "creationTimestamp");
  if (f.ready && created > f.schedulable_since) f.schedulable_since = created;  // RFC 3339 UTC sorts as text
  if (!f.ready) f.schedulable_since.clear();
  return f;
}

}  // namespace kubedist::trainingjob
