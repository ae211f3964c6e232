// Per-job network isolation's part in decide(): NetworkPolicy J before the job's pods.
#pragma once

#include <optional>

#include "trainingjob/decide/decide_state.h"
#include "trainingjob/netpol/facts.h"

namespace kubedist::trainingjob {

// Writes NetworkPolicy J when absent, before any pod of the job (a pod created first could not reach its peers
// until it exists). Returns the job's end when it cannot have one: the operator may not watch NetworkPolicies (its
// pods would then be let in by no policy: the chart's leaves same-job traffic to this one), or a NetworkPolicy J
// of another owner holds the name.
std::optional<Ending> decide_network_policy(DecideState& s, const NetworkPolicyJobFacts& facts);

}  // namespace kubedist::trainingjob
