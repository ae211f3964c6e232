// Gang scheduling through Kubernetes' Workload API (PodGroups), as an integration the act layer registers.
#pragma once

#include "trainingjob/decide/integration.h"
#include "trainingjob/gang/workload_api.h"

namespace kubedist::trainingjob {

// Which jobs are gang-scheduled through PodGroups: those asking (spec.scheduling.gang), all but those refusing, none.
enum class GangMode { kPerJob, kAll, kOff };

class GangIntegration final : public Integration {
 public:
  explicit GangIntegration(GangMode mode) : mode_(mode) {}
  // PodGroups of the newest Workload API version the cluster serves (workload_api.h), where it serves one (and not
  // with kOff): each change queues its job. Called once, at start, before any observe().
  Watches watches(const std::string& ns, const ServedResources& served) const override;
  std::string without() const override { return "gang scheduling is off (jobs asking for it fail)"; }
  // "gang scheduling through scheduling.k8s.io/v1beta1 (Workloads and PodGroups)"
  std::string found() const override;
  std::vector<ConditionType> condition_types() const override;
  // GangFacts (facts.h) for a gang-scheduled job; null for any other.
  std::shared_ptr<const IntegrationFacts> observe(const TrainingJob& job, const Caches* caches) const override;

 private:
  const GangMode mode_;
  mutable GangApi api_ = GangApi::kV1Beta1;  // the version watches() found; what observe() hands decide()
};

}  // namespace kubedist::trainingjob
