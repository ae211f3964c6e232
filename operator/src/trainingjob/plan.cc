#include "trainingjob/plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "trainingjob/elastic.h"
#include "trainingjob/render.h"
#include "trainingjob/status.h"

namespace kubedist::trainingjob {
namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "pod J-node-1 failed (exit code 3, reason Error): <the launcher's summary of the failed worker>".
std::string describe_failure(const PodFacts& pod) {
  std::string d = "pod " + pod.name + " failed";
  std::string details;
  if (pod.exit_code) details = "exit code " + std::to_string(*pod.exit_code);
  if (!pod.failure_reason.empty()) details += (details.empty() ? "reason " : ", reason ") + pod.failure_reason;
  if (!details.empty()) d += " (" + details + ")";
  return pod.termination_message.empty() ? d : d + ": " + pod.termination_message;
}

// Pods that failed together, the first to end first (an unknown end last): the others usually failed because
// their group broke, so the first is what a user needs to see.
void sort_by_end(std::vector<const PodFacts*>& failed) {
  std::stable_sort(failed.begin(), failed.end(), [](const PodFacts* a, const PodFacts* b) {
    return !a->finished_at.empty() && (b->finished_at.empty() || a->finished_at < b->finished_at);
  });
}

// The pods cleanPodPolicy removes once the job has finished.
bool cleaned_up(CleanPodPolicy policy, const PodFacts& pod) {
  switch (policy) {
    case CleanPodPolicy::kAll: return true;
    case CleanPodPolicy::kRunning: return pod.phase != "Succeeded" && pod.phase != "Failed";
    case CleanPodPolicy::kNone: return false;
  }
  return false;
}

// The causes a launcher can report; pod_failure is the operator's own count (it spends backoffLimit).
bool is_launcher_reason(const std::string& reason) {
  return reason == kRestartWorkerCrash || reason == kRestartNodeLost || reason == kRestartScale;
}

// More in-place restarts than this between two polls is no report to trust (and would overflow the counts).
constexpr int kMaxLauncherDelta = 100000;

class Decider {
 public:
  Decider(const TrainingJob& job, const Observed& observed, UnixSeconds now)
      : job_(job), spec_(job.spec), obs_(observed), service_exists_(observed.service_exists), now_(now) {
    std::set<std::string> present;
    for (const auto& pod : observed.pods) {
      if (pod.owner_uid != job.uid) continue;  // not ours: another controller's or a user's pod
      (pod.deleting ? terminating_ : live_).push_back(pod);
      present.insert(pod.uid);
    }
    plan_.status = job.status;
    // A status written before restartsByReason existed: its restarts were all pod failures (one backoffLimit budget).
    if (plan_.status.restarts_by_reason.empty() && plan_.status.restarts > 0) {
      plan_.status.restarts_by_reason[kRestartPodFailure] = plan_.status.restarts;
    }
    // Pods counted as lost are remembered only while they exist, so that each is counted once.
    auto& lost = plan_.status.lost_pods;
    lost.erase(std::remove_if(lost.begin(), lost.end(), [&](const std::string& uid) { return !present.count(uid); }),
               lost.end());
  }

