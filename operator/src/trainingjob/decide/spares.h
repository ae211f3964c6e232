// Spares (spec.spares): where they stood in for lost members, and what the status says of them.
#pragma once

#include <map>
#include <vector>

#include "trainingjob/decide/decide_state.h"
#include "trainingjob/decide/ranks.h"

namespace kubedist::trainingjob {

// Node rank (slot) -> the node rank of the pod that took its place: as node 0's rendezvous reports it now (this
// pass' STATUS from the pod that is node 0), else as last written (status.standIns). Only places below target
// other than node 0's, held by a pod of the job that is not being deleted.
std::map<int, int> current_stand_ins(const DecideState& s, int target);

// The node ranks of the spares node 0's rendezvous reports waiting, from this pass' STATUS of the pod that is node 0
// now; null when there is none (an older node 0's report says nothing of today's spares).
const std::vector<int>* ready_spares(const DecideState& s);

// Whether node 0's rendezvous reports node rank `rank` lost while a spare waits: that spare takes its place at the
// next round, so no pod of that rank is made meanwhile (it would only wait as a spare itself).
bool spare_takes_place_of(const DecideState& s, int rank);

// status.spares, sparesReady and standIns; Event SpareStoodIn for each place a spare took since the last write.
void note_spares(DecideState& s, const Ranks& ranks);

}  // namespace kubedist::trainingjob
