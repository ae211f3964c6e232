// What a job's failed pods mean: recreated (counted as pod_failure, bounded by backoffLimit) or the job's end.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Whether a failed pod may be recreated under the job's restartPolicy (ExitCode: 1-127 are permanent).
bool failure_is_retryable(RestartPolicy policy, const PodFacts& pod);

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