  Plan run() {
    if (job_.deleting) return std::move(plan_);  // garbage collection removes the pods
    Status& st = plan_.status;
    st.observed_generation = job_.generation;
    st.selector = selector_for(job_.name);

    if (!job_.spec_error.empty()) return invalid_spec();
    const Condition* failed = find_condition(st, ConditionType::kFailed);
    if (st.phase == JobPhase::kFailed && failed != nullptr && failed->reason == "InvalidSpec") {
      // Failed for its spec (ours or the API server's verdict on its pods): nothing is retried until the user
      // changes the spec; then it starts over instead of staying failed forever.
      if (job_.status.observed_generation == job_.generation) return finished();
      set_condition(st, ConditionType::kFailed, false, "SpecFixed", "the spec is valid again", now_);
      emit("Normal", "SpecFixed", "the spec is valid again; reconciling");
      st.phase = JobPhase::kNone;
      st.completion_time = "";
    }
    if (st.phase == JobPhase::kSucceeded || st.phase == JobPhase::kFailed) return finished();
    if (spec_.suspend) return suspended();
    if (condition_true(st, ConditionType::kSuspended)) {
      set_condition(st, ConditionType::kSuspended, false, "JobResumed", "spec.suspend is false", now_);
      emit("Normal", "Resumed", "job resumed: recreating its pods");
    }
    if (st.start_time.empty()) st.start_time = format_rfc3339(now_);
    if (spec_.active_deadline_seconds) {
      const UnixSeconds start = parse_rfc3339(st.start_time).value_or(now_);
      const int64_t left = start + *spec_.active_deadline_seconds - now_;
      if (left <= 0) {
        return finish(false, "DeadlineExceeded",
                      "the job was active longer than activeDeadlineSeconds=" +
                          std::to_string(*spec_.active_deadline_seconds));
      }
      plan_.requeue_after_s = left;
    }
    plan_.create_service = !service_exists_;
    plan_.create_secret = !obs_.secret_exists;
    if (const auto gang = gang_min_count(job_, obs_.gang_by_default)) {
      if (!obs_.gang_api) {
        return finish(false, "GangSchedulingUnavailable",
                      "spec.scheduling.gang asks for gang scheduling, but the cluster does not serve "
                      "scheduling.k8s.io/v1alpha2 PodGroups (Kubernetes 1.36+ with the feature gates GenericWorkload "
                      "and GangScheduling and that API enabled) or the operator runs with --gang-scheduling=off");
      }
      if (obs_.pod_group && obs_.pod_group->owner_uid != job_.uid) {
        return finish(false, "GangSchedulingConflict",
                      "PodGroup " + job_.name + " exists but is not this job's: delete it or rename the job");
      }
      if (!obs_.pod_group) {
        plan_.create_gang = *gang;
      } else if (obs_.pod_group->min_count != *gang) {
        plan_.delete_gang = true;  // minReplicas changed; a PodGroup's policy is immutable: the next pass recreates it
      }
    }
    return active();
  }

 private:
  void emit(const std::string& type, const std::string& reason, const std::string& message) {
    plan_.events.push_back({type, reason, message});
  }

  void delete_pod(const PodFacts& pod, bool force = false) { plan_.delete_pods.push_back({pod.name, pod.uid, force}); }

  void record_failure(const PodFacts& pod) {
    plan_.status.last_failure = LastFailure{pod.finished_at.empty() ? format_rfc3339(now_) : pod.finished_at, pod.name,
                                            pod.node_name, pod.exit_code, pod.failure_reason, pod.termination_message};
  }

  void requeue(int64_t seconds) {
    seconds = std::max<int64_t>(seconds, 1);
    if (!plan_.requeue_after_s || seconds < *plan_.requeue_after_s) plan_.requeue_after_s = seconds;
  }

  void count_restart(const std::string& reason, int n = 1) {
    plan_.status.restarts_by_reason[reason] += n;
    plan_.status.restarts += n;
    last_reason_ = reason;
  }

  // A pod failure or loss the operator counts: the launchers on the other nodes re-form the group for it and will
  // report that as a restart of their own, which must not count a second time (see fold_launcher).
  void count_pod_restart(const std::string& reason) {
    count_restart(reason);
    ++plan_.status.launcher.absorb;
  }

  // Whether the node-lost grace that began at `since` still runs; if so, the job is requeued for its end.
  bool node_grace_left(UnixSeconds since) {
    const int64_t left = since + obs_.node_lost_grace_s - now_;
    if (left > 0) requeue(left);
    return left > 0;
  }

  bool counted_lost(const std::string& uid) const {
    const auto& lost = plan_.status.lost_pods;
    return std::find(lost.begin(), lost.end(), uid) != lost.end();
  }

