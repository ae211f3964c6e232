#include "trainingjob/decide/phase.h"

#include <algorithm>

#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {

void decide_phase(DecideState& s, int target, const Ranks& ranks, const FailureVerdict& failures,
                  bool elastic_changed) {
  Status& st = s.plan.status;
  const TrainingJob& job = s.job;
  const auto& by_rank = ranks.by_rank;
  // The spares (waiting, or a spare pod going) are no replicas of the job; a spare that took a place is.
  std::vector<PodFacts> members;
  for (const auto& pod : s.live) {
    const bool holds_rank = std::any_of(by_rank.begin(), by_rank.end(), [&](const auto& r) { return r.second->uid == pod.uid; });
    if (holds_rank || (!is_spare_rank(pod.rank) && !ranks.is_spare(pod))) members.push_back(pod);
  }
  observe_pods(st, s.spec, members);
  const auto node0 = by_rank.find(0);
  const bool launcher_current = s.obs.launcher && node0 != by_rank.end() && s.obs.launcher->pod_uid == node0->second->uid;
  if (launcher_current && s.obs.launcher->phase == "running") st.world_size = s.obs.launcher->world_size;
  const int running = st.ready_replicas;
  // A node whose trainer already exited 0 is done, not missing: the others may still be finishing.
  int finished = 0;
  for (const auto& [rank, pod] : by_rank) finished += pod->phase == "Succeeded" ? 1 : 0;
  const bool complete =
      running + finished == target && ranks.surplus.empty() && failures.retryable.empty() && s.lost.empty();
  // The launchers are re-forming the group (after a crash, a lost node or a new size) although every pod runs.
  const bool regrouping = launcher_current && s.obs.launcher->phase == "gathering" && s.obs.launcher->round >= 0;
  if (!s.lost.empty()) {
    st.phase = JobPhase::kRestarting;
    set_condition(st, ConditionType::kRestarting, true, "PodLost", "recreating lost pods " + join_names(s.lost), s.now);
  } else if (!failures.retryable.empty() || (job.status.phase == JobPhase::kRestarting && !complete)) {
    st.phase = JobPhase::kRestarting;
    if (!failures.retryable.empty()) {
      set_condition(st, ConditionType::kRestarting, true, "PodFailed", failures.restart_message, s.now);
    }
  } else if (complete && regrouping) {
    // The latest restart says why; with none new, the group is still re-forming for the reason shown before.
    const bool scaling = !s.last_reason.empty() ? s.last_reason == kRestartScale
                                                : elastic_changed || job.status.phase == JobPhase::kScaling;
    st.phase = scaling ? JobPhase::kScaling : JobPhase::kRestarting;
    if (!scaling && !s.last_reason.empty()) {
      set_condition(st, ConditionType::kRestarting, true, s.last_reason == kRestartNodeLost ? "NodeLost" : "WorkerCrash",
                    "the launchers are re-forming the worker group after a " +
                        std::string(s.last_reason == kRestartNodeLost ? "lost node" : "worker crash"),
                    s.now);
    }
  } else if (complete) {
    st.phase = JobPhase::kRunning;
    set_condition(st, ConditionType::kRunning, true, "AllNodesRunning",
                  std::to_string(running) + "/" + std::to_string(target) + " nodes running", s.now);
    if (condition_true(st, ConditionType::kRestarting)) {
      set_condition(st, ConditionType::kRestarting, false, "AllNodesRunning", "all nodes are running again", s.now);
    }
  } else if (!ranks.surplus.empty() || elastic_changed || job.status.phase == JobPhase::kScaling ||
             (condition_true(job.status, ConditionType::kCreated) && job.generation != job.status.observed_generation &&
              target != job.status.replicas)) {
    st.phase = JobPhase::kScaling;  // spec.replicas changed (kubectl scale): pods are being added or removed
  } else if (job.status.phase == JobPhase::kRunning) {
    st.phase = JobPhase::kRestarting;  // a node's pod vanished (deleted, evicted) and is being recreated
  } else {
    st.phase = JobPhase::kPending;
  }
}

}  // namespace kubedist::trainingjob
