// Kueue admission of TrainingJobs, as an integration the act layer registers: a job labelled
// kueue.x-k8s.io/queue-name waits for Kueue to admit it (facts.h, decide.h, render.h).
#pragma once

#include "trainingjob/decide/integration.h"

namespace kubedist::trainingjob {

class KueueIntegration final : public Integration {
 public:
  // Kueue's Workloads (each change queues its job), ResourceFlavors and WorkloadPriorityClasses (a change may
  // concern any queued job: all are queued), where Kueue is installed.
  Watches watches(const std::string& ns, const ServedResources& served) const override;
  std::string without() const override {
    return "jobs queued for Kueue wait (condition Admitted, reason KueueUnavailable)";
  }
  std::vector<ConditionType> condition_types() const override;
  // KueueFacts (facts.h) for a queued job; null for any other.
  std::shared_ptr<const IntegrationFacts> observe(const TrainingJob& job, const Caches* caches) const override;
};

}  // namespace kubedist::trainingjob
