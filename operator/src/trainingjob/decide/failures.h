// What a job's failed pods mean: recreated (counted as pod_failure, bounded by backoffLimit) or the job's end.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Whether a failed pod may be recreated under the job's restartPolicy (ExitCode: 1-127 are permanent). A pod its
// kubelet refused at admission never ran the program: retryable under every policy, bounded by backoffLimit.
bool failure_is_retryable(RestartPolicy policy, const PodFacts& pod);

// Whether the pod's kubelet refused to run it (its node affinity or name, taints, OutOf<resource> such as the
// device plugin's OutOfnvidia.com/gpu race, an admission error): not a lost node and not the node's fault, but a
// pod failure (pod_failure, backoffLimit) recreated after a backoff, so a job that can never be admitted fails.
bool failure_is_admission_refusal(const PodFacts& pod);

// How long after a refusal its pod is recreated, the job's n-th pod failure: 10 s, doubling, at most 5 minutes
// (the Job controller's schedule).
int64_t admission_backoff_s(int pod_failures);

struct FailureVerdict {
  std::optional<Ending> ending;            // the failures end the job (permanent, or backoffLimit spent)
  std::vector<const PodFacts*> retryable;  // otherwise: the failed pods deleted now, to be recreated
  std::string restart_message;             // why the last of them is recreated (the Restarting condition's message)
};

// Over the pods holding a rank: the first failed pod to end becomes status.lastFailure; a permanent failure or
// one past backoffLimit ends the job; retryable ones are deleted and counted once each (Event PodFailed; their
// uids in status.failedPods until they are gone, so that a pod whose delete did not land is not counted again).
FailureVerdict decide_failures(DecideState& s, const std::map<int, const PodFacts*>& by_rank);

}  // namespace kubedist::trainingjob
