#include "trainingjob/gang/gang.h"

#include <algorithm>

#include "trainingjob/gang/decide.h"
#include "trainingjob/gang/facts.h"
#include "trainingjob/gang/render.h"

namespace kubedist::trainingjob {

Watches GangIntegration::watches(const std::string& ns, const ServedResources& served) const {
  if (mode_ == GangMode::kOff) return {};
  // An informer on an API that is not there would never sync: without it a job asking for a gang fails with a
  // condition saying what is missing.
  const auto api = discover_gang_api(served);
  if (!api) return {{}, gang_api_not_served(), true};
  api_ = *api;
  const std::string path = gang_api_path(*api) + (ns.empty() ? "" : "/namespaces/" + ns) + "/podgroups";
  return {{WatchSpec::of<PodGroupFacts>("podgroups", path, kJobNameLabel, parse_pod_group_facts, job_key_of)}, ""};
}

std::string GangIntegration::found() const {
  return "gang scheduling through " + gang_api_version(api_) + " (Workloads and PodGroups)";
}

std::vector<ConditionType> GangIntegration::condition_types() const { return {kGangScheduled}; }

std::shared_ptr<const IntegrationFacts> GangIntegration::observe(const TrainingJob& job, const Caches* caches) const {
  auto facts = std::make_shared<GangFacts>();
  facts->api = caches != nullptr;
  facts->version = api_;
  facts->by_default = facts->api && mode_ == GangMode::kAll;
  if (!gang_min_count(job, facts->by_default)) return nullptr;
  if (caches != nullptr) facts->pod_group = caches->get_as<PodGroupFacts>("podgroups", job.ns + "/" + job.name);
  return facts;
}

}  // namespace kubedist::trainingjob