  // Why the pod is lost with its node ("" if it is not): the node was deleted, or is NotReady past the grace.
  std::string node_lost(const PodFacts& pod) {
    if (!obs_.nodes_watched || pod.node_name.empty()) return "";
    for (const auto& node : obs_.nodes) {
      if (node.name != pod.node_name) continue;
      if (node.ready) return "";
      const UnixSeconds since = parse_rfc3339(node.not_ready_since).value_or(now_);
      if (node_grace_left(since)) return "";
      return "node " + node.name + " has been NotReady for " + std::to_string(now_ - since) + "s";
    }
    // Not in the cache: deleted, or so new that the node watch has not shown it yet (it lags the pod watch at
    // times). A pod that started less than a grace ago gives the node watch that long.
    if (const auto started = parse_rfc3339(pod.start_time); started && node_grace_left(*started)) return "";
    return "node " + pod.node_name + " was deleted";
  }

  // Folds the launchers' in-place restarts (node 0's STATUS) into status.restartsByReason. The launcher's counters
  // start at zero in every new node-0 pod, so status.launcher remembers which pod's counts were folded in.
  void fold_launcher(const PodFacts* node0) {
    if (!obs_.launcher || node0 == nullptr || obs_.launcher->pod_uid != node0->uid) return;
    const LauncherReport& report = *obs_.launcher;
    LauncherSeen& seen = plan_.status.launcher;
    if (seen.pod_uid != report.pod_uid) seen = LauncherSeen{report.pod_uid, {}, 0};  // a new rendezvous: nothing to absorb
    for (const auto& [reason, n] : report.restarts_by_reason) {
      if (!is_launcher_reason(reason)) continue;
      const int before = seen.restarts_by_reason.count(reason) ? seen.restarts_by_reason[reason] : 0;
      int delta = n >= before ? n - before : n;  // smaller: the launcher restarted inside the same pod
      seen.restarts_by_reason[reason] = n;
      if (delta <= 0 || delta > kMaxLauncherDelta) continue;
      if (reason != kRestartWorkerCrash) {  // the group re-forming for a pod the operator already counted
        const int same = std::min(delta, seen.absorb);
        seen.absorb -= same;
        delta -= same;
        if (delta == 0) continue;
      }
      count_restart(reason, delta);
      const char* what = reason == std::string(kRestartWorkerCrash) ? "WorkerRestarted" : "GroupRestarted";
      emit(reason == std::string(kRestartScale) ? "Normal" : "Warning", what,
           "the launchers restarted the worker group in place " + std::to_string(delta) + " time(s) (reason " +
               reason + "; rendezvous round " + std::to_string(report.round) + ", " + std::to_string(report.nodes) +
               " nodes, world size " + std::to_string(report.world_size) + ")");
    }
  }

  Plan invalid_spec() {
    Status& st = plan_.status;
    const Condition* c = find_condition(st, ConditionType::kFailed);
    const bool reported = c != nullptr && c->status == "True" && c->reason == "InvalidSpec" &&
                          c->message == job_.spec_error;
    st.phase = JobPhase::kFailed;
    set_condition(st, ConditionType::kFailed, true, "InvalidSpec", job_.spec_error, now_);
    if (st.completion_time.empty()) st.completion_time = format_rfc3339(now_);
    if (!reported) emit("Warning", "InvalidSpec", job_.spec_error);
    observe_pods(st, spec_, live_);
    return std::move(plan_);
  }

  // Applies cleanPodPolicy to the pods not already being deleted, and the TTL timer.
  Plan finished() {
    std::vector<std::string> names;
    for (const auto& pod : live_) {
      bool already = false;
      for (const auto& d : plan_.delete_pods) already = already || d.uid == pod.uid;
      if (!already && cleaned_up(spec_.clean_pod_policy, pod)) {
        delete_pod(pod);
        names.push_back(pod.name);
      }
    }
    if (!names.empty()) {
      emit("Normal", "CleanedUp",
           std::string("deleting pods ") + join_names(names) + " (cleanPodPolicy " +
               to_string(spec_.clean_pod_policy) + ")");
    }
    Status& st = plan_.status;
    if (spec_.ttl_seconds_after_finished) {
      const UnixSeconds done = parse_rfc3339(st.completion_time).value_or(now_);
      const int64_t left = done + *spec_.ttl_seconds_after_finished - now_;
      if (left <= 0) {
        plan_.delete_job = true;
        emit("Normal", "TTLExpired",
             "deleting the job: ttlSecondsAfterFinished=" + std::to_string(*spec_.ttl_seconds_after_finished) +
                 " has passed");
      } else {
        plan_.requeue_after_s = left;
      }
    }
    observe_pods(st, spec_, live_);
    return std::move(plan_);
  }

