// Which Workload API version the operator gang-schedules through, from the discovery documents each Kubernetes
// release serves (the resources it lists at /apis/scheduling.k8s.io/<version>, as 1.34 to 1.37 answer).
#include "trainingjob/gang/workload_api.h"

#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "trainingjob/gang/gang.h"

namespace kubedist::trainingjob {
namespace {

using Resources = std::vector<std::string>;

// A server serving these resource lists (by group version path); records which paths were asked for.
struct Server {
  std::map<std::string, Resources> lists;
  std::vector<std::string> asked;
  ServedResources served() {
    return [this](const std::string& path) -> std::optional<Resources> {
      asked.push_back(path);
      auto it = lists.find(path);
      return it == lists.end() ? std::nullopt : std::optional<Resources>(it->second);
    };
  }
};

TEST(WorkloadApi, OnKubernetes137TheBetaIsUsed) {
  Server s;
  s.lists["/apis/scheduling.k8s.io/v1beta1"] = {"podgroups", "podgroups/status", "priorityclasses", "workloads"};
  const auto api = discover_gang_api(s.served());
  EXPECT_EQ(api, std::optional<GangApi>(GangApi::kV1Beta1));
  EXPECT_EQ(s.asked, std::vector<std::string>{"/apis/scheduling.k8s.io/v1beta1"});
  EXPECT_EQ(gang_api_version(*api), "scheduling.k8s.io/v1beta1");
  EXPECT_EQ(gang_api_path(*api), "/apis/scheduling.k8s.io/v1beta1");
}

TEST(WorkloadApi, OnKubernetes136TheAlphaIsUsed) {
  Server s;
  s.lists["/apis/scheduling.k8s.io/v1alpha2"] = {"podgroups", "podgroups/status", "workloads"};
  const auto api = discover_gang_api(s.served());
  EXPECT_EQ(api, std::optional<GangApi>(GangApi::kV1Alpha2));
  EXPECT_EQ(gang_api_path(*api), "/apis/scheduling.k8s.io/v1alpha2");
}

TEST(WorkloadApi, TheNewestServedVersionWinsWhenBothAre) {
  Server s;
  s.lists["/apis/scheduling.k8s.io/v1beta1"] = {"podgroups", "workloads"};
  s.lists["/apis/scheduling.k8s.io/v1alpha2"] = {"podgroups", "workloads"};
  EXPECT_EQ(discover_gang_api(s.served()), std::optional<GangApi>(GangApi::kV1Beta1));
}

TEST(WorkloadApi, AVersionWithoutBothResourcesIsPassedOver) {
  Server s;
  // 1.37 without the GenericWorkload gate: v1beta1 serves PriorityClasses, not the Workload API's objects.
  s.lists["/apis/scheduling.k8s.io/v1beta1"] = {"priorityclasses"};
  s.lists["/apis/scheduling.k8s.io/v1alpha2"] = {"podgroups", "workloads"};
  EXPECT_EQ(discover_gang_api(s.served()), std::optional<GangApi>(GangApi::kV1Alpha2));
  Server only_workloads;
  only_workloads.lists["/apis/scheduling.k8s.io/v1beta1"] = {"workloads"};
  EXPECT_EQ(discover_gang_api(only_workloads.served()), std::nullopt);
}

TEST(WorkloadApi, Kubernetes135sAlphaAndOlderReleasesHaveNone) {
  Server s;
  s.lists["/apis/scheduling.k8s.io/v1alpha1"] = {"workloads"};  // 1.35: a Workload without PodGroup objects
  s.lists["/apis/scheduling.k8s.io/v1"] = {"priorityclasses"};
  EXPECT_EQ(discover_gang_api(s.served()), std::nullopt);
  EXPECT_EQ(s.asked, (std::vector<std::string>{"/apis/scheduling.k8s.io/v1beta1", "/apis/scheduling.k8s.io/v1alpha2"}))
      << "only the versions the operator knows are asked for";
  EXPECT_EQ(discover_gang_api(Server{}.served()), std::nullopt);
}

TEST(WorkloadApi, TheIntegrationWatchesPodGroupsOfTheVersionFoundAndSaysWhich) {
  Server s;
  s.lists["/apis/scheduling.k8s.io/v1beta1"] = {"podgroups", "workloads"};
  const GangIntegration gang(GangMode::kPerJob);
  const Watches w = gang.watches("team-a", s.served());
  ASSERT_EQ(w.kinds.size(), 1u);
  EXPECT_EQ(w.kinds[0].path, "/apis/scheduling.k8s.io/v1beta1/namespaces/team-a/podgroups");
  EXPECT_EQ(gang.found(), "gang scheduling through scheduling.k8s.io/v1beta1 (Workloads and PodGroups)");
  EXPECT_TRUE(w.unavailable.empty());

  const Watches none = GangIntegration(GangMode::kPerJob).watches("", Server{}.served());
  EXPECT_TRUE(none.kinds.empty());
  EXPECT_EQ(none.unavailable,
            "the cluster serves no Workload API the operator knows (workloads and podgroups of "
            "scheduling.k8s.io/v1beta1 or scheduling.k8s.io/v1alpha2)");
  EXPECT_TRUE(GangIntegration(GangMode::kOff).watches("", s.served()).kinds.empty());
}

}  // namespace
}  // namespace kubedist::trainingjob
