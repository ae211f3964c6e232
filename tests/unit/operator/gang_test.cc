// Gang scheduling (gang/): its facts, its Workload and PodGroup, and its part in decide().
#include <gtest/gtest.h>

#include "test_jobs.h"
#include "test_plans.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/decide/status.h"
#include "trainingjob/gang/decide.h"
#include "trainingjob/gang/facts.h"
#include "trainingjob/gang/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

constexpr UnixSeconds kNow = 1'800'000'000;

std::vector<PodFacts> pods(int n, const std::string& phase) {
  std::vector<PodFacts> out;
  for (int i = 0; i < n; ++i) out.push_back(testing::example_pod(i, phase));
  return out;
}

TrainingJob job_with(const json& spec_patch) {
  json j = testing::example_job_json();
  j["spec"].merge_patch(spec_patch);
  return testing::job_from(j);
}

// What decide() observes with gang scheduling in use: whether the cluster serves PodGroups (and in which Workload API
// version), the operator's default (--gang-scheduling=all) and the job's PodGroup.
Observed with_gang(bool api, bool by_default = false, std::optional<PodGroupFacts> group = std::nullopt,
                   GangApi version = GangApi::kV1Beta1) {
  auto facts = std::make_shared<GangFacts>();
  facts->api = api;
  facts->version = version;
  facts->by_default = by_default;
  facts->pod_group = std::move(group);
  Observed o;
  o.integrations.push_back(facts);
  return o;
}