  Plan finish(bool success, const std::string& reason, const std::string& message) {
    Status& st = plan_.status;
    st.phase = success ? JobPhase::kSucceeded : JobPhase::kFailed;
    set_condition(st, success ? ConditionType::kSucceeded : ConditionType::kFailed, true, reason, message, now_);
    if (find_condition(st, ConditionType::kRunning) != nullptr) set_condition(st, ConditionType::kRunning, false, reason, message, now_);
    if (find_condition(st, ConditionType::kRestarting) != nullptr) set_condition(st, ConditionType::kRestarting, false, reason, message, now_);
    st.completion_time = format_rfc3339(now_);
    emit(success ? "Normal" : "Warning", reason, message);
    plan_.create_ranks.clear();
    plan_.requeue_after_s.reset();
    return finished();
  }

  Plan suspended() {
    Status& st = plan_.status;
    std::vector<std::string> names;
    for (const auto& pod : live_) {
      delete_pod(pod);
      names.push_back(pod.name);
    }
    if (!condition_true(st, ConditionType::kSuspended) || !names.empty()) {
      emit("Normal", "Suspended",
           names.empty() ? std::string("job suspended") : "job suspended: deleting pods " + join_names(names));
    }
    set_condition(st, ConditionType::kSuspended, true, "JobSuspended", "spec.suspend is true", now_);
    if (condition_true(st, ConditionType::kRunning)) set_condition(st, ConditionType::kRunning, false, "JobSuspended", "spec.suspend is true", now_);
    st.phase = JobPhase::kSuspended;
    st.start_time = "";  // activeDeadlineSeconds counts from the resume, as for a batch Job
    observe_pods(st, spec_, live_);
    return std::move(plan_);
  }

