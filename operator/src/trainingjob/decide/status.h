// Pure status bookkeeping: conditions with stable transition times and the counts observed from pods.
#pragma once

#include <string>
#include <vector>

#include "common/time.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// Processes one node runs, as far as the operator can know: the integer nprocPerNode, else the trainer's
// nvidia.com/gpu limit for auto/gpu (auto falls back to 1), else the whole-CPU limit for cpu, else 1.
int procs_per_node(const Spec& spec);

const Condition* find_condition(const Status& status, ConditionType type);
bool condition_true(const Status& status, ConditionType type);

// Sets a condition; lastTransitionTime changes only when the True/False status changes.
void set_condition(Status& status, ConditionType type, bool value, const std::string& reason,
                   const std::string& message, UnixSeconds now);

// replicas (pods that exist), readyReplicas (pods running) and worldSize from the job's live pods.
void observe_pods(Status& status, const Spec& spec, const std::vector<PodFacts>& live_pods);

std::string selector_for(const std::string& job_name);

}  // namespace kubedist::trainingjob
