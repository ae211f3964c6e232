#include "trainingjob/decide/bad_nodes.h"

#include <algorithm>

namespace kubedist::trainingjob {
namespace {

// With --taint-avoided-nodes: taint kAvoidedTaint:NoSchedule added to the node's own (a merge patch replaces the
// list whole, so it is written on the version the taints were read from). Once, as the job comes to avoid it: an
// administrator who removes the taint is not overruled. Needs the node watch, to know the node's taints.
bool taint(DecideState& s, const std::string& name) {
  if (!s.obs.taint_avoided_nodes || !s.obs.nodes_watched) return false;
  for (const NodeFacts& node : s.obs.nodes) {
    if (node.name != name) continue;
    if (node.avoided_taint) return true;
    nlohmann::json taints = node.taints.is_array() ? node.taints : nlohmann::json::array();
    taints.push_back({{"key", kAvoidedTaint}, {"value", ""}, {"effect", "NoSchedule"}});
    s.write({Write::Verb::kMergePatch, "Node", name, "/api/v1/nodes/" + name, {{"spec", {{"taints", taints}}}},
             node.resource_version});
    return true;
  }
  return false;  // not in the cache: deleted, or not seen yet
}

}  // namespace

bool failure_is_the_nodes(const PodFacts& pod) {
  if (pod.failure_reason == "OOMKilled") return true;
  return !pod.exit_code || *pod.exit_code >= 128;
}

void note_node_failure(DecideState& s, const std::string& node, const std::string& what) {
  const int limit = s.obs.avoid_node_after_failures;
  if (limit <= 0 || node.empty()) return;
  Status& st = s.plan.status;
  auto counted = st.node_failures.find(node);
  if (counted == st.node_failures.end()) {
    if (st.node_failures.size() >= kMaxNodesTracked) return;
    counted = st.node_failures.emplace(node, 0).first;
  }
  const int failures = ++counted->second;
  auto& avoided = st.avoided_nodes;
  if (failures < limit || std::find(avoided.begin(), avoided.end(), node) != avoided.end()) return;
  avoided.push_back(node);
  const bool tainted = taint(s, node);
  s.emit("Warning", "NodeAvoided",
         "node " + node + ": " + std::to_string(failures) + " failures of this job's pods there not caused by the " +
             "training code (the latest: " + what + "); its new pods avoid the node (status.avoidedNodes)" +
             (tainted ? std::string("; tainted ") + kAvoidedTaint + ":NoSchedule for every new pod" : ""));
}

}  // namespace kubedist::trainingjob