TEST(ParsePodGroupFacts, ReadsGangSizeOwnerAndTheSchedulersVerdict) {
  auto g = parse_pod_group_facts(json::parse(R"({
    "metadata": {"name": "resnet", "namespace": "team-a",
                 "ownerReferences": [{"uid": "uid-1", "controller": true}]},
    "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
    "status": {"conditions": [{"type": "Other", "status": "True"},
      {"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable",
       "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.\nmore"}]}})"));
  EXPECT_EQ(g, (PodGroupFacts{"team-a", "resnet", "uid-1", 3, "False", "Unschedulable",
                              "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}));
  // A basic (non-gang) group, or one the scheduler has not tried yet, and malformed fields.
  auto basic = parse_pod_group_facts(json::parse(R"({"metadata": {"name": "x", "namespace": "n"},
    "spec": {"schedulingPolicy": {"basic": {}}}, "status": {"conditions": "bad"}})"));
  EXPECT_EQ(basic, (PodGroupFacts{"n", "x", "", 0, "", "", ""}));
  EXPECT_EQ(parse_pod_group_facts(json::parse(R"({"metadata": {"name": "y"}, "spec": 3})")).min_count, 0);
}

TEST(ParsePodGroupFacts, ReadsTheBetaApisPodGroupInitiallyScheduled) {
  auto g = parse_pod_group_facts(json::parse(R"({
    "apiVersion": "scheduling.k8s.io/v1beta1", "metadata": {"name": "resnet", "namespace": "team-a"},
    "spec": {"workloadRef": {"workloadName": "resnet", "templateName": "nodes"},
             "schedulingPolicy": {"gang": {"minCount": 2}}},
    "status": {"conditions": [{"type": "DisruptionTarget", "status": "False"},
      {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled", "message": ""}]}})"));
  EXPECT_EQ(g, (PodGroupFacts{"team-a", "resnet", "", 2, "True", "Scheduled", ""}));
}

TEST(RenderGang, WorkloadAndPodGroupCarryTheGangOfMinReplicasAndTheJobsOwnership) {
  auto job = testing::example_job();
  job.spec.min_replicas = 2;
  job.spec.scheduling["gang"] = true;
  ASSERT_EQ(gang_min_count(job, false), std::optional<int>(2));
  const auto w = render_workload(job, 2, GangApi::kV1Alpha2);
  EXPECT_EQ(w["apiVersion"], "scheduling.k8s.io/v1alpha2");
  EXPECT_EQ(w["kind"], "Workload");
  EXPECT_EQ(w["metadata"]["name"], "resnet");
  EXPECT_EQ(w["metadata"]["namespace"], "team-a");
  EXPECT_EQ(w["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(w["spec"]["controllerRef"], (json{{"apiGroup", "kubedist.io"}, {"kind", "TrainingJob"}, {"name", "resnet"}}));
  EXPECT_EQ(w["spec"]["podGroupTemplates"],
            json::parse(R"([{"name": "nodes", "schedulingPolicy": {"gang": {"minCount": 2}}}])"));
  const auto g = render_pod_group(job, 2, GangApi::kV1Alpha2);
  EXPECT_EQ(g["apiVersion"], "scheduling.k8s.io/v1alpha2");
  EXPECT_EQ(g["kind"], "PodGroup");
  EXPECT_EQ(g["metadata"]["name"], "resnet");
  EXPECT_EQ(g["metadata"]["labels"]["kubedist.io/job-name"], "resnet");
  EXPECT_EQ(g["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(g["spec"]["podGroupTemplateRef"],
            json::parse(R"({"workload": {"workloadName": "resnet", "podGroupTemplateName": "nodes"}})"));
  EXPECT_EQ(g["spec"]["schedulingPolicy"], json::parse(R"({"gang": {"minCount": 2}})"));
}

TEST(RenderGang, TheBetaApiNamesTheWorkloadsTemplateInWorkloadRef) {
  auto job = testing::example_job();
  job.spec.scheduling["gang"] = true;
  const auto w = render_workload(job, 3, GangApi::kV1Beta1);
  EXPECT_EQ(w["apiVersion"], "scheduling.k8s.io/v1beta1");
  EXPECT_EQ(w["kind"], "Workload");
  EXPECT_EQ(w["spec"], render_workload(job, 3, GangApi::kV1Alpha2)["spec"]);  // the same Workload in both versions
  const auto g = render_pod_group(job, 3, GangApi::kV1Beta1);
  EXPECT_EQ(g["apiVersion"], "scheduling.k8s.io/v1beta1");
  EXPECT_EQ(g["metadata"], render_pod_group(job, 3, GangApi::kV1Alpha2)["metadata"]);
  EXPECT_EQ(g["spec"], json::parse(R"({"workloadRef": {"workloadName": "resnet", "templateName": "nodes"},
                                       "schedulingPolicy": {"gang": {"minCount": 3}}})"));
}

TEST(RenderGang, TheJobsChoiceWinsOverTheOperatorsDefault) {
  auto job = testing::example_job();
  EXPECT_EQ(gang_min_count(job, false), std::nullopt);
  EXPECT_EQ(gang_min_count(job, true), std::optional<int>(4));
  job.spec.scheduling["gang"] = false;
  EXPECT_EQ(gang_min_count(job, true), std::nullopt);
  job.spec.scheduling["gang"] = true;
  EXPECT_EQ(gang_min_count(job, false), std::optional<int>(4));
}

TEST(DecideGang, AGangJobsPodsNameItsPodGroupAndOthersNone) {
  const auto group_of = [](const Plan& p) { return testing::writes(p, Write::Verb::kCreate, "Pod").at(0).body["spec"].value("schedulingGroup", json()); };
  EXPECT_TRUE(group_of(decide(testing::example_job(), with_gang(true), kNow)).is_null());
  EXPECT_EQ(group_of(decide(job_with({{"scheduling", {{"gang", true}}}}), with_gang(true), kNow)),
            (json{{"podGroupName", "resnet"}}));
  EXPECT_EQ(group_of(decide(testing::example_job(), with_gang(true, true), kNow)), (json{{"podGroupName", "resnet"}}));
}

TEST(DecideGang, AGangJobCreatesItsWorkloadAndPodGroupWithItsPods) {
  auto job = job_with({{"minReplicas", 2}, {"scheduling", {{"gang", true}}}});
  Observed o = with_gang(true);
  auto p = decide(job, o, kNow);
  // The Service, Workload J, then PodGroup J, then the pods, then the job's status.
  std::vector<std::string> kinds;
  for (const auto& w : p.writes) kinds.push_back(w.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"Service", "Workload", "PodGroup", "Pod", "Pod", "Pod", "Pod",
                                             "TrainingJob"}));
  ASSERT_EQ(p.writes.size(), 8u);
  EXPECT_EQ(p.writes[1].path, "/apis/scheduling.k8s.io/v1beta1/namespaces/team-a/workloads");
  EXPECT_EQ(p.writes[1].body["apiVersion"], "scheduling.k8s.io/v1beta1");
  EXPECT_EQ(p.writes[1].body["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"], 2);
  EXPECT_EQ(p.writes[2].path, "/apis/scheduling.k8s.io/v1beta1/namespaces/team-a/podgroups");
  EXPECT_EQ(p.writes[2].body["spec"]["schedulingPolicy"]["gang"]["minCount"], 2);
  EXPECT_EQ(p.writes[2].body["spec"]["workloadRef"]["workloadName"], "resnet");
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kDelete, "PodGroup"));
  EXPECT_EQ(p.create_ranks, (std::vector<int>{0, 1, 2, 3}));
  // Once the PodGroup is there it is not created again.
  o = with_gang(true, false, PodGroupFacts{"team-a", "resnet", "uid-1", 2, "", "", ""});
  EXPECT_FALSE(testing::writes_any(decide(job, o, kNow), Write::Verb::kCreate, "PodGroup"));
}

TEST(DecideGang, SparesJoinThePodGroupWhoseGangNeverWaitsForThem) {
  // spec.spares: the spare pods are in the job's PodGroup (the scheduler sees all the job asks for), while the
  // gang's minCount stays minReplicas: members are placed together without waiting for a spare.
  const auto job = job_with({{"replicas", 4}, {"spares", 2}, {"scheduling", {{"gang", true}}}});
  const auto p = decide(job, with_gang(true), kNow);
  const auto pods = testing::writes(p, Write::Verb::kCreate, "Pod");
  ASSERT_EQ(pods.size(), 6u);
  int spares = 0;
  for (const auto& w : pods) {
    EXPECT_EQ(w.body["spec"].value("schedulingGroup", json()), (json{{"podGroupName", "resnet"}})) << w.name;
    spares += w.name.find("-spare-") != std::string::npos;
  }
  EXPECT_EQ(spares, 2);
  const auto groups = testing::writes(p, Write::Verb::kCreate, "PodGroup");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].body["spec"]["schedulingPolicy"]["gang"]["minCount"], 4);
}

TEST(DecideGang, OnKubernetes136sAlphaApiTheObjectsAreWrittenInV1alpha2) {
  auto job = job_with({{"scheduling", {{"gang", true}}}});
  auto p = decide(job, with_gang(true, false, std::nullopt, GangApi::kV1Alpha2), kNow);
  const auto workloads = testing::writes(p, Write::Verb::kCreate, "Workload");
  const auto groups = testing::writes(p, Write::Verb::kCreate, "PodGroup");
  ASSERT_EQ(workloads.size(), 1u);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(workloads[0].path, "/apis/scheduling.k8s.io/v1alpha2/namespaces/team-a/workloads");
  EXPECT_EQ(groups[0].path, "/apis/scheduling.k8s.io/v1alpha2/namespaces/team-a/podgroups");
  EXPECT_EQ(groups[0].body["apiVersion"], "scheduling.k8s.io/v1alpha2");
  EXPECT_EQ(groups[0].body["spec"]["podGroupTemplateRef"]["workload"]["workloadName"], "resnet");
}

TEST(DecideGang, JobsWithoutGangOwnNoPodGroupEvenWhereTheApiIsServed) {
  Observed o = with_gang(true);
  auto p = decide(testing::example_job(), o, kNow);
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "PodGroup"));
  EXPECT_EQ(p.create_ranks.size(), 4u);
  o = with_gang(true, true);  // --gang-scheduling=all
  const auto all = testing::writes(decide(testing::example_job(), o, kNow), Write::Verb::kCreate, "PodGroup");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].body["spec"]["schedulingPolicy"]["gang"]["minCount"], 4);
  EXPECT_FALSE(
      testing::writes_any(decide(job_with({{"scheduling", {{"gang", false}}}}), o, kNow), Write::Verb::kCreate, "PodGroup"));
}

