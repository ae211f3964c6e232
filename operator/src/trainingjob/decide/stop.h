// How a job that stops is left: ended (Succeeded or Failed), failed for its spec, finished, or suspended.
#pragma once

#include <string>

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Ends the job now: phase and condition Succeeded or Failed, Running and Restarting turned False, the
// completion time, one Event; no pod is created; then finished().
Plan finish(DecideState& s, const Ending& ending);

// A finished job: cleanPodPolicy's pods are deleted (Event CleanedUp) and ttlSecondsAfterFinished deletes the job
// or asks to come back for it.
Plan finished(DecideState& s);

// Failed for its spec (condition Failed, reason InvalidSpec, with `why`): ours, or the API server refusing its
// pods. The Event is emitted once per message; no pod is created or deleted.
Plan fail_for_spec(DecideState& s, const std::string& why);

// spec.suspend: every pod deleted, phase and condition Suspended; activeDeadlineSeconds counts from the resume.
Plan suspend(DecideState& s);

}  // namespace kubedist::trainingjob
