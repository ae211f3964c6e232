#include "trainingjob/decide/decide_state.h"

#include <algorithm>
#include <set>

namespace kubedist::trainingjob {

DecideState::DecideState(const TrainingJob& job, const Observed& observed, UnixSeconds now)
    : job(job), spec(job.spec), obs(observed), now(now) {
  std::set<std::string> present;
  for (const auto& pod : observed.pods) {
    if (pod.owner_uid != job.uid) continue;  // not ours: another controller's or a user's pod
    (pod.deleting ? terminating : live).push_back(pod);
    present.insert(pod.uid);
  }
  plan.status = job.status;
  // A status written before restartsByReason existed: its restarts were all pod failures (one backoffLimit budget).
  if (plan.status.restarts_by_reason.empty() && plan.status.restarts > 0) {
    plan.status.restarts_by_reason[kRestartPodFailure] = plan.status.restarts;
  }
  // Pods counted as lost or failed are remembered only while they exist, so that each is counted once.
  for (auto* counted : {&plan.status.lost_pods, &plan.status.failed_pods}) {
    counted->erase(std::remove_if(counted->begin(), counted->end(),
                                  [&](const std::string& uid) { return !present.count(uid); }),
                   counted->end());
  }
}

void DecideState::emit(const std::string& type, const std::string& reason, const std::string& message) {
  plan.events.push_back({type, reason, message});
}

void DecideState::delete_pod(const PodFacts& pod, bool force) { plan.delete_pods.push_back({pod.name, pod.uid, force}); }

void DecideState::requeue(int64_t seconds) {
  seconds = std::max<int64_t>(seconds, 1);
  if (!plan.requeue_after_s || seconds < *plan.requeue_after_s) plan.requeue_after_s = seconds;
}

void DecideState::count_restart(const std::string& reason, int n) {
  plan.status.restarts_by_reason[reason] += n;
  plan.status.restarts += n;
  last_reason = reason;
}

void DecideState::count_pod_restart(const std::string& reason) {
  count_restart(reason);
  ++plan.status.launcher.absorb;
}

void DecideState::count_pod_loss(int rank) {
  LauncherSeen& seen = plan.status.launcher;
  auto& ranks = seen.prepaid_nodes;
  if (auto it = std::find(ranks.begin(), ranks.end(), rank); it != ranks.end()) {
    ranks.erase(it);  // the launchers lost this node first and it never came back: the same loss
    last_reason = kRestartNodeLost;
    return;
  }
  if (seen.prepaid > 0) {
    const auto at = parse_rfc3339(seen.prepaid_at);
    if (at && now - *at <= kPrepaidWindowS) {
      --seen.prepaid;  // the launchers' report of this loss came first and is already a node_lost restart
      last_reason = kRestartNodeLost;
      return;
    }
    seen.prepaid = 0;  // too old to be this loss
  }
  count_pod_restart(kRestartNodeLost);
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace kubedist::trainingjob
