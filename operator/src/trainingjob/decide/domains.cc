#include "trainingjob/decide/domains.h"

#include "contract/pod_env.h"

namespace kubedist::trainingjob {

void annotate_domains(DecideState& s) {
  if (s.job.spec.topology_key.empty()) return;
  for (const auto& pod : s.live) {
    if (pod.node_name.empty() || pod.topology_domain) continue;
    const auto domain = s.obs.node_domains.find(pod.node_name);
    if (domain == s.obs.node_domains.end()) continue;
    nlohmann::json patch = {
        {"metadata",
         {{"uid", pod.uid}, {"annotations", {{contract::kTopologyDomainAnnotation, domain->second}}}}}};
    s.write({Write::Verb::kMergePatch, "Pod", pod.name,
             "/api/v1/namespaces/" + s.job.ns + "/pods/" + pod.name, std::move(patch)});
  }
}

}  // namespace kubedist::trainingjob
