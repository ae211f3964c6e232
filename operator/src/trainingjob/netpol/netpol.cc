#include "trainingjob/netpol/netpol.h"

#include "trainingjob/netpol/facts.h"

namespace kubedist::trainingjob {

Watches NetworkPolicyIntegration::watches(const std::string& ns, const ServedResources&) const {
  if (!enabled_) return {};
  // networking.k8s.io/v1 is served by every supported Kubernetes: no discovery needed.
  const std::string path =
      std::string("/apis/networking.k8s.io/v1") + (ns.empty() ? "" : "/namespaces/" + ns) + "/networkpolicies";
  return {{WatchSpec::of<NetworkPolicyFacts>("networkpolicies", path, kJobNameLabel, parse_network_policy_facts,
                                             job_key_of)},
          ""};
}

std::shared_ptr<const IntegrationFacts> NetworkPolicyIntegration::observe(const TrainingJob& job,
                                                                          const Caches* caches) const {
  if (!enabled_) return nullptr;
  auto facts = std::make_shared<NetworkPolicyJobFacts>();
  facts->api = caches != nullptr;
  facts->extra_ingress = extra_ingress_;
  if (caches != nullptr) {
    facts->policy = caches->get_as<NetworkPolicyFacts>("networkpolicies", job.ns + "/" + job.name);
  }
  return facts;
}

}  // namespace kubedist::trainingjob
