// The versions of Kubernetes' Workload API (scheduling.k8s.io Workloads and PodGroups) the operator gang-schedules
// through, and which of them a cluster serves, from its discovery documents.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kubedist::trainingjob {

// The Workload API versions the operator knows: Kubernetes 1.36's alpha and 1.37's beta. They differ in how a
// PodGroup names its Workload's template (render.h) and in the condition the scheduler reports placement in
// (facts.cc); 1.35's v1alpha1 (a Workload without PodGroup objects) is not one of them.
enum class GangApi { kV1Alpha2, kV1Beta1 };

// "scheduling.k8s.io/v1beta1"
std::string gang_api_version(GangApi api);
// "/apis/scheduling.k8s.io/v1beta1": the path its objects live under.
std::string gang_api_path(GangApi api);

// The newest version the operator knows whose discovery document lists both workloads and podgroups; nullopt when
// none does. resources(path): the resources the API server serves at a group version path, nullopt when none.
std::optional<GangApi> discover_gang_api(
    const std::function<std::optional<std::vector<std::string>>(const std::string& path)>& resources);

// Why a cluster offers no Workload API to use (what the operator logs at start).
std::string gang_api_not_served();
// What a job asking for a gang is told when the operator has no Workload API to use.
std::string gang_api_unavailable_message();

}  // namespace kubedist::trainingjob
