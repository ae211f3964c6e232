// Hook: how an integration (gang scheduling, Kueue admission, ...) takes part in decide() for one job, so that the
// core names none of them. decide() calls the hooks at fixed points, in the order below; each does nothing unless
// the integration overrides it.
#pragma once

#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

class DecideState;
struct Ending;
struct Plan;

class Hook {
 public:
  virtual ~Hook() = default;

  // Fewer nodes than spec.replicas that the job may run on now (a partial admission): decide() then decides, and
  // renders the pods, as if spec.replicas said so. nullopt: as many as it asks for.
  virtual std::optional<int> nodes() const { return std::nullopt; }
  // A gate an unfinished, unsuspended job passes before it runs: its plan while it may not run yet (pods deleted,
  // a condition saying why), or nullopt once it may (perhaps leaving a condition that says so).
  virtual std::optional<Plan> gate(DecideState& s) const;
  // The job runs: the objects the integration needs before the job's pods (DecideState::write), or the job's end
  // when it cannot run as asked.
  virtual std::optional<Ending> prepare(DecideState& s) const;
  // The job runs and its phase is decided: the conditions that mirror the integration's view of it.
  virtual void running(DecideState&) const {}
  // The job is suspended (spec.suspend), or has finished (Succeeded or Failed, for its spec too).
  virtual void suspended(DecideState&) const {}
  virtual void finished(DecideState&) const {}
  // A pod of the job (as it runs: see nodes()) about to be created: what the integration adds to it.
  virtual void render_pod(const TrainingJob&, nlohmann::json&) const {}
};

// An integration's facts about one job, which the act layer read from the integration's caches (integration.h)
// and tests make directly; they travel in Observed::integrations.
class IntegrationFacts {
 public:
  virtual ~IntegrationFacts() = default;
  // The integration's part in this pass, for the job as submitted (before a gate lets fewer nodes run); null when
  // the job does not concern it (not queued, not gang-scheduled).
  virtual std::unique_ptr<Hook> hook(const TrainingJob& job) const = 0;
};

}  // namespace kubedist::trainingjob
