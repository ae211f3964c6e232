// Kueue admission's part in decide(): whether a queued job may run and on how many nodes and which flavors' nodes,
// and what that means for it (a queued job that may not run waits without pods; an admitted one runs on its
// flavors' nodes; a job that stops gives its quota back).
#pragma once

#include <optional>
#include <string>

#include "trainingjob/api/job_state.h"
#include "trainingjob/decide/decide_state.h"
#include "trainingjob/kueue/facts.h"
#include "trainingjob/kueue/render.h"

namespace kubedist::trainingjob {

// Kueue admitted the job (only on jobs labelled kueue.x-k8s.io/queue-name).
inline constexpr ConditionType kAdmitted{"Admitted"};

// What Kueue says about a queued job, as decide() acts on it.
struct Admission {
  enum class State {
    kUnavailable,  // the operator does not see Kueue's API: the job waits, saying so
    kConflict,     // a Workload of the job's name belongs to something else
    kCreate,       // no Workload yet: create it, wait
    kRecreate,     // the Workload asks for another size (spec changed): delete it, wait, create it anew
    kWaiting,      // queued: no quota reserved yet
    kEvicted,      // Kueue evicted or preempted it: remove the pods, then give the quota back
    kAdmitted,     // run admitted_count nodes with the placement
  };
  State state = State::kWaiting;
  std::string reason;   // for the Admitted condition
  std::string message;
  int admitted_count = 0;
  Placement placement;
  std::optional<PriorityClassFacts> priority;  // kCreate: the job's WorkloadPriorityClass, when it names one
};

// The decision for a queued, unfinished job. A flavor or priority class the caches do not show (yet) keeps the job
// waiting with a reason, rather than placing pods wrongly or queueing at the wrong priority.
Admission decide_admission(const TrainingJob& job, const KueueFacts& kueue);

// Not admitted (or evicted): every pod deleted, phase Suspended, conditions Admitted False and Suspended True with
// Kueue's reason; the Workload created, replaced, or (evicted, once the pods are gone) its quota released.
Plan wait_for_admission(DecideState& s, const Admission& admission, const KueueFacts& kueue);

// Admitted: condition Admitted True (an Event the first time), Suspended False.
void note_admission(DecideState& s, const Admission& admission);

// A finished job's Workload is marked Finished (Succeeded or Failed), which returns its quota; once.
void finish_kueue_workload(DecideState& s, const KueueFacts& kueue);

// spec.suspend on a queued job: its Workload goes (it holds no quota while suspended) and Admitted turns False.
void drop_kueue_workload(DecideState& s, const KueueFacts& kueue);

}  // namespace kubedist::trainingjob
