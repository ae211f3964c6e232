#include "trainingjob/plan.h"

#include <map>

#include "trainingjob/render.h"
#include "trainingjob/status.h"

namespace kubedist::trainingjob {
namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string describe_failure(const PodFacts& pod) {
  std::string d = "pod " + pod.name + " failed";
  std::string details;
  if (pod.exit_code) details = "exit code " + std::to_string(*pod.exit_code);
  if (!pod.failure_reason.empty()) details += (details.empty() ? "reason " : ", reason ") + pod.failure_reason;
  return details.empty() ? d : d + " (" + details + ")";
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

class Decider {
 public:
  Decider(const TrainingJob& job, const std::vector<PodFacts>& pods, bool service_exists, UnixSeconds now)
      : job_(job), spec_(job.spec), service_exists_(service_exists), now_(now) {
    for (const auto& pod : pods) {
      if (pod.owner_uid != job.uid) continue;  // not ours: another controller's or a user's pod
      (pod.deleting ? terminating_ : live_).push_back(pod);
    }
    plan_.status = job.status;
  }

  Plan run() {
    if (job_.deleting) return std::move(plan_);  // garbage collection removes the pods
    Status& st = plan_.status;
    st.observed_generation = job_.generation;
    st.selector = selector_for(job_.name);

    if (!job_.spec_error.empty()) return invalid_spec();
    const Condition* failed = find_condition(st, "Failed");
    if (st.phase == "Failed" && failed != nullptr && failed->reason == "InvalidSpec") {
      // The user fixed the spec: start over instead of staying failed forever.
      set_condition(st, "Failed", false, "SpecFixed", "the spec is valid again", now_);
      emit("Normal", "SpecFixed", "the spec is valid again; reconciling");
      st.phase = "";
      st.completion_time = "";
    }
    if (st.phase == "Succeeded" || st.phase == "Failed") return finished();
    if (spec_.suspend) return suspended();
    if (condition_true(st, "Suspended")) {
      set_condition(st, "Suspended", false, "JobResumed", "spec.suspend is false", now_);
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
    return active();
  }

 private:
  void emit(const std::string& type, const std::string& reason, const std::string& message) {
    plan_.events.push_back({type, reason, message});
  }

  void delete_pod(const PodFacts& pod) { plan_.delete_pods.push_back({pod.name, pod.uid}); }

  Plan invalid_spec() {
    Status& st = plan_.status;
    const Condition* c = find_condition(st, "Failed");
    const bool reported = c != nullptr && c->status == "True" && c->reason == "InvalidSpec" &&
                          c->message == job_.spec_error;
    st.phase = "Failed";
    set_condition(st, "Failed", true, "InvalidSpec", job_.spec_error, now_);
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
    st.phase = success ? "Succeeded" : "Failed";
    set_condition(st, st.phase, true, reason, message, now_);
    if (find_condition(st, "Running") != nullptr) set_condition(st, "Running", false, reason, message, now_);
    if (find_condition(st, "Restarting") != nullptr) set_condition(st, "Restarting", false, reason, message, now_);
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
    if (!condition_true(st, "Suspended") || !names.empty()) {
      emit("Normal", "Suspended",
           names.empty() ? std::string("job suspended") : "job suspended: deleting pods " + join_names(names));
    }
    set_condition(st, "Suspended", true, "JobSuspended", "spec.suspend is true", now_);
    if (condition_true(st, "Running")) set_condition(st, "Running", false, "JobSuspended", "spec.suspend is true", now_);
    st.phase = "Suspended";
    st.start_time = "";  // activeDeadlineSeconds counts from the resume, as for a batch Job
    observe_pods(st, spec_, live_);
    return std::move(plan_);
  }

  Plan active() {
    Status& st = plan_.status;
    const int target = spec_.replicas;
    std::map<int, const PodFacts*> by_rank;
    std::vector<std::string> surplus;
    for (const auto& pod : live_) {
      const bool in_range = pod.rank >= 0 && pod.rank < target && pod.name == pod_name(job_.name, pod.rank);
      if (!in_range || by_rank.count(pod.rank) != 0) {
        delete_pod(pod);
        surplus.push_back(pod.name);
      } else {
        by_rank[pod.rank] = &pod;
      }
    }
    if (!surplus.empty()) {
      emit("Normal", "ScaledDown",
           "deleting pods " + join_names(surplus) + " (spec.replicas=" + std::to_string(target) + ")");
    }

    bool all_succeeded = static_cast<int>(by_rank.size()) == target;
    for (const auto& [rank, pod] : by_rank) all_succeeded = all_succeeded && pod->phase == "Succeeded";
    if (all_succeeded) {
      return finish(true, "AllNodesSucceeded",
                    "all " + std::to_string(target) + " nodes' trainer containers exited 0");
    }

    std::vector<const PodFacts*> retryable;
    for (const auto& [rank, pod] : by_rank) {
      if (pod->phase != "Failed") continue;
      if (!failure_is_retryable(spec_.restart_policy, *pod)) {
        return finish(false, "PodFailed",
                      describe_failure(*pod) + "; restartPolicy " + to_string(spec_.restart_policy) +
                          " makes this failure permanent");
      }
      retryable.push_back(pod);
    }
    // backoffLimit bounds pod failures only; in-place restarts are bounded by the launchers' maxRestarts.
    int& pod_failures = st.restarts_by_reason[kRestartPodFailure];
    if (!retryable.empty() && pod_failures + static_cast<int>(retryable.size()) > spec_.backoff_limit) {
      return finish(false, "BackoffLimitExceeded",
                    describe_failure(*retryable.front()) + "; backoffLimit " +
                        std::to_string(spec_.backoff_limit) + " reached after " + std::to_string(pod_failures) +
                        " pod failures");
    }
    std::string restart_message;
    for (const PodFacts* pod : retryable) {
      ++pod_failures;
      ++st.restarts;
      delete_pod(*pod);
      restart_message = describe_failure(*pod) + "; recreating it (pod failure " + std::to_string(pod_failures) +
                        ", backoffLimit " + std::to_string(spec_.backoff_limit) + ")";
      emit("Warning", "PodFailed", restart_message);
    }

    if (!live_.empty() && !condition_true(st, "Created")) {
      set_condition(st, "Created", true, "PodsCreated", "the job's pods exist", now_);
    }
    std::vector<std::string> created;
    for (int rank = 0; rank < target; ++rank) {
      if (by_rank.count(rank) != 0) continue;
      bool terminating = false;  // wait until the old pod of this name is gone
      for (const auto& pod : terminating_) terminating = terminating || pod.name == pod_name(job_.name, rank);
      if (terminating) continue;
      plan_.create_ranks.push_back(rank);
      created.push_back(pod_name(job_.name, rank));
    }
    if (!created.empty()) {
      if (!condition_true(st, "Created")) {
        set_condition(st, "Created", true, "PodsCreated",
                      "created Service " + job_.name + " and " + std::to_string(created.size()) + " pods", now_);
        emit("Normal", "Created", "creating Service " + job_.name + " and pods " + join_names(created));
      } else if (job_.generation != job_.status.observed_generation && target > job_.status.replicas) {
        emit("Normal", "ScaledUp",
             "creating pods " + join_names(created) + " (spec.replicas=" + std::to_string(target) + ")");
      } else {
        emit("Normal", "CreatedPods", "creating missing pods " + join_names(created));
      }
    } else if (plan_.create_service && condition_true(st, "Created")) {
      emit("Normal", "CreatedService", "creating missing Service " + job_.name);
    }

    observe_pods(st, spec_, live_);
    const int running = st.ready_replicas;
    // A node whose trainer already exited 0 is done, not missing: the others may still be finishing.
    int finished = 0;
    for (const auto& [rank, pod] : by_rank) finished += pod->phase == "Succeeded" ? 1 : 0;
    const bool complete = running + finished == target && surplus.empty() && retryable.empty();
    if (!retryable.empty() || (job_.status.phase == "Restarting" && !complete)) {
      st.phase = "Restarting";
      if (!retryable.empty()) set_condition(st, "Restarting", true, "PodFailed", restart_message, now_);
    } else if (complete) {
      st.phase = "Running";
      set_condition(st, "Running", true, "AllNodesRunning",
                    std::to_string(running) + "/" + std::to_string(target) + " nodes running", now_);
      if (condition_true(st, "Restarting")) {
        set_condition(st, "Restarting", false, "AllNodesRunning", "all nodes are running again", now_);
      }
    } else if (!surplus.empty() || job_.status.phase == "Scaling" ||
               (condition_true(job_.status, "Created") && job_.generation != job_.status.observed_generation &&
                target != job_.status.replicas)) {
      st.phase = "Scaling";  // spec.replicas changed (kubectl scale): pods are being added or removed
    } else if (job_.status.phase == "Running") {
      st.phase = "Restarting";  // a node's pod vanished (deleted, evicted) and is being recreated
    } else {
      st.phase = "Pending";
    }
    return std::move(plan_);
  }

  const TrainingJob& job_;
  const Spec& spec_;
  const bool service_exists_;
  const UnixSeconds now_;
  std::vector<PodFacts> live_;
  std::vector<PodFacts> terminating_;
  Plan plan_;
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

Plan decide(const TrainingJob& job, const std::vector<PodFacts>& pods, bool service_exists, UnixSeconds now) {
  return Decider(job, pods, service_exists, now).run();
}

}  // namespace kubedist::trainingjob
