// Kueue admission as decide() acts on it (the verdict itself is kueue.h's decide_admission): a queued job that may
// not run waits without pods; an admitted one runs on its flavors' nodes; a job that stops gives its quota back.
#pragma once

#include "trainingjob/decide/decide_state.h"
#include "trainingjob/kueue/kueue.h"

namespace kubedist::trainingjob {

// Not admitted (or evicted): every pod deleted, phase Suspended, conditions Admitted False and Suspended True with
// Kueue's reason; the Workload created, replaced, or (evicted, once the pods are gone) its quota released.
Plan wait_for_admission(DecideState& s, const Admission& admission);

// Admitted: condition Admitted True (an Event the first time), the placement for new pods, Suspended False.
void note_admission(DecideState& s, const Admission& admission);

// A finished job's Workload is marked Finished (Succeeded or Failed), which returns its quota; once.
void finish_kueue_workload(DecideState& s);

// spec.suspend on a queued job: its Workload goes (it holds no quota while suspended) and Admitted turns False.
void drop_kueue_workload(DecideState& s);

}  // namespace kubedist::trainingjob