  Plan active() {
    Status& st = plan_.status;
    const ElasticDecision elastic = elastic_target(job_, live_, obs_.nodes, now_, obs_.unschedulable_grace_s);
    const int target = elastic.target;
    st.elastic = elastic.status;
    if (!elastic.event_reason.empty()) {
      emit(elastic.event_reason == "ScaledDown" ? "Warning" : "Normal", elastic.event_reason, elastic.event_message);
      if (elastic.changed) last_reason_ = kRestartScale;
    }
    if (elastic.requeue_after_s) requeue(*elastic.requeue_after_s);

    // Pods someone else is deleting (kubectl delete, an eviction) while the job runs: their node is lost to the job.
    // Not while Scaling: pods a scale-down removed may still be terminating when the user scales up again.
    const bool was_running = job_.status.phase == JobPhase::kRunning || job_.status.phase == JobPhase::kRestarting;
    for (const auto& pod : terminating_) {
      // A pod terminating on a node that is gone (drained, then powered off) waits for a kubelet that never
      // confirms, and its rank cannot be recreated until it is gone: force it.
      if (pod.phase != "Succeeded" && pod.phase != "Failed" && !node_lost(pod).empty()) delete_pod(pod, true);
      const bool ours = pod.rank >= 0 && pod.rank < target && pod.name == pod_name(job_.name, pod.rank);
      if (!was_running || !ours || pod.phase == "Failed" || pod.phase == "Succeeded") continue;
      if (counted_lost(pod.uid)) continue;
      st.lost_pods.push_back(pod.uid);
      count_pod_restart(kRestartNodeLost);
      lost_.push_back(pod.name);
      emit("Warning", "PodLost", "pod " + pod.name + " is being deleted; it will be recreated");
    }
    // Pods whose node is gone, or that their node evicted: force-deleted (no kubelet will confirm) and recreated.
    std::set<std::string> lost_uids;
    for (const auto& pod : live_) {
      // A finished pod keeps its verdict: a node that goes after its pod succeeded (or failed for its own
      // reason) loses nothing of the job, and running the node's work again could not join a finished group.
      if (pod.phase == "Succeeded" || (pod.phase == "Failed" && !failure_is_node_loss(pod))) continue;
      std::string why = node_lost(pod);
      const bool evicted = why.empty() && pod.phase == "Failed" && failure_is_node_loss(pod);
      if (evicted) why = "its node ended it (reason " + pod.failure_reason + ")";
      if (why.empty()) continue;
      lost_uids.insert(pod.uid);
      delete_pod(pod, !evicted);
      const bool in_target = pod.rank >= 0 && pod.rank < target;
      // Counted once: a delete that failed, or a cache that has not seen it yet, brings the same pod back here.
      const bool counted = counted_lost(pod.uid);
      if (!in_target || counted) {
        if (counted) lost_.push_back(pod.name);
        continue;
      }
      st.lost_pods.push_back(pod.uid);
      count_pod_restart(kRestartNodeLost);
      lost_.push_back(pod.name);
      emit("Warning", "PodLost", "pod " + pod.name + " was lost: " + why + "; recreating it");
    }

    std::map<int, const PodFacts*> by_rank;
    std::vector<std::string> surplus;
    for (const auto& pod : live_) {
      if (lost_uids.count(pod.uid) != 0) continue;
      const bool in_range = pod.rank >= 0 && pod.rank < target && pod.name == pod_name(job_.name, pod.rank);
      if (!in_range || by_rank.count(pod.rank) != 0) {
        delete_pod(pod);
        surplus.push_back(pod.name);
      } else {
        by_rank[pod.rank] = &pod;
      }
    }
    if (!surplus.empty() && !elastic.changed) {
      emit("Normal", "ScaledDown",
           "deleting pods " + join_names(surplus) + " (spec.replicas=" + std::to_string(target) + ")");
    }

    bool all_succeeded = static_cast<int>(by_rank.size()) == target && lost_.empty();
    for (const auto& [rank, pod] : by_rank) all_succeeded = all_succeeded && pod->phase == "Succeeded";
    if (all_succeeded) {
      return finish(true, "AllNodesSucceeded",
                    "all " + std::to_string(target) + " nodes' trainer containers exited 0");
    }

    std::vector<const PodFacts*> failed;
    for (const auto& [rank, pod] : by_rank) {
      if (pod->phase == "Failed") failed.push_back(pod);
    }
    sort_by_end(failed);
    if (!failed.empty()) record_failure(*failed.front());
    std::vector<const PodFacts*> retryable;
    for (const PodFacts* pod : failed) {
      if (!failure_is_retryable(spec_.restart_policy, *pod)) {
        return finish(false, "PodFailed",
                      describe_failure(*pod) + "; restartPolicy " + to_string(spec_.restart_policy) +
                          " makes this failure permanent");
      }
      retryable.push_back(pod);
    }
    // backoffLimit bounds pod failures only; in-place restarts are bounded by the launchers' maxRestarts.
    const int pod_failures = st.restarts_by_reason.count(kRestartPodFailure) ? st.restarts_by_reason[kRestartPodFailure] : 0;
    if (!retryable.empty() && pod_failures + static_cast<int>(retryable.size()) > spec_.backoff_limit) {
      return finish(false, "BackoffLimitExceeded",
                    describe_failure(*retryable.front()) + "; backoffLimit " +
                        std::to_string(spec_.backoff_limit) + " reached after " + std::to_string(pod_failures) +
                        " pod failures");
    }
    std::string restart_message;
    for (const PodFacts* pod : retryable) {
      count_pod_restart(kRestartPodFailure);
      delete_pod(*pod);
      restart_message = describe_failure(*pod) + "; recreating it (pod failure " +
                        std::to_string(st.restarts_by_reason[kRestartPodFailure]) + ", backoffLimit " +
                        std::to_string(spec_.backoff_limit) + ")";
      emit("Warning", "PodFailed", restart_message);
    }

    if (!live_.empty() && !condition_true(st, ConditionType::kCreated)) {
      set_condition(st, ConditionType::kCreated, true, "PodsCreated", "the job's pods exist", now_);
    }
    std::vector<std::string> created;
    for (int rank = 0; rank < target; ++rank) {
      if (by_rank.count(rank) != 0) continue;
      bool terminating = false;  // wait until the old pod of this name is gone
      for (const auto& pod : terminating_) terminating = terminating || pod.name == pod_name(job_.name, rank);
      for (const auto& pod : live_) {  // lost now: deleted by this plan
        terminating = terminating || (lost_uids.count(pod.uid) != 0 && pod.name == pod_name(job_.name, rank));
      }
      if (terminating) continue;
      if (job_.status.phase == JobPhase::kRunning && rank < job_.status.replicas && !elastic.changed) {
        // Every pod ran at the last status write and this one vanished unseen (deleted at once, node gone).
        count_pod_restart(kRestartNodeLost);
        lost_.push_back(pod_name(job_.name, rank));
        emit("Warning", "PodLost", "pod " + pod_name(job_.name, rank) + " vanished; recreating it");
      }
      plan_.create_ranks.push_back(rank);
      created.push_back(pod_name(job_.name, rank));
    }
    if (!created.empty()) {
      if (!condition_true(st, ConditionType::kCreated)) {
        set_condition(st, ConditionType::kCreated, true, "PodsCreated",
                      "created Service " + job_.name + " and " + std::to_string(created.size()) + " pods", now_);
        emit("Normal", "Created", "creating Service " + job_.name + " and pods " + join_names(created));
      } else if (job_.generation != job_.status.observed_generation && target > job_.status.replicas) {
        emit("Normal", "ScaledUp",
             "creating pods " + join_names(created) + " (spec.replicas=" + std::to_string(target) + ")");
      } else {
        emit("Normal", "CreatedPods", "creating missing pods " + join_names(created));
      }
    } else if (plan_.create_service && condition_true(st, ConditionType::kCreated)) {
      emit("Normal", "CreatedService", "creating missing Service " + job_.name);
    }

    fold_launcher(by_rank.count(0) != 0 ? by_rank[0] : nullptr);
    observe_pods(st, spec_, live_);
    const bool launcher_current = obs_.launcher && by_rank.count(0) != 0 && obs_.launcher->pod_uid == by_rank[0]->uid;
    if (launcher_current && obs_.launcher->phase == "running") st.world_size = obs_.launcher->world_size;
    const int running = st.ready_replicas;
    // A node whose trainer already exited 0 is done, not missing: the others may still be finishing.
    int finished = 0;
    for (const auto& [rank, pod] : by_rank) finished += pod->phase == "Succeeded" ? 1 : 0;
    const bool complete = running + finished == target && surplus.empty() && retryable.empty() && lost_.empty();
    // The launchers are re-forming the group (after a crash, a lost node or a new size) although every pod runs.
    const bool regrouping = launcher_current && obs_.launcher->phase == "gathering" && obs_.launcher->round >= 0;
    if (!lost_.empty()) {
      st.phase = JobPhase::kRestarting;
      set_condition(st, ConditionType::kRestarting, true, "PodLost", "recreating lost pods " + join_names(lost_), now_);
    } else if (!retryable.empty() || (job_.status.phase == JobPhase::kRestarting && !complete)) {
      st.phase = JobPhase::kRestarting;
      if (!retryable.empty()) set_condition(st, ConditionType::kRestarting, true, "PodFailed", restart_message, now_);
    } else if (complete && regrouping) {
      // The latest restart says why; with none new, the group is still re-forming for the reason shown before.
      const bool scaling = !last_reason_.empty() ? last_reason_ == kRestartScale
                                                 : elastic.changed || job_.status.phase == JobPhase::kScaling;
      st.phase = scaling ? JobPhase::kScaling : JobPhase::kRestarting;
      if (!scaling && !last_reason_.empty()) {
        set_condition(st, ConditionType::kRestarting, true, last_reason_ == kRestartNodeLost ? "NodeLost" : "WorkerCrash",
                      "the launchers are re-forming the worker group after a " +
                          std::string(last_reason_ == kRestartNodeLost ? "lost node" : "worker crash"),
                      now_);
      }
    } else if (complete) {
      st.phase = JobPhase::kRunning;
      set_condition(st, ConditionType::kRunning, true, "AllNodesRunning",
                    std::to_string(running) + "/" + std::to_string(target) + " nodes running", now_);
      if (condition_true(st, ConditionType::kRestarting)) {
        set_condition(st, ConditionType::kRestarting, false, "AllNodesRunning", "all nodes are running again", now_);
      }
    } else if (!surplus.empty() || elastic.changed || job_.status.phase == JobPhase::kScaling ||
               (condition_true(job_.status, ConditionType::kCreated) && job_.generation != job_.status.observed_generation &&
                target != job_.status.replicas)) {
      st.phase = JobPhase::kScaling;  // spec.replicas changed (kubectl scale): pods are being added or removed
    } else if (job_.status.phase == JobPhase::kRunning) {
      st.phase = JobPhase::kRestarting;  // a node's pod vanished (deleted, evicted) and is being recreated
    } else {
      st.phase = JobPhase::kPending;
    }
    note_gang();
    return std::move(plan_);
  }

