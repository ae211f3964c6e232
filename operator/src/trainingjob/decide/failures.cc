#include "trainingjob/decide/failures.h"

#include <algorithm>
#include <set>

#include "common/backoff.h"
#include "trainingjob/decide/bad_nodes.h"

namespace kubedist::trainingjob {
namespace {

// "pod J-node-1 failed (exit code 3, reason Error): <the launcher's summary of the failed worker>".
std::string describe_failure(const PodFacts& pod) {
  if (failure_is_admission_refusal(pod)) {
    return "pod " + pod.name + " was refused by the kubelet of node " + pod.node_name + " (reason " +
           pod.failure_reason + ")";
  }
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

void record_failure(DecideState& s, const PodFacts& pod) {
  s.plan.status.last_failure = LastFailure{pod.finished_at.empty() ? format_rfc3339(s.now) : pod.finished_at,
                                           pod.name,           pod.node_name, pod.exit_code,
                                           pod.failure_reason, pod.termination_message};
}

}  // namespace

bool failure_is_admission_refusal(const PodFacts& pod) {
  // The kubelet's admission reasons (pkg/kubelet/lifecycle: a predicate's name, OutOf<resource>, or its own).
  static const std::set<std::string> reasons{"NodeAffinity", "NodeName", "NodePorts", "TaintToleration",
                                             "UnexpectedAdmissionError", "UnexpectedPredicateFailureType",
                                             "UnknownReason", "PodOSSelectorNodeLabelDoesNotMatch",
                                             "PodOSNotSupported", "TopologyAffinityError", "SysctlForbidden"};
  if (pod.phase != "Failed" || pod.exit_code) return false;  // a container that ran was admitted
  return reasons.count(pod.failure_reason) != 0 || pod.failure_reason.rfind("OutOf", 0) == 0;
}

int64_t admission_backoff_s(int pod_failures) {
  const BackoffPolicy policy{std::chrono::seconds(10), std::chrono::minutes(5)};
  return std::chrono::duration_cast<std::chrono::seconds>(policy.delay(std::max(pod_failures, 1) - 1)).count();
}

bool failure_is_retryable(RestartPolicy policy, const PodFacts& pod) {
  if (failure_is_admission_refusal(pod)) return true;
  switch (policy) {
    case RestartPolicy::kNever: return false;
    case RestartPolicy::kOnFailure: return true;
    case RestartPolicy::kExitCode:
      // 1-127: the program itself gave up; 128+ (signals) and no exit code (eviction, node lost) may pass.
      return !(pod.exit_code && *pod.exit_code >= 1 && *pod.exit_code <= 127);
  }
  return false;
}

FailureVerdict decide_failures(DecideState& s, const std::map<int, const PodFacts*>& by_rank) {
  Status& st = s.plan.status;
  const Spec& spec = s.spec;
  FailureVerdict v;
  std::vector<const PodFacts*> failed;
  for (const auto& [rank, pod] : by_rank) {
    if (pod->phase == "Failed") failed.push_back(pod);
  }
  sort_by_end(failed);
  if (!failed.empty()) record_failure(s, *failed.front());
  for (const PodFacts* pod : failed) {
    if (!failure_is_retryable(spec.restart_policy, *pod)) {
      v.ending = Ending{false, "PodFailed",
                        describe_failure(*pod) + "; restartPolicy " + to_string(spec.restart_policy) +
                            " makes this failure permanent"};
      return v;
    }
    v.retryable.push_back(pod);
  }
  // Each failed pod is counted once, by uid (status.failedPods): the status that counts it is written before it is
  // deleted (the act layer writes the status first), so a pass that stops in between (a crash, a lost lease, a
  // failed DELETE) finds the pod counted and only deletes it again.
  std::vector<std::string>& counted = st.failed_pods;
  const auto is_counted = [&](const PodFacts* pod) {
    return std::find(counted.begin(), counted.end(), pod->uid) != counted.end();
  };
  const int uncounted = static_cast<int>(std::count_if(v.retryable.begin(), v.retryable.end(),
                                                       [&](const PodFacts* pod) { return !is_counted(pod); }));
  // backoffLimit bounds pod failures only; in-place restarts are bounded by the launchers' maxRestarts.
  const int pod_failures = st.restarts_by_reason.count(kRestartPodFailure) ? st.restarts_by_reason[kRestartPodFailure] : 0;
  if (uncounted > 0 && pod_failures + uncounted > spec.backoff_limit) {
    v.ending = Ending{false, "BackoffLimitExceeded",
                      describe_failure(*v.retryable.front()) + "; backoffLimit " + std::to_string(spec.backoff_limit) +
                          " reached after " + std::to_string(pod_failures) + " pod failures"};
    return v;
  }
  for (const PodFacts* pod : v.retryable) {
    const bool again = is_counted(pod);
    if (!again) {
      s.count_pod_restart(kRestartPodFailure);
      counted.push_back(pod->uid);
    }
    const int pod_failure = st.restarts_by_reason[kRestartPodFailure];
    const bool refused = failure_is_admission_refusal(*pod);
    // A refused pod keeps its rank's name until its backoff is over: recreated at once, the kubelet that refused it
    // (a pinned node, a taint) would refuse the next as fast.
    int64_t wait = 0;
    if (refused) {
      const std::string& at = pod->finished_at.empty() ? pod->start_time : pod->finished_at;
      wait = parse_rfc3339(at).value_or(s.now) + admission_backoff_s(pod_failure) - s.now;
    }
    v.restart_message = describe_failure(*pod) + "; recreating it" +
                        (wait > 0 ? " in " + std::to_string(wait) + "s" : std::string()) + " (pod failure " +
                        std::to_string(pod_failure) + ", backoffLimit " + std::to_string(spec.backoff_limit) + ")";
    if (wait > 0) {
      s.requeue(wait);
    } else {
      s.delete_pod(*pod);
    }
    if (again) continue;
    s.emit("Warning", "PodFailed", v.restart_message);
    // A refusal is the pod's own spec meeting the node's (its affinity, its requests): nothing the node did.
    if (!refused && failure_is_the_nodes(*pod)) {
      const NodeEvidence evidence = failure_evidence(s, *pod);
      note_node_failure(s, pod->node_name,
                        describe_failure(*pod) + (evidence == NodeEvidence::kNodesOwn
                                                      ? " (a bus error, which other namespaces' pods met there too)"
                                                      : ""),
                        evidence);
    }
  }
  return v;
}

}  // namespace kubedist::trainingjob
