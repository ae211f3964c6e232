#include "trainingjob/decide/ranks.h"

#include <algorithm>

#include "common/backoff.h"
#include "contract/pod_env.h"
#include "trainingjob/render/render.h"
#include "trainingjob/decide/rendezvous.h"
#include "trainingjob/decide/spares.h"
#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {
namespace {

constexpr int64_t kRefusedBackoffFirstS = 5;
constexpr int64_t kRefusedBackoffMaxS = 300;

// Whether the job's missing pods may be created now; otherwise they wait for retry_at. Either way the refusal is
// the job's condition PodsRefused, and a new reason (or the first refusal) its Warning Event.
bool note_refusal(DecideState& s, const PodRefusal& refused) {
  Status& st = s.plan.status;
  const std::string reason = refusal_reason(refused.message);
  const Condition* before = find_condition(st, ConditionType::kPodsRefused);
  const std::string message = "the API server refused pod " + refused.pod + ": " + refused.message;
  if (before == nullptr || before->status != "True" || before->reason != reason) {
    s.emit("Warning", "PodsRefused", message + " (retrying with backoff)");
  }
  set_condition(st, ConditionType::kPodsRefused, true, reason, message, s.now);
  if (s.now >= refused.retry_at) return true;
  s.plan.creates_held = true;
  s.requeue(refused.retry_at - s.now);
  return false;
}

}  // namespace

int64_t refused_create_backoff_s(int attempts) {
  const BackoffPolicy policy{std::chrono::seconds(kRefusedBackoffFirstS), std::chrono::seconds(kRefusedBackoffMaxS)};
  return std::chrono::duration_cast<std::chrono::seconds>(policy.delay(std::max(attempts, 1) - 1)).count();
}

std::string refusal_reason(const std::string& message) {
  if (message.find("violates PodSecurity") != std::string::npos) return "PodSecurity";
  if (message.find("exceeded quota") != std::string::npos || message.find("failed quota") != std::string::npos) {
    return "ResourceQuota";
  }
  if (message.find("admission webhook") != std::string::npos) return "AdmissionWebhook";
  return "Forbidden";
}

bool Ranks::is_spare(const PodFacts& pod) const {
  return std::any_of(spares.begin(), spares.end(), [&pod](const PodFacts* p) { return p->uid == pod.uid; });
}

Ranks decide_ranks(DecideState& s, int target, const std::set<std::string>& lost_uids, bool elastic_changed) {
  Ranks r;
  const std::string& job = s.job.name;
  std::set<std::string> standing_in;  // uids of the pods that hold a place a spare took
  for (const auto& [slot, rank] : s.stand_ins) {
    for (const auto& pod : s.live) {
      if (lost_uids.count(pod.uid) != 0 || pod.rank != rank || pod.name != pod_name(job, rank)) continue;
      if (slot < target && r.by_rank.count(slot) == 0 && standing_in.insert(pod.uid).second) r.by_rank[slot] = &pod;
    }
  }
  std::vector<const PodFacts*> candidates;  // spares to keep, up to spec.spares
  std::vector<std::string> failed_spares;
  for (const auto& pod : s.live) {
    if (lost_uids.count(pod.uid) != 0 || standing_in.count(pod.uid) != 0) continue;
    const bool named = pod.rank >= 0 && pod.name == pod_name(job, pod.rank);
    if (named && pod.rank < target && r.by_rank.count(pod.rank) == 0) {
      r.by_rank[pod.rank] = &pod;
      continue;
    }
    // A spare pod, or the member whose place a spare took (its launcher waits as a spare now).
    const bool displaced = named && pod.rank < target && s.stand_ins.count(pod.rank) != 0;
    if (named && (is_spare_rank(pod.rank) || displaced)) {
      // A spare where it cannot stand in for long: on a node cordoned or announced for termination. NotReady may
      // pass (and the node-lost grace judges it); many nodes at once NotReady must not cost every spare.
      const auto going = pod_node_going_away(s, pod);
      const bool ended = pod.phase == "Failed" || pod.phase == "Succeeded";
      if (!ended && !(going && *going != contract::ReleaseWhy::kNotReady)) {
        candidates.push_back(&pod);
        continue;
      }
      if (!ended) {
        r.spares_going_away.push_back(&pod);
        s.delete_pod(pod);
        continue;
      }
      if (pod.phase == "Failed") failed_spares.push_back(pod.name);
      s.delete_pod(pod);
      continue;
    }
    s.delete_pod(pod);
    r.surplus.push_back(pod.name);
  }
  if (!r.surplus.empty() && !elastic_changed) {
    s.emit("Normal", "ScaledDown",
           "deleting pods " + join_names(r.surplus) + " (spec.replicas=" + std::to_string(target) + ")");
  }
  if (!failed_spares.empty()) {
    s.emit("Warning", "SpareFailed", "spare pods " + join_names(failed_spares) + " failed; making new ones");
  }
  if (!r.spares_going_away.empty()) {
    std::vector<std::string> names;
    for (const PodFacts* pod : r.spares_going_away) names.push_back(pod->name + " (" + pod->node_name + ")");
    s.emit("Normal", "SparesMoved",
           "deleting spare pods " + join_names(names) + ": their nodes are going away; new spares go elsewhere");
  }
  // Node 0's rendezvous says which spares wait ready: those are kept first, then the lowest ranks.
  const std::vector<int>* ready = ready_spares(s);
  const auto is_ready = [ready](const PodFacts* p) {
    return ready != nullptr && std::find(ready->begin(), ready->end(), p->rank) != ready->end();
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const PodFacts* a, const PodFacts* b) {
    return is_ready(a) != is_ready(b) ? is_ready(a) : a->rank < b->rank;
  });
  std::vector<std::string> extra;
  for (const PodFacts* pod : candidates) {
    if (static_cast<int>(r.spares.size()) < s.spec.spares) {
      r.spares.push_back(pod);
    } else {
      s.delete_pod(*pod);
      extra.push_back(pod->name);
    }
  }
  if (!extra.empty()) {
    s.emit("Normal", "SparesDeleted",
           "deleting spare pods " + join_names(extra) + " (spec.spares=" + std::to_string(s.spec.spares) + ")");
  }
  return r;
}