TEST(DecideGang, WithoutTheWorkloadApiAGangJobFailsSayingWhatIsMissing) {
  auto job = job_with({{"scheduling", {{"gang", true}}}});
  auto p = decide(job, with_gang(false), kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  const Condition* failed = find_condition(p.status, ConditionType::kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "GangSchedulingUnavailable");
  EXPECT_NE(failed->message.find("serves no Workload API the operator knows (scheduling.k8s.io/v1beta1"),
            std::string::npos);
  EXPECT_NE(failed->message.find("scheduling.k8s.io/v1alpha2: Kubernetes 1.36"), std::string::npos);
  EXPECT_TRUE(testing::has_event(p, "GangSchedulingUnavailable"));
  EXPECT_TRUE(p.create_ranks.empty());
  for (const char* kind : {"Pod", "Workload", "PodGroup"}) EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, kind));
  EXPECT_TRUE(testing::writes_any(p, Write::Verb::kPatchStatus, "TrainingJob"));  // the failure
}

TEST(DecideGang, APodGroupOfAnotherOwnerIsNeverJoined) {
  auto job = job_with({{"scheduling", {{"gang", true}}}});
  Observed o = with_gang(true, false, PodGroupFacts{"team-a", "resnet", "someone-else", 4, "", "", ""});
  auto p = decide(job, o, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  EXPECT_EQ(find_condition(p.status, ConditionType::kFailed)->reason, "GangSchedulingConflict");
  EXPECT_TRUE(p.create_ranks.empty());
}

TEST(DecideGang, ANewMinReplicasReplacesThePodGroup) {
  auto job = job_with({{"minReplicas", 3}, {"scheduling", {{"gang", true}}}});
  Observed o = with_gang(true, false, PodGroupFacts{"team-a", "resnet", "uid-1", 2, "True", "Scheduled", ""});
  auto p = decide(job, o, kNow);
  // Both go (a PodGroup's policy is immutable); the next pass creates them anew.
  const auto gone = testing::writes(p, Write::Verb::kDelete, "PodGroup");
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].path, "/apis/scheduling.k8s.io/v1beta1/namespaces/team-a/podgroups/resnet");
  EXPECT_TRUE(testing::writes_any(p, Write::Verb::kDelete, "Workload"));
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "PodGroup"));
}

