#include "trainingjob/decide/checkpoint.h"

#include "trainingjob/api/names.h"
#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {

void note_checkpoint(DecideState& s, const PodFacts* node0) {
  const auto& report = s.obs.launcher;
  if (!report || node0 == nullptr || report->pod_uid != node0->uid || !report->checkpoint) return;
  const contract::StatusCheckpoint& c = *report->checkpoint;
  if (s.plan.status.checkpoint && s.plan.status.checkpoint->step == c.step) return;
  const UnixSeconds polled = report->polled_at > 0 ? report->polled_at : s.now;
  s.plan.status.checkpoint = CheckpointStatus{c.step, format_rfc3339(polled - c.age_ms / 1000), c.reason, c.ranks};
}

void note_checkpoint_volume(DecideState& s) {
  Status& st = s.plan.status;
  const ConditionType type = ConditionType::kCheckpointVolumeMissing;
  const PodFacts* waiting = nullptr;
  if (const auto& c = s.spec.checkpoint) {
    // kube-scheduler's VolumeBinding: `persistentvolumeclaim "NAME" not found`.
    const std::string missing = "persistentvolumeclaim \"" + c->claim_name + "\" not found";
    for (const auto& pod : s.live)
      if (pod.phase == "Pending" && pod.unschedulable_message.find(missing) != std::string::npos) waiting = &pod;
  }
  if (waiting != nullptr) {
    const std::string message = "PersistentVolumeClaim " + s.spec.checkpoint->claim_name +
                                " (spec.checkpoint.claimName) does not exist in namespace " + s.job.ns +
                                ": the job's pods wait for it (pod " + waiting->name + ": " +
                                waiting->unschedulable_message + ")";
    if (!condition_true(st, type)) s.emit("Warning", "CheckpointVolumeMissing", message);
    set_condition(st, type, true, "ClaimNotFound", message, s.now);
  } else if (condition_true(st, type)) {
    set_condition(st, type, false, "ClaimFound", "the job's pods found their checkpoint volume", s.now);
  }
}

void checkpoint_before_release(DecideState& s) {
  if (!s.spec.checkpoint || s.spec.min_replicas != s.spec.max_replicas) return;
  auto& releases = s.plan.releases;
  for (auto it = releases.begin(); it != releases.end();) {
    const PodFacts* pod = nullptr;
    for (const PodFacts& p : s.live)
      if (p.uid == it->pod_uid) pod = &p;
    if (pod == nullptr || is_spare_rank(it->notice.node_rank) || it->notice.why == contract::ReleaseWhy::kNotReady) {
      ++it;
      continue;
    }
    s.delete_pod(*pod);
    s.emit("Normal", "NodeGoingAway",
           "node " + it->node + " of pod " + it->pod + " is going away (" + contract::to_string(it->notice.why) +
               "): the pod is deleted so that its workers save a checkpoint first; a spare takes its place and "
               "resumes from it");
    it = releases.erase(it);
  }
}

}  // namespace kubedist::trainingjob
