#include "trainingjob/kueue/kueue.h"

#include "trainingjob/kueue/decide.h"
#include "trainingjob/kueue/facts.h"

namespace kubedist::trainingjob {

Watches KueueIntegration::watches(const std::string& ns, const ServedResources& served) const {
  if (!served(kueue_api_path())) {
    return {{}, "the cluster does not serve " + kueue_api_path() + " (Kueue is not installed)", false};
  }
  const std::string workloads = kueue_api_path() + (ns.empty() ? "" : "/namespaces/" + ns) + "/workloads";
  return {{WatchSpec::of<KueueWorkloadFacts>("workloads", workloads, kJobNameLabel, parse_kueue_workload_facts,
                                             job_key_of),
           WatchSpec::of<FlavorFacts>("resourceflavors", kueue_api_path() + "/resourceflavors", "",
                                      parse_flavor_facts),
           WatchSpec::of<PriorityClassFacts>("workloadpriorityclasses",
                                             kueue_api_path() + "/workloadpriorityclasses", "",
                                             parse_priority_class_facts)},
          ""};
}

std::vector<ConditionType> KueueIntegration::condition_types() const { return {kAdmitted}; }

std::shared_ptr<const IntegrationFacts> KueueIntegration::observe(const TrainingJob& job, const Caches* caches) const {
  if (queue_name(job).empty()) return nullptr;
  auto facts = std::make_shared<KueueFacts>();
  facts->api = caches != nullptr;
  if (caches != nullptr) {
    facts->workload = caches->get_as<KueueWorkloadFacts>("workloads", job.ns + "/" + job.name);
    facts->flavors = caches->all_as<FlavorFacts>("resourceflavors");
    facts->priorities = caches->all_as<PriorityClassFacts>("workloadpriorityclasses");
  }
  return facts;
}

}  // namespace kubedist::trainingjob
