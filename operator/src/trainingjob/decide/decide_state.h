// The working state decide()'s steps share: the job, what was observed of it, and the plan being built.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "trainingjob/decide/hook.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// How a job ends (stop.h finishes it): Succeeded when success, else Failed; reason and message go to the
// condition and the Event.
struct Ending {
  bool success = false;
  std::string reason;
  std::string message;
};

class DecideState {
 public:
  // Sorts the job's own pods into live and terminating, starts the plan's status from the job's, and forgets
  // lost pods that no longer exist.
  DecideState(const TrainingJob& job, const Observed& observed, UnixSeconds now);

  const TrainingJob& job;
  const Spec& spec;
  const Observed& obs;
  const UnixSeconds now;
  std::vector<PodFacts> live;         // the job's pods not being deleted
  std::vector<PodFacts> terminating;  // the job's pods being deleted
  Plan plan;
  std::vector<std::string> lost;  // names of pods lost this time
  std::string last_reason;        // the reason of the latest restart counted (kRestart*)
  std::vector<const Hook*> hooks;  // the integrations' parts in this pass (hook.h), in registration order
  // The objects the plan's writes create or delete besides the pods and the integrations' (decide.cc: plan_writes).
  bool create_service = false;
  bool create_namespace_secret = false;  // Secret kubedist-rendezvous, before any pod mounts it
  // With plan.job_rdzv_secret, where the operator wrote J-rdzv: the fingerprint of the secret it wrote, which the new
  // pods' launchers check the mounted one against (empty: an earlier operator's J-rdzv, whose secret it never held).
  std::string job_rdzv_secret_fingerprint;
  bool delete_job = false;               // ttlSecondsAfterFinished has passed
  // spec.spares: node rank (slot) -> the node rank of the pod that took its place (spares.h: current_stand_ins).
  std::map<int, int> stand_ins;

  void emit(const std::string& type, const std::string& reason, const std::string& message);
  void delete_pod(const PodFacts& pod, bool force = false);
  void write(Write w) { plan.writes.push_back(std::move(w)); }
  // Asks to come back in `seconds` (at least 1), unless an earlier timer is already asked for.
  void requeue(int64_t seconds);
  void count_restart(const std::string& reason, int n = 1);
  // A pod failure or loss the operator counts: the launchers on the other nodes re-form the group for it and will
  // report that as a restart of their own, which must not count a second time (see launcher.h).
  void count_pod_restart(const std::string& reason);
  // The pod of node rank `rank` lost with its node: counted as node_lost (count_pod_restart), unless node 0's
  // launcher already reported the group re-forming for it, which was counted then: that rank in
  // status.launcher.prepaidNodes, or, from launchers that name no ranks, status.launcher.prepaid within
  // kPrepaidWindowS.
  void count_pod_loss(int rank);
};

// How long a launcher-reported node_lost restart may wait for the operator to see the pod loss behind it, where the
// launcher does not name the node it lost.
inline constexpr int64_t kPrepaidWindowS = 30;

// "a, b, c".
std::string join_names(const std::vector<std::string>& names);

}  // namespace kubedist::trainingjob
