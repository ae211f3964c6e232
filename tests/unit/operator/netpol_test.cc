// Per-job network isolation (netpol/): its facts, NetworkPolicy J and its part in decide().
#include <gtest/gtest.h>

#include "test_jobs.h"
#include "test_plans.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/decide/status.h"
#include "trainingjob/netpol/decide.h"
#include "trainingjob/netpol/facts.h"
#include "trainingjob/netpol/netpol.h"
#include "trainingjob/netpol/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

constexpr UnixSeconds kNow = 1'800'000'000;

// What decide() observes with --network-policy-per-job: whether the operator watches NetworkPolicies, and the job's.
Observed with_policy(bool api, std::optional<NetworkPolicyFacts> policy = std::nullopt) {
  auto facts = std::make_shared<NetworkPolicyJobFacts>();
  facts->api = api;
  facts->policy = std::move(policy);
  Observed o;
  o.integrations.push_back(facts);
  return o;
}

std::vector<std::string> kinds_created(const Plan& p) {
  std::vector<std::string> kinds;
  for (const auto& w : p.writes) {
    if (w.verb == Write::Verb::kCreate) kinds.push_back(w.kind);
  }
  return kinds;
}

TEST(ParseNetworkPolicyFacts, ReadsNameAndControllingOwnerAndToleratesForeignShapes) {
  EXPECT_EQ(parse_network_policy_facts(json::parse(R"({"metadata": {"name": "resnet", "namespace": "team-a",
      "ownerReferences": [{"uid": "other", "controller": false}, {"uid": "uid-1", "controller": true}]},
      "spec": {"podSelector": {}}})")),
            (NetworkPolicyFacts{"team-a", "resnet", "uid-1"}));
  EXPECT_EQ(parse_network_policy_facts(json::parse(R"({"metadata": {"name": 7, "ownerReferences": "x"}})")),
            (NetworkPolicyFacts{"", "", ""}));
  EXPECT_EQ(parse_network_policy_facts(json::parse(R"({"metadata": []})")), (NetworkPolicyFacts{"", "", ""}));
}

TEST(RenderNetworkPolicy, LetsInTheJobsOwnPodsOnEveryPortAndIsOwnedByTheJob) {
  const auto job = testing::example_job();
  const json p = render_job_network_policy(job, json::array());
  EXPECT_EQ(p["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(p["kind"], "NetworkPolicy");
  EXPECT_EQ(p["metadata"]["name"], "resnet");
  EXPECT_EQ(p["metadata"]["namespace"], "team-a");
  EXPECT_EQ(p["metadata"]["labels"][kJobNameLabel], "resnet");
  EXPECT_EQ(p["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(p["metadata"]["ownerReferences"][0]["controller"], true);
  const json the_job = {{"matchLabels", {{kJobNameLabel, "resnet"}}}};
  EXPECT_EQ(p["spec"]["podSelector"], the_job);
  EXPECT_EQ(p["spec"]["policyTypes"], json::array({"Ingress"}));
  // One rule: from the job's pods, no port list (every port: the store, the rendezvous, the collectives').
  EXPECT_EQ(p["spec"]["ingress"], json::parse(R"([{"from": [{"podSelector":
      {"matchLabels": {"kubedist.io/job-name": "resnet"}}}]}])"));
  EXPECT_FALSE(p["spec"].contains("egress"));
}

TEST(RenderNetworkPolicy, ThePeersTheOperatorIsToldOfComeAfterTheJobsOwnPods) {
  const json extra = json::parse(R"([
    {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kubedist-system"}},
               "podSelector": {"matchLabels": {"app.kubernetes.io/component": "operator"}}}],
     "ports": [{"port": "rendezvous", "protocol": "TCP"}]},
    {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
     "ports": [{"port": "kd-metrics", "protocol": "TCP"}]}])");
  const json ingress = render_job_network_policy(testing::example_job(), extra)["spec"]["ingress"];
  ASSERT_EQ(ingress.size(), 3u);
  EXPECT_EQ(ingress[0]["from"][0]["podSelector"]["matchLabels"][kJobNameLabel], "resnet");
  EXPECT_EQ(ingress[1], extra[0]);
  EXPECT_EQ(ingress[2], extra[1]);
}

TEST(CheckIngressRules, TakesNetworkPolicyRulesAndSaysWhatIsWrongWithAnythingElse) {
  EXPECT_EQ(check_ingress_rules(json::array()), std::nullopt);
  EXPECT_EQ(check_ingress_rules(json::parse(R"([{"from": [{"podSelector": {}}], "ports": [{"port": 80}]}, {}])")),
            std::nullopt);
  EXPECT_EQ(check_ingress_rules(json::parse(R"({"from": []})")), "not a JSON array");
  EXPECT_EQ(check_ingress_rules(json::parse(R"(["from"])")), "rule 0 is not an object");
  EXPECT_EQ(check_ingress_rules(json::parse(R"([{"from": []}, {"to": []}])")),
            "rule 1 has \"to\" (a rule has only from and ports)");
  EXPECT_EQ(check_ingress_rules(json::parse(R"([{"from": {}}])")), "rule 0: from is not an array");
  EXPECT_EQ(check_ingress_rules(json::parse(R"([{"ports": [9402]}])")), "rule 0: an item of ports is not an object");
}

