// Gang scheduling's part in decide(): when a gang-scheduled job's Workload and PodGroup are created or replaced,
// and its GangScheduled condition.
#pragma once

#include <optional>

#include "trainingjob/api/job_state.h"
#include "trainingjob/decide/decide_state.h"
#include "trainingjob/gang/facts.h"

namespace kubedist::trainingjob {

// Mirrors the scheduler's verdict on the job's PodGroup.
inline constexpr ConditionType kGangScheduled{"GangScheduled"};

// For a gang-scheduled job: writes Workload J and PodGroup J when absent, or deletes both when the gang size
// changed (the next pass creates them anew). Returns the job's end when it cannot be gang-scheduled (no PodGroup
// API, or a PodGroup J of another owner).
std::optional<Ending> decide_gang_objects(DecideState& s, const GangFacts& gang);

// GangScheduled mirrors the scheduler's verdict on PodGroup J: a gang that waits whole says why (Event
// GangWaiting once per reason), and GangScheduled when it was placed after waiting.
void decide_gang_condition(DecideState& s, const GangFacts& gang);

}  // namespace kubedist::trainingjob
