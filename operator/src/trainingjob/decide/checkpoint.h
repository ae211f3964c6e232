// spec.checkpoint in the status: the newest complete checkpoint node 0 reported (status.checkpoint), and the
// checkpoint volume the job's pods wait for (condition CheckpointVolumeMissing).
#pragma once

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// status.checkpoint from node 0's report of the newest complete checkpoint (node0: the pod holding rank 0, or
// null): taken when its step is new, from the current node 0's report only; a new node 0 knows none until the
// next save, and the one written stays.
void note_checkpoint(DecideState& s, const PodFacts* node0);

// Condition CheckpointVolumeMissing: True (reason ClaimNotFound, Event CheckpointVolumeMissing once) while a pod of
// the job is unschedulable because spec.checkpoint.claimName names no PersistentVolumeClaim of the namespace (the
// scheduler's message says so); False (ClaimFound) once none is. The job is not failed: the claim may come.
void note_checkpoint_volume(DecideState& s);

// Just in time before a spare takes a member's place: in a rigid job with spec.checkpoint, a member whose node is
// cordoned or announced to go (not merely NotReady: its launcher may still get SIGTERM, but nothing saves on a
// node that does not answer) is not released through node 0 (its workers would stop in a new round, unsaved) but
// its pod deleted: SIGTERM makes its workers save the step all ranks just did, then its launcher leaves and node 0
// gives the place to a ready spare, which resumes from that step. Takes those members out of s.plan.releases;
// one Event NodeGoingAway each.
void checkpoint_before_release(DecideState& s);

}  // namespace kubedist::trainingjob