void decide_creates(DecideState& s, int target, const Ranks& ranks, const std::set<std::string>& lost_uids,
                    bool elastic_changed) {
  Status& st = s.plan.status;
  const TrainingJob& job = s.job;
  if (!s.live.empty() && !condition_true(st, ConditionType::kCreated)) {
    set_condition(st, ConditionType::kCreated, true, "PodsCreated", "the job's pods exist", s.now);
  }
  std::vector<std::string> created;
  for (int rank = 0; rank < target; ++rank) {
    if (ranks.by_rank.count(rank) != 0) continue;
    bool terminating = false;  // wait until the old pod of this name is gone
    for (const auto& pod : s.terminating) terminating = terminating || pod.name == pod_name(job.name, rank);
    for (const auto& pod : s.live) {  // lost now: deleted by this plan
      terminating = terminating || (lost_uids.count(pod.uid) != 0 && pod.name == pod_name(job.name, rank));
    }
    if (terminating || spare_takes_place_of(s, rank)) continue;
    if (job.status.phase == JobPhase::kRunning && rank < job.status.replicas && !elastic_changed) {
      // Every pod ran at the last status write and this one vanished unseen (deleted at once, node gone).
      s.count_pod_loss(rank);
      s.plan.status_before_creates = true;
      s.lost.push_back(pod_name(job.name, rank));
      s.emit("Warning", "PodLost", "pod " + pod_name(job.name, rank) + " vanished; recreating it");
    }
    s.plan.create_ranks.push_back(rank);
    created.push_back(pod_name(job.name, rank));
  }
  // New spares take the first indices no pod of the job holds (one being deleted may still run: never its name).
  int wanted = s.spec.spares - static_cast<int>(ranks.spares.size());
  for (int index = 0; wanted > 0 && index < 2 * s.spec.spares; ++index) {
    const int rank = contract::kSpareNodeRankBase + index;
    bool taken = false;
    for (const auto* pods : {&s.live, &s.terminating})
      for (const auto& pod : *pods) taken = taken || pod.name == pod_name(job.name, rank);
    if (taken) continue;
    s.plan.create_ranks.push_back(rank);
    created.push_back(pod_name(job.name, rank));
    --wanted;
  }
  if (!created.empty() && hold_for_refused_key(s)) {
    s.plan.create_ranks.clear();  // nothing claimed: no Created condition, no Created Event
    return;
  }
  if (s.obs.pod_refused && !created.empty()) {
    // Nothing is claimed until the server takes the pods: no Created condition, no Created Event.
    if (!note_refusal(s, *s.obs.pod_refused)) s.plan.create_ranks.clear();
    return;
  }
  if (created.empty() && condition_true(st, ConditionType::kPodsRefused)) {
    set_condition(st, ConditionType::kPodsRefused, false, "PodsCreated", "the API server took the job's pods", s.now);
  }
  if (!created.empty()) {
    if (!condition_true(st, ConditionType::kCreated)) {
      set_condition(st, ConditionType::kCreated, true, "PodsCreated",
                    "created Service " + job.name + " and " + std::to_string(created.size()) + " pods", s.now);
      s.emit("Normal", "Created", "creating Service " + job.name + " and pods " + join_names(created));
    } else if (job.generation != job.status.observed_generation && target > job.status.replicas) {
      s.emit("Normal", "ScaledUp",
             "creating pods " + join_names(created) + " (spec.replicas=" + std::to_string(target) + ")");
    } else {
      s.emit("Normal", "CreatedPods", "creating missing pods " + join_names(created));
    }
  } else if (s.create_service && condition_true(st, ConditionType::kCreated)) {
    s.emit("Normal", "CreatedService", "creating missing Service " + job.name);
  }
}

}  // namespace kubedist::trainingjob
