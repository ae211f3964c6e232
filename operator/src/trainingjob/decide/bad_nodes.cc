#include "trainingjob/decide/bad_nodes.h"

#include <algorithm>
#include <charconv>

namespace kubedist::trainingjob {
namespace {

// The exit codes of a process ended by a signal: 128 + the signal's number (1 to 64).
constexpr int kFirstSignalCode = 129;
constexpr int kLastSignalCode = 128 + 64;

// The second kAvoidedTaint was added to a node, from its value; nullopt when it holds none (an earlier operator's).
std::optional<UnixSeconds> tainted_at(const nlohmann::json& taint) {
  const std::string value = taint.is_object() ? taint.value("value", std::string()) : std::string();
  UnixSeconds at = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), at);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty()) return std::nullopt;
  return at;
}

bool is_avoided_taint(const nlohmann::json& taint) {
  return taint.is_object() && taint.value("key", std::string()) == kAvoidedTaint;
}

enum class Tainted { kNo, kNow, kAlready, kCapped };

// With --taint-avoided-nodes: taint kAvoidedTaint:NoSchedule, valued with the second it is added, added to the
// node's own (a merge patch replaces the list whole, so it is written on the version the taints were read from).
// Once: an administrator who removes the taint is not overruled. Needs the node watch, to know the node's taints.
Tainted taint(DecideState& s, const std::string& name) {
  if (!s.obs.taint_avoided_nodes || !s.obs.nodes_watched) return Tainted::kNo;
  const NodeFacts* node = nullptr;
  int tainted = 0;
  for (const NodeFacts& n : s.obs.nodes) {
    if (n.name == name) node = &n;
    tainted += n.avoided_taint ? 1 : 0;
  }
  if (node == nullptr) return Tainted::kNo;  // not in the cache: deleted, or not seen yet
  if (node->avoided_taint) return Tainted::kAlready;
  if (tainted >= s.obs.max_tainted_nodes) return Tainted::kCapped;
  nlohmann::json taints = node->taints.is_array() ? node->taints : nlohmann::json::array();
  taints.push_back({{"key", kAvoidedTaint}, {"value", std::to_string(s.now)}, {"effect", "NoSchedule"}});
  s.write({Write::Verb::kMergePatch, "Node", name, "/api/v1/nodes/" + name, {{"spec", {{"taints", taints}}}},
           node->resource_version});
  return Tainted::kNow;
}

std::string taint_note(const DecideState& s, Tainted t, NodeEvidence evidence) {
  if (!s.obs.taint_avoided_nodes) return "";
  switch (t) {
    case Tainted::kNow:
      return std::string("; tainted ") + kAvoidedTaint + ":NoSchedule for every new pod";
    case Tainted::kCapped:
      return "; not tainted: " + std::to_string(s.obs.max_tainted_nodes) + " nodes carry " + kAvoidedTaint +
             " already (--max-tainted-nodes)";
    case Tainted::kAlready:
      return std::string("; tainted ") + kAvoidedTaint + " already";
    case Tainted::kNo:
      break;
  }
  return evidence == NodeEvidence::kJobsOwn ? "; not tainted for other jobs: what one job's pods saw is no proof "
                                              "against the node"
                                            : "";
}

}  // namespace

bool failure_is_the_nodes(const PodFacts& pod) {
  if (!pod.exit_code) return true;
  if (pod.failure_reason == "OOMKilled") return false;
  return *pod.exit_code >= kFirstSignalCode && *pod.exit_code <= kLastSignalCode;
}

NodeEvidence failure_evidence(const DecideState& s, const PodFacts& pod) {
  if (pod.exit_code != kBusErrorExitCode) return NodeEvidence::kJobsOwn;
  auto seen = s.obs.bus_error_namespaces.find(pod.node_name);
  if (seen == s.obs.bus_error_namespaces.end()) return NodeEvidence::kJobsOwn;
  for (const auto& ns : seen->second) {
    if (ns != s.job.ns) return NodeEvidence::kNodesOwn;
  }
  return NodeEvidence::kJobsOwn;
}

void note_node_failure(DecideState& s, const std::string& node, const std::string& what, NodeEvidence evidence) {
  const int limit = s.obs.avoid_node_after_failures;
  if (limit <= 0 || node.empty()) return;
  Status& st = s.plan.status;
  auto counted = st.node_failures.find(node);
  if (counted == st.node_failures.end()) {
    if (st.node_failures.size() >= kMaxNodesTracked) return;
    counted = st.node_failures.emplace(node, 0).first;
  }
  const int failures = ++counted->second;
  if (failures < limit) return;
  auto& avoided = st.avoided_nodes;
  const bool newly = std::find(avoided.begin(), avoided.end(), node) == avoided.end();
  const Tainted t = evidence == NodeEvidence::kNodesOwn ? taint(s, node) : Tainted::kNo;
  if (newly) {
    avoided.push_back(node);
    s.emit("Warning", "NodeAvoided",
           "node " + node + ": " + std::to_string(failures) + " failures of this job's pods there not caused by the " +
               "training code (the latest: " + what + "); its new pods avoid the node (status.avoidedNodes)" +
               taint_note(s, t, evidence));
  } else if (t == Tainted::kNow || t == Tainted::kCapped) {
    s.emit("Warning", "NodeTainted",
           "node " + node + ", avoided by this job, failed itself: " + what + taint_note(s, t, evidence));
  }
}

std::vector<Write> expired_avoided_taints(const std::vector<NodeFacts>& nodes, UnixSeconds now, int64_t ttl_s) {
  std::vector<Write> writes;
  for (const NodeFacts& node : nodes) {
    if (!node.avoided_taint || !node.taints.is_array()) continue;
    nlohmann::json kept = nlohmann::json::array();
    bool expired = false;
    for (const auto& t : node.taints) {
      if (is_avoided_taint(t)) {
        const auto at = tainted_at(t);
        if (!at || now - *at >= ttl_s) {
          expired = true;
          continue;
        }
      }
      kept.push_back(t);
    }
    if (!expired) continue;
    writes.push_back({Write::Verb::kMergePatch, "Node", node.name, "/api/v1/nodes/" + node.name,
                      {{"spec", {{"taints", kept}}}}, node.resource_version});
  }
  return writes;
}

}  // namespace kubedist::trainingjob
