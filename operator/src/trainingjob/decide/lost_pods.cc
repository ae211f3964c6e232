#include "trainingjob/decide/lost_pods.h"

#include <algorithm>

#include "trainingjob/decide/bad_nodes.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

// How soon to look again at a pod whose node is missing from the cache but not confirmed gone.
constexpr int64_t kUnconfirmedNodeRetryS = 5;

// Whether the node-lost grace that began at `since` still runs; if so, the job is requeued for its end.
bool node_grace_left(DecideState& s, UnixSeconds since) {
  const int64_t left = since + s.obs.node_lost_grace_s - s.now;
  if (left > 0) s.requeue(left);
  return left > 0;
}

bool counted_lost(const DecideState& s, const std::string& uid) {
  const auto& lost = s.plan.status.lost_pods;
  return std::find(lost.begin(), lost.end(), uid) != lost.end();
}

}  // namespace

bool failure_is_node_loss(const PodFacts& pod) {
  // Not the kubelet's admission refusals (NodeAffinity, OutOfpods...): the pod never ran there, and taking them
  // for lost nodes recreated a pod its node refuses at once, for ever (failures.h).
  static const std::set<std::string> reasons{"Evicted", "NodeLost", "Shutdown", "NodeShutdown", "Terminated"};
  return reasons.count(pod.failure_reason) != 0 && pod.phase == "Failed";
}

NodeLoss node_lost(DecideState& s, const PodFacts& pod) {
  if (!s.obs.nodes_watched || pod.node_name.empty()) return {};
  for (const auto& node : s.obs.nodes) {
    if (node.name != pod.node_name) continue;
    if (node.ready) return {};
    // An administrator confirmed it shut down (Kubernetes' non-graceful node shutdown): no grace to wait.
    if (node.out_of_service) {
      return {"node " + node.name + " is out of service (taint " + kOutOfServiceTaint + ")", true};
    }
    const UnixSeconds since = parse_rfc3339(node.not_ready_since).value_or(s.now);
    if (node_grace_left(s, since)) return {};
    return {"node " + node.name + " has been NotReady for " + std::to_string(s.now - since) + "s", false};
  }
  if (s.obs.nodes_gone.count(pod.node_name) != 0) return {"node " + pod.node_name + " was deleted", true};
  // Missing from the cache but not confirmed gone: a node so new that the node watch has not shown it yet (it lags
  // the pod watch at times), or one the API server could not be asked about. Look again soon.
  s.requeue(kUnconfirmedNodeRetryS);
  return {};
}

std::optional<Ending> node_loss_limit_reached(const DecideState& s) {
  const int limit = s.obs.node_loss_limit;
  if (limit <= 0 || s.lost.empty()) return std::nullopt;
  const auto& by_reason = s.plan.status.restarts_by_reason;
  const auto it = by_reason.find(kRestartNodeLost);
  const int losses = it == by_reason.end() ? 0 : it->second;
  if (losses <= limit) return std::nullopt;
  return Ending{false, "NodeLossLimitExceeded",
                "pod " + s.lost.back() + " was lost with its node, the job's loss " + std::to_string(losses) +
                    " of --node-loss-limit " + std::to_string(limit) +
                    ": the job stops instead of recreating its pods for ever; find why its nodes keep going (the "
                    "PodLost Events name them)"};
}

std::set<std::string> decide_lost_pods(DecideState& s, int target) {
  Status& st = s.plan.status;
  // Pods someone else is deleting (kubectl delete, an eviction) while the job runs: their node is lost to the job.
  // Not while Scaling: pods a scale-down removed may still be terminating when the user scales up again.
  const bool was_running = s.job.status.phase == JobPhase::kRunning || s.job.status.phase == JobPhase::kRestarting;
  for (const auto& pod : s.terminating) {
    // A pod terminating on a node that is gone (drained, then powered off) waits for a kubelet that never
    // confirms, and its rank cannot be recreated until it is gone: force it once the node is confirmed gone.
    if (pod.phase != "Succeeded" && pod.phase != "Failed" && node_lost(s, pod).force) s.delete_pod(pod, true);
    const bool ours = pod.rank >= 0 && pod.rank < target && pod.name == pod_name(s.job.name, pod.rank);
    if (!was_running || !ours || pod.phase == "Failed" || pod.phase == "Succeeded") continue;
    if (counted_lost(s, pod.uid)) continue;
    st.lost_pods.push_back(pod.uid);
    s.count_pod_loss(pod.rank);
    s.lost.push_back(pod.name);
    s.emit("Warning", "PodLost", "pod " + pod.name + " is being deleted; it will be recreated");
  }
  // Pods whose node is gone or NotReady past the grace, or that their node evicted: deleted (forced where the node
  // is confirmed gone) and recreated once gone.
  std::set<std::string> lost_uids;
  for (const auto& pod : s.live) {
    // A finished pod keeps its verdict: a node that goes after its pod succeeded (or failed for its own
    // reason) loses nothing of the job, and running the node's work again could not join a finished group.
    if (pod.phase == "Succeeded" || (pod.phase == "Failed" && !failure_is_node_loss(pod))) continue;
    const NodeLoss loss = node_lost(s, pod);
    std::string why = loss.why;
    // The node's own state (NotReady, deleted, out of service) or its shutdown implicates it; an eviction may be
    // the pod's own doing (its ephemeral storage over its limit).
    NodeEvidence evidence = NodeEvidence::kNodesOwn;
    if (why.empty() && pod.phase == "Failed" && failure_is_node_loss(pod)) {
      why = "its node ended it (reason " + pod.failure_reason + ")";
      if (pod.failure_reason == "Evicted") evidence = NodeEvidence::kJobsOwn;
    }
    if (why.empty()) continue;
    lost_uids.insert(pod.uid);
    s.delete_pod(pod, loss.force);
    const bool in_target = pod.rank >= 0 && pod.rank < target;
    // Counted once: a delete that failed, or a cache that has not seen it yet, brings the same pod back here.
    const bool counted = counted_lost(s, pod.uid);
    if (!in_target || counted) {
      if (counted) s.lost.push_back(pod.name);
      continue;
    }
    st.lost_pods.push_back(pod.uid);
    s.count_pod_loss(pod.rank);
    s.lost.push_back(pod.name);
    s.emit("Warning", "PodLost",
           "pod " + pod.name + " was lost: " + why +
               (loss.lost() && !loss.force ? "; recreating it once its node confirms the deletion or is confirmed gone"
                                           : "; recreating it"));
    note_node_failure(s, pod.node_name, "pod " + pod.name + " was lost: " + why, evidence);
  }
  return lost_uids;
}

}  // namespace kubedist::trainingjob
