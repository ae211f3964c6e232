// Gang scheduling through Kubernetes' Workload API (PodGroups), as an integration the act layer registers.
#pragma once

#include "trainingjob/decide/integration.h"

namespace kubedist::trainingjob {

// Which jobs are gang-scheduled through PodGroups: those asking (spec.scheduling.gang), all but those refusing, none.
enum class GangMode { kPerJob, kAll, kOff };

class GangIntegration final : public Integration {
 public:
  explicit GangIntegration(GangMode mode) : mode_(mode) {}
  // PodGroups, where the cluster serves them (and not with kOff): each change queues its job.
  Watches watches(const std::string& ns, const ServedResources& served) const override;
  std::string without() const override { return "gang scheduling is off (jobs asking for it fail)"; }
  std::vector<ConditionType> condition_types() const override;
  // GangFacts (facts.h) for a gang-scheduled job; null for any other.
  std::shared_ptr<const IntegrationFacts> observe(const TrainingJob& job, const Caches* caches) const override;

 private:
  const GangMode mode_;
};

}  // namespace kubedist::trainingjob
