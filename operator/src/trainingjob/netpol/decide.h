// Per-job network isolation's part in decide(): NetworkPolicy J before the job's pods.
#pragma once

#include <optional>

#include "trainingjob/decide/decide_state.h"
#include "trainingjob/netpol/facts.h"

namespace kubedist::trainingjob {

// Writes NetworkPolicy J when absent, before any pod of the job (a pod no policy selects is open to every peer, so a
// pod created first would be until it exists). Returns the job's end when it cannot have one, rather than run its
// pods without the isolation asked for: the operator may not watch NetworkPolicies, or a NetworkPolicy J of another
// owner holds the name.
std::optional<Ending> decide_network_policy(DecideState& s, const NetworkPolicyJobFacts& facts);

}  // namespace kubedist::trainingjob