  // Condition GangScheduled mirrors the scheduler's verdict on PodGroup J: a gang that waits whole says why.
  void note_gang() {
    if (!obs_.pod_group || !gang_min_count(job_, obs_.gang_by_default)) return;
    const PodGroupFacts& pg = *obs_.pod_group;
    Status& st = plan_.status;
    const Condition* before = find_condition(st, ConditionType::kGangScheduled);
    const std::string gang = "the gang of " + std::to_string(pg.min_count) + " pods (minReplicas)";
    if (pg.scheduled == "False") {
      const std::string reason = pg.reason.empty() ? "Unschedulable" : pg.reason;
      const std::string message = gang + " waits: the scheduler cannot place it whole" +
                                  (pg.message.empty() ? std::string() : ": " + pg.message);
      if (before == nullptr || before->status != "False" || before->reason != reason) {
        emit("Warning", "GangWaiting", message);
      }
      set_condition(st, ConditionType::kGangScheduled, false, reason, message, now_);
    } else if (pg.scheduled == "True") {
      if (before != nullptr && before->status == "False") emit("Normal", "GangScheduled", gang + " was placed");
      set_condition(st, ConditionType::kGangScheduled, true, "Scheduled", gang + " was placed together", now_);
    }
  }

  const TrainingJob& job_;
  const Spec& spec_;
  const Observed& obs_;
  const bool service_exists_;
  const UnixSeconds now_;
  std::vector<PodFacts> live_;
  std::vector<PodFacts> terminating_;
  Plan plan_;
  std::vector<std::string> lost_;  // names of pods lost this time
  std::string last_reason_;        // the reason of the latest restart counted
};

}  // namespace

bool failure_is_retryable(RestartPolicy policy, const PodFacts& pod) {
  switch (policy) {
    case RestartPolicy::kNever: return false;
    case RestartPolicy::kOnFailure: return true;
    case RestartPolicy::kExitCode:
      // 1-127: the program itself gave up; 128+ (signals) and no exit code (eviction, node lost) may pass.
      return !(pod.exit_code && *pod.exit_code >= 1 && *pod.exit_code <= 127);
  }
  return false;
}

bool failure_is_node_loss(const PodFacts& pod) {
  static const std::set<std::string> reasons{"Evicted", "NodeLost", "Shutdown", "NodeShutdown", "Terminated",
                                             "NodeAffinity", "OutOfpods"};
  return reasons.count(pod.failure_reason) != 0 && pod.phase == "Failed";
}

Plan decide(const TrainingJob& job, const Observed& observed, UnixSeconds now) {
  return Decider(job, observed, now).run();
}

Plan decide(const TrainingJob& job, const std::vector<PodFacts>& pods, bool service_exists, UnixSeconds now) {
  Observed observed;
  observed.pods = pods;
  observed.service_exists = service_exists;
  return decide(job, observed, now);
}

}  // namespace kubedist::trainingjob