TEST(DecideNetworkPolicy, TheJobsPolicyIsCreatedBeforeItsPods) {
  const auto p = decide(testing::example_job(), with_policy(true), kNow);
  const auto kinds = kinds_created(p);
  const auto policy = std::find(kinds.begin(), kinds.end(), "NetworkPolicy");
  const auto first_pod = std::find(kinds.begin(), kinds.end(), "Pod");
  ASSERT_NE(policy, kinds.end());
  ASSERT_NE(first_pod, kinds.end());
  EXPECT_LT(policy, first_pod);
  const auto w = testing::writes(p, Write::Verb::kCreate, "NetworkPolicy");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].path, "/apis/networking.k8s.io/v1/namespaces/team-a/networkpolicies");
  EXPECT_EQ(w[0].body, render_job_network_policy(testing::example_job(), json::array()));
}

TEST(DecideNetworkPolicy, AnExistingPolicyOfTheJobIsLeftAlone) {
  const auto p = decide(testing::example_job(), with_policy(true, NetworkPolicyFacts{"team-a", "resnet", "uid-1"}),
                        kNow);
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "NetworkPolicy"));
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kDelete, "NetworkPolicy"));
  EXPECT_EQ(p.create_ranks.size(), 4u);
}

TEST(DecideNetworkPolicy, WithoutTheFlagNoPolicyIsWritten) {
  NetworkPolicyIntegration off(false, json::array());
  EXPECT_TRUE(off.watches("", [](const std::string&) { return std::nullopt; }).kinds.empty());
  EXPECT_EQ(off.observe(testing::example_job(), nullptr), nullptr);
  const auto p = decide(testing::example_job(), Observed{}, kNow);
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "NetworkPolicy"));
}

TEST(DecideNetworkPolicy, WithTheFlagTheJobsPoliciesAreWatchedByLabelInTheOperatorsNamespaces) {
  const json extra = json::parse(R"([{"from": [{"podSelector": {}}]}])");
  NetworkPolicyIntegration on(true, extra);
  const auto all = on.watches("", [](const std::string&) { return std::nullopt; });
  ASSERT_EQ(all.kinds.size(), 1u);
  EXPECT_EQ(all.kinds[0].path, "/apis/networking.k8s.io/v1/networkpolicies");
  EXPECT_EQ(all.kinds[0].label_selector, kJobNameLabel);
  const auto one = on.watches("team-a", [](const std::string&) { return std::nullopt; });
  EXPECT_EQ(one.kinds.at(0).path, "/apis/networking.k8s.io/v1/namespaces/team-a/networkpolicies");
  // Without caches (the operator may not list them) the facts say so; they carry the rules it was given.
  auto facts = on.observe(testing::example_job(), nullptr);
  ASSERT_NE(facts, nullptr);
  const auto& netpol = dynamic_cast<const NetworkPolicyJobFacts&>(*facts);
  EXPECT_FALSE(netpol.api);
  ASSERT_NE(netpol.extra_ingress, nullptr);
  EXPECT_EQ(*netpol.extra_ingress, extra);
}

TEST(DecideNetworkPolicy, WithoutTheRightToWatchPoliciesTheJobFailsSayingWhatToGrant) {
  const auto p = decide(testing::example_job(), with_policy(false), kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  const Condition* failed = find_condition(p.status, ConditionType::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "NetworkPolicyUnavailable");
  EXPECT_NE(failed->message.find("grant it list, watch and create on networkpolicies"), std::string::npos);
  EXPECT_TRUE(testing::has_event(p, "NetworkPolicyUnavailable"));
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "Pod"));
}

TEST(DecideNetworkPolicy, APolicyOfAnotherOwnerFailsTheJobInsteadOfLettingItsPodsIn) {
  const auto p = decide(testing::example_job(),
                        with_policy(true, NetworkPolicyFacts{"team-a", "resnet", "someone-else"}), kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  EXPECT_EQ(find_condition(p.status, ConditionType::kFailed)->reason, "NetworkPolicyConflict");
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "NetworkPolicy"));
}

TEST(DecideNetworkPolicy, ASuspendedOrFinishedJobGetsNoPolicy) {
  json suspended = testing::example_job_json();
  suspended["spec"]["suspend"] = true;
  EXPECT_FALSE(testing::writes_any(decide(testing::job_from(suspended), with_policy(true), kNow),
                                   Write::Verb::kCreate, "NetworkPolicy"));
  json done = testing::example_job_json();
  done["status"] = {{"phase", "Succeeded"}};
  EXPECT_FALSE(testing::writes_any(decide(testing::job_from(done), with_policy(true), kNow), Write::Verb::kCreate,
                                   "NetworkPolicy"));
}

}  // namespace
}  // namespace kubedist::trainingjob
