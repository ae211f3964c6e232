#include "trainingjob/gang/workload_api.h"

#include <algorithm>
#include <array>

namespace kubedist::trainingjob {
namespace {

// Newest first: the operator uses the first one the cluster serves.
constexpr std::array kNewestFirst = {GangApi::kV1Beta1, GangApi::kV1Alpha2};

bool lists(const std::vector<std::string>& resources, const std::string& plural) {
  return std::find(resources.begin(), resources.end(), plural) != resources.end();
}

}  // namespace

std::string gang_api_version(GangApi api) {
  return api == GangApi::kV1Beta1 ? "scheduling.k8s.io/v1beta1" : "scheduling.k8s.io/v1alpha2";
}

std::string gang_api_path(GangApi api) { return "/apis/" + gang_api_version(api); }

std::optional<GangApi> discover_gang_api(
    const std::function<std::optional<std::vector<std::string>>(const std::string& path)>& resources) {
  for (GangApi api : kNewestFirst) {
    const auto served = resources(gang_api_path(api));
    if (served && lists(*served, "workloads") && lists(*served, "podgroups")) return api;
  }
  return std::nullopt;
}

std::string gang_api_not_served() {
  return "the cluster serves no Workload API the operator knows (workloads and podgroups of " +
         gang_api_version(GangApi::kV1Beta1) + " or " + gang_api_version(GangApi::kV1Alpha2) + ")";
}

std::string gang_api_unavailable_message() {
  return "spec.scheduling.gang asks for gang scheduling, but the cluster serves no Workload API the operator knows "
         "(scheduling.k8s.io/v1beta1 Workloads and PodGroups: Kubernetes 1.37+ with the feature gate GenericWorkload "
         "and that API enabled; scheduling.k8s.io/v1alpha2: Kubernetes 1.36 with the gates GenericWorkload and "
         "GangScheduling and that API enabled), or the operator may not list PodGroups or runs with "
         "--gang-scheduling=off";
}

}  // namespace kubedist::trainingjob
