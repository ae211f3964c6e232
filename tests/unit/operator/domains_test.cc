// spec.placement.topologyKey: each bound pod learns its node's domain (an annotation the kubelet projects into the
// file its launcher reads), and the rendered pod carries that file.
#include <gtest/gtest.h>

#include "contract/pod_env.h"
#include "test_jobs.h"
#include "test_plans.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

constexpr UnixSeconds kNow = 1'800'000'000;

TrainingJob job_with_key(const std::string& key) {
  json j = testing::example_job_json();
  if (!key.empty()) j["spec"]["placement"]["topologyKey"] = key;
  return testing::job_from(j);
}

PodFacts bound(int rank, const std::string& node, std::optional<std::string> domain = std::nullopt) {
  PodFacts p = testing::example_pod(rank, "Running");
  p.node_name = node;
  p.topology_domain = std::move(domain);
  return p;
}

Observed observed(std::vector<PodFacts> pods, std::map<std::string, std::string> node_domains) {
  Observed o;
  o.pods = std::move(pods);
  o.service_exists = true;
  o.nodes_watched = true;
  for (const auto& p : o.pods)
    if (!p.node_name.empty()) o.nodes.push_back(NodeFacts{p.node_name, true, "", false, ""});
  o.node_domains = std::move(node_domains);
  return o;
}

TEST(Domains, EachBoundPodWithoutItsDomainGetsItsNodesValueNamingItsUid) {
  PodFacts pending = testing::example_pod(3, "Pending");
  const auto o = observed({bound(0, "n0", "rack-b"), bound(1, "n1"), bound(2, "n2"), pending},
                          {{"n1", "rack-a"}, {"n2", std::string(contract::kNoTopologyDomain)}});
  const Plan p = decide(job_with_key("kubedist.io/rack"), o, kNow);
  const auto patches = testing::writes(p, Write::Verb::kMergePatch, "Pod");
  ASSERT_EQ(patches.size(), 2u) << "node 0 has its domain; node 3 is not bound";
  EXPECT_EQ(patches[0].name, "resnet-node-1");
  EXPECT_EQ(patches[0].path, "/api/v1/namespaces/team-a/pods/resnet-node-1");
  EXPECT_EQ(patches[0].body, (json{{"metadata", {{"uid", "pod-1"},
                                                 {"annotations", {{"kubedist.io/topology-domain", "rack-a"}}}}}}));
  EXPECT_EQ(patches[1].body["metadata"]["annotations"]["kubedist.io/topology-domain"], "-");
}

TEST(Domains, NothingIsWrittenWithoutTheKeyOrBeforeTheNodesValueIsKnown) {
  const auto o = observed({bound(0, "n0"), bound(1, "n1")}, {{"n0", "rack-a"}, {"n1", "rack-a"}});
  EXPECT_FALSE(testing::writes_any(decide(job_with_key(""), o, kNow), Write::Verb::kMergePatch, "Pod"));
  const auto unknown = observed({bound(0, "n0"), bound(1, "n1")}, {});
  EXPECT_FALSE(testing::writes_any(decide(job_with_key("rack"), unknown, kNow), Write::Verb::kMergePatch, "Pod"));
}

TEST(RenderPod, WithATopologyKeyTheTrainerReadsItsNodesDomainFromTheDownwardApi) {
  json j = testing::example_job_json();
  j["spec"]["placement"]["topologyKey"] = "kubedist.io/rack";
  j["spec"]["template"]["metadata"]["annotations"] = {{"kubedist.io/topology-domain", "forged"}, {"team", "a"}};
  PodOptions options;
  options.topology_domains = true;  // the cluster-wide operator: it reads nodes
  const json pod = render_pod(testing::job_from(j), 1, options);
  EXPECT_EQ(pod["metadata"]["annotations"], (json{{"team", "a"}})) << "the operator writes the domain, once bound";
  json volume;
  for (const auto& v : pod["spec"]["volumes"])
    if (v["name"] == "kubedist-podinfo") volume = v;
  EXPECT_EQ(volume["downwardAPI"]["items"],
            json::parse(R"([{"path": "topology-domain", "fieldRef": {"apiVersion": "v1",
                           "fieldPath": "metadata.annotations['kubedist.io/topology-domain']"}}])"));
  const json& trainer = pod["spec"]["containers"][0];
  bool mounted = false;
  for (const auto& m : trainer["volumeMounts"])
    mounted = mounted || (m["name"] == "kubedist-podinfo" && m["mountPath"] == "/kubedist/podinfo" && m["readOnly"]);
  EXPECT_TRUE(mounted);
  std::string file;
  for (const auto& e : trainer["env"])
    if (e["name"] == contract::kTopologyDomainFile) file = e["value"];
  EXPECT_EQ(file, "/kubedist/podinfo/topology-domain");

  // Without the key, or from an operator that reads no node (namespaced: no domain would ever come), no file.
  for (const json& plain : {render_pod(testing::example_job(), 1, options), render_pod(testing::job_from(j), 1, {})}) {
    for (const auto& v : plain["spec"]["volumes"]) EXPECT_NE(v["name"], "kubedist-podinfo");
    for (const auto& e : plain["spec"]["containers"][0]["env"]) EXPECT_NE(e["name"], contract::kTopologyDomainFile);
  }
}

}  // namespace
}  // namespace kubedist::trainingjob