TEST(DecideGang, AGangThatWaitsWholeSaysSoOnceAndClearsWhenPlaced) {
  auto job = job_with({{"scheduling", {{"gang", true}}}});
  PodGroupFacts group{"team-a", "resnet", "uid-1", 4, "False", "Unschedulable", "0/3 nodes are available"};
  Observed o = with_gang(true, false, group);
  o.service_exists = true;
  o.pods = pods(4, "Pending");
  auto p = decide(job, o, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kPending);
  const Condition* c = find_condition(p.status, kGangScheduled);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "Unschedulable");
  EXPECT_EQ(c->message, "the gang of 4 pods (minReplicas) waits: the scheduler cannot place it whole: 0/3 nodes are available");
  EXPECT_TRUE(testing::has_event(p, "GangWaiting"));
  // The next pass with the same verdict neither repeats the Event nor changes the status.
  job.status = p.status;
  auto again = decide(job, o, kNow + 5);
  EXPECT_FALSE(testing::has_event(again, "GangWaiting"));
  EXPECT_EQ(again.status, job.status);
  // Placed: the condition turns True and an Event says so.
  group.scheduled = "True";
  group.reason = "Scheduled";
  o = with_gang(true, false, group);
  o.service_exists = true;
  o.pods = pods(4, "Running");
  auto placed = decide(job, o, kNow + 10);
  EXPECT_EQ(placed.status.phase, JobPhase::kRunning);
  EXPECT_TRUE(condition_true(placed.status, kGangScheduled));
  EXPECT_TRUE(testing::has_event(placed, "GangScheduled"));
}

}  // namespace
}  // namespace kubedist::trainingjob
