// A gang-scheduled job's Workload and PodGroup (when to create or replace them) and its GangScheduled condition.
#pragma once

#include <optional>

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// For a gang-scheduled job: asks for Workload J and PodGroup J when absent, or for their replacement when the
// gang size changed. Returns the job's end when it cannot be gang-scheduled (no PodGroup API, or a PodGroup J
// of another owner).
std::optional<Ending> decide_gang_objects(DecideState& s);

// GangScheduled mirrors the scheduler's verdict on PodGroup J: a gang that waits whole says why (Event
// GangWaiting once per reason), and GangScheduled when it was placed after waiting.
void decide_gang_condition(DecideState& s);

}  // namespace kubedist::trainingjob
