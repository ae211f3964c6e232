// Kueue admission (kueue/): its facts, its Workload and status writes, and its part in decide().
#include <gtest/gtest.h>

#include "test_jobs.h"
#include "test_plans.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/decide/status.h"
#include "trainingjob/kueue/decide.h"
#include "trainingjob/kueue/facts.h"
#include "trainingjob/kueue/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;
using State = Admission::State;

constexpr UnixSeconds kNow = 1'800'000'000;

TrainingJob queued_job(int replicas = 4, int min_replicas = 4, const std::string& priority = "") {
  json j = testing::example_job_json();
  j["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team"}};
  if (!priority.empty()) j["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = priority;
  j["spec"]["replicas"] = replicas;
  j["spec"]["minReplicas"] = min_replicas;
  j["spec"]["maxReplicas"] = replicas;
  return testing::job_from(j);
}

// Workload J as Kueue serves it: conditions given as (type, status, reason) triples, admitted on flavor "a100".
json workload_json(const std::vector<std::tuple<std::string, std::string, std::string>>& conditions, int count = 4,
                   int admitted = -1, int min_count = 0) {
  json conds = json::array();
  for (const auto& [type, status, reason] : conditions) {
    conds.push_back({{"type", type}, {"status", status}, {"reason", reason}, {"message", type + " says " + reason},
                     {"lastTransitionTime", "2027-01-15T08:00:00Z"}});
  }
  json ps = {{"name", "nodes"}, {"count", count}, {"template", json::object()}};
  if (min_count > 0) ps["minCount"] = min_count;
  json wl = {{"metadata",
              {{"name", "resnet"}, {"namespace", "team-a"}, {"resourceVersion", "77"},
               {"creationTimestamp", "2027-01-15T07:00:00Z"},
               {"ownerReferences", json::array({{{"uid", "uid-1"}, {"controller", true}}})}}},
             {"spec", {{"queueName", "team"}, {"podSets", json::array({ps})}}},
             {"status", {{"conditions", conds}}}};
  if (admitted >= 0) {
    wl["status"]["admission"] = {
        {"clusterQueue", "gpus"},
        {"podSetAssignments",
         json::array({{{"name", "nodes"}, {"count", admitted}, {"flavors", {{"nvidia.com/gpu", "a100"}, {"cpu", "a100"}}}}})}};
  }
  return wl;
}

FlavorFacts a100() {
  return {"a100", {{"gpu", "a100"}}, json::array({{{"key", "gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})};
}

KueueFacts seen(std::optional<json> workload, std::vector<FlavorFacts> flavors = {a100()}) {
  KueueFacts k;
  k.api = true;
  if (workload) k.workload = parse_kueue_workload_facts(*workload);
  k.flavors = std::move(flavors);
  k.priorities = {{"high", 1000}};
  return k;
}


TEST(KueueWorkloadFacts, ReadsAdmissionFlavorsAndTheReasonItWaits) {
  auto f = parse_kueue_workload_facts(workload_json({{"QuotaReserved", "True", "QuotaReserved"},
                                                     {"Admitted", "True", "Admitted"}}, 4, 3, 2));
  EXPECT_TRUE(f.admitted);
  EXPECT_TRUE(f.quota_reserved);
  EXPECT_EQ(f.count, 4);
  EXPECT_EQ(f.min_count, 2);
  EXPECT_EQ(f.admitted_count, 3);
  EXPECT_EQ(f.flavors, std::vector<std::string>{"a100"});  // one flavor named by two resources, once
  EXPECT_EQ(f.cluster_queue, "gpus");
  EXPECT_EQ(f.owner_uid, "uid-1");
  EXPECT_EQ(f.admitted_at, "2027-01-15T08:00:00Z");

  auto pending = parse_kueue_workload_facts(workload_json({{"QuotaReserved", "False", "Pending"}}));
  EXPECT_FALSE(pending.admitted);
  EXPECT_EQ(pending.reason, "Pending");
  EXPECT_EQ(pending.message, "QuotaReserved says Pending");
  EXPECT_EQ(pending.waiting_since, "2027-01-15T07:00:00Z");

  auto evicted = parse_kueue_workload_facts(workload_json({{"QuotaReserved", "True", "QuotaReserved"},
                                                           {"Evicted", "True", "Preempted"}}, 4, 4));
  EXPECT_TRUE(evicted.evicted);
  EXPECT_EQ(evicted.reason, "Preempted");
  EXPECT_TRUE(parse_kueue_workload_facts(json::object()).conditions.is_array());  // nothing served: no crash
}

TEST(DecideAdmission, WaitsSayingWhyUntilKueueAdmits) {
  const TrainingJob job = queued_job();
  EXPECT_EQ(decide_admission(job, KueueFacts{}).state, State::kUnavailable);
  EXPECT_EQ(decide_admission(job, seen(std::nullopt)).state, State::kCreate);
  const Admission waiting = decide_admission(job, seen(workload_json({{"QuotaReserved", "False", "Pending"}})));
  EXPECT_EQ(waiting.state, State::kWaiting);
  EXPECT_EQ(waiting.reason, "Pending");
  EXPECT_EQ(waiting.message, "waiting for admission by LocalQueue team: QuotaReserved says Pending");

  json other = workload_json({});
  other["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  EXPECT_EQ(decide_admission(job, seen(other)).state, State::kConflict);
}

TEST(DecideAdmission, AnAdmittedJobRunsOnItsFlavorsNodes) {
  const Admission a = decide_admission(
      queued_job(), seen(workload_json({{"QuotaReserved", "True", "QuotaReserved"}, {"Admitted", "True", "Admitted"}}, 4, 4)));
  ASSERT_EQ(a.state, State::kAdmitted);
  EXPECT_EQ(a.admitted_count, 4);
  EXPECT_EQ(a.placement.node_selector, (std::map<std::string, std::string>{{"gpu", "a100"}}));
  EXPECT_EQ(a.placement.tolerations.size(), 1u);
  EXPECT_EQ(a.message, "admitted by ClusterQueue gpus (4 of 4 nodes, flavor a100)");
  // A flavor the cache does not show (yet) places nothing wrongly: the job waits for it.
  const Admission unknown = decide_admission(
      queued_job(), seen(workload_json({{"QuotaReserved", "True", "QuotaReserved"}, {"Admitted", "True", "Admitted"}}, 4, 4), {}));
  EXPECT_EQ(unknown.state, State::kWaiting);
  EXPECT_EQ(unknown.reason, "FlavorNotFound");
}

TEST(DecideAdmission, EvictionAndChangesAreTold) {
  const TrainingJob job = queued_job();
  EXPECT_EQ(decide_admission(job, seen(workload_json({{"QuotaReserved", "True", "QuotaReserved"},
                                                      {"Admitted", "True", "Admitted"},
                                                      {"Evicted", "True", "Preempted"}}, 4, 4)))
                .state,
            State::kEvicted);
  // Quota given back after the eviction: an ordinary wait, still saying it was preempted.
  const Admission after = decide_admission(job, seen(workload_json({{"QuotaReserved", "False", "Pending"},
                                                                    {"Evicted", "True", "Preempted"}})));
  EXPECT_EQ(after.state, State::kWaiting);
  EXPECT_EQ(after.reason, "Preempted");
  EXPECT_EQ(decide_admission(job, seen(workload_json({}, 2))).state, State::kRecreate);  // kubectl scale
  EXPECT_EQ(decide_admission(job, seen(workload_json({{"Finished", "True", "Succeeded"}}))).state, State::kRecreate);
}

TEST(DecideAdmission, APriorityClassThatDoesNotExistKeepsTheJobOutOfTheQueue) {
  EXPECT_EQ(decide_admission(queued_job(4, 4, "high"), seen(std::nullopt)).priority, (PriorityClassFacts{"high", 1000}));
  const Admission missing = decide_admission(queued_job(4, 4, "urgent"), seen(std::nullopt));
  EXPECT_EQ(missing.state, State::kWaiting);
  EXPECT_EQ(missing.reason, "PriorityClassNotFound");
}

TEST(RenderKueueWorkload, OnePodSetOfTheTemplateWithRequestsPriorityAndPartialAdmission) {
  const json wl = render_kueue_workload(queued_job(4, 2), PriorityClassFacts{"high", 1000});
  EXPECT_EQ(wl["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(wl["metadata"]["name"], "resnet");
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(wl["spec"]["queueName"], "team");
  EXPECT_EQ(wl["spec"]["priority"], 1000);
  EXPECT_EQ(wl["spec"]["priorityClassRef"]["kind"], "WorkloadPriorityClass");
  const json& ps = wl["spec"]["podSets"][0];
  EXPECT_EQ(ps["name"], "nodes");
  EXPECT_EQ(ps["count"], 4);
  EXPECT_EQ(ps["minCount"], 2);
  EXPECT_EQ(ps["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"], 8);
  const json fixed = render_kueue_workload(queued_job(), std::nullopt);
  EXPECT_FALSE(fixed["spec"]["podSets"][0].contains("minCount"));
  EXPECT_FALSE(fixed["spec"].contains("priority"));
}

TEST(RenderKueueWorkload, SparesAreAPodSetOfTheirOwnAdmittedWithTheNodes) {
  TrainingJob job = queued_job(4, 2);
  EXPECT_EQ(render_kueue_workload(job, std::nullopt)["spec"]["podSets"].size(), 1u) << "no spares, no pod set";
  job.spec.spares = 2;
  const json wl = render_kueue_workload(job, std::nullopt);
  ASSERT_EQ(wl["spec"]["podSets"].size(), 2u);
  const json& spares = wl["spec"]["podSets"][1];
  EXPECT_EQ(spares["name"], "spares");
  EXPECT_EQ(spares["count"], 2);
  EXPECT_FALSE(spares.contains("minCount")) << "all of them or the job waits: they are part of what it asks for";
  EXPECT_EQ(spares["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"], 8);
  EXPECT_EQ(wl["spec"]["podSets"][0]["count"], 4);
}

TEST(KueueStatusPatch, ReleasingQuotaClearsTheAdmissionAndRequeuesAPreemptedJob) {
  const auto wl = parse_kueue_workload_facts(workload_json({{"QuotaReserved", "True", "QuotaReserved"},
                                                            {"Admitted", "True", "Admitted"},
                                                            {"Evicted", "True", "Preempted"}}, 4, 4));
  const json p = kueue_status_patch(wl, {KueueStatusWrite::Kind::kReleaseQuota, "Preempted", "by a higher priority"}, kNow);
  EXPECT_EQ(p["metadata"]["resourceVersion"], "77");
  EXPECT_TRUE(p["status"]["admission"].is_null());
  std::map<std::string, std::string> status;
  for (const auto& c : p["status"]["conditions"]) status[c["type"]] = c["status"];
  EXPECT_EQ(status, (std::map<std::string, std::string>{
                        {"QuotaReserved", "False"}, {"Admitted", "False"}, {"Evicted", "True"}, {"Requeued", "True"}}));

  const json done = kueue_status_patch(wl, {KueueStatusWrite::Kind::kFinish, "Succeeded", "all nodes exited 0"}, kNow);
  EXPECT_FALSE(done["status"].contains("admission"));
  EXPECT_EQ(done["status"]["conditions"].back()["type"], "Finished");
  EXPECT_EQ(done["status"]["conditions"].back()["lastTransitionTime"], format_rfc3339(kNow));
}

TEST(ApplyPlacement, TheFlavorsLabelsAndTolerationsJoinThePodsOwn) {
  json pod = {{"spec", {{"nodeSelector", {{"zone", "x"}, {"gpu", "t4"}}}, {"tolerations", json::array({{{"key", "a"}}})}}}};
  apply_placement(pod, Placement{{{"gpu", "a100"}}, json::array({{{"key", "gpu"}}, {{"key", "a"}}})});
  EXPECT_EQ(pod["spec"]["nodeSelector"], (json{{"zone", "x"}, {"gpu", "a100"}}));
  EXPECT_EQ(pod["spec"]["tolerations"].size(), 2u);
}

using Verb = Write::Verb;

// The conditions of the plan's status write to Workload J, by type: (status, reason, message).
std::map<std::string, std::tuple<std::string, std::string, std::string>> workload_status(const Plan& p) {
  std::map<std::string, std::tuple<std::string, std::string, std::string>> out;
  for (const auto& w : testing::writes(p, Verb::kPatchStatus, "Workload")) {
    for (const auto& c : w.body["status"]["conditions"]) out[c["type"]] = {c["status"], c["reason"], c["message"]};
  }
  return out;
}

Observed observed_with(const KueueFacts& k, std::vector<PodFacts> pods = {}) {
  Observed o;
  o.integrations.push_back(std::make_shared<KueueFacts>(k));
  o.pods = std::move(pods);
  o.service_exists = true;
  return o;
}

PodFacts running_pod(int rank) { return testing::example_pod(rank, "Running"); }

TEST(DecideQueuedJob, CreatesItsWorkloadAndNoPodUntilAdmitted) {
  const Plan p = decide(queued_job(), observed_with(seen(std::nullopt)), kNow);
  const auto created = testing::writes(p, Verb::kCreate, "Workload");
  ASSERT_EQ(created.size(), 1u);
  EXPECT_EQ(created[0].path, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads");
  EXPECT_EQ(created[0].body["spec"]["queueName"], "team");
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_FALSE(testing::writes_any(p, Verb::kCreate, "Pod"));
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "Service"));
  EXPECT_EQ(p.status.phase, JobPhase::kSuspended);
  EXPECT_FALSE(condition_true(p.status, kAdmitted));
  EXPECT_TRUE(condition_true(p.status, ConditionType::kSuspended));
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "Queued");
}

TEST(DecideQueuedJob, AnAdmittedJobCreatesItsPodsOnTheFlavor) {
  const Plan p = decide(queued_job(), observed_with(seen(workload_json({{"QuotaReserved", "True", "QuotaReserved"},
                                                                       {"Admitted", "True", "Admitted"}}, 4, 4))),
                        kNow);
  EXPECT_EQ(p.create_ranks, (std::vector<int>{0, 1, 2, 3}));
  const auto pods = testing::writes(p, Verb::kCreate, "Pod");
  ASSERT_EQ(pods.size(), 4u);
  for (const auto& pod : pods) {
    EXPECT_EQ(pod.body["spec"]["nodeSelector"]["gpu"], "a100");
    EXPECT_EQ(pod.body["spec"]["tolerations"].size(), 1u);
  }
  EXPECT_TRUE(condition_true(p.status, kAdmitted));
}

TEST(DecideQueuedJob, PartialAdmissionRunsTheAdmittedNodes) {
  const Plan p = decide(queued_job(4, 2), observed_with(seen(workload_json({{"QuotaReserved", "True", "QuotaReserved"},
                                                                           {"Admitted", "True", "Admitted"}}, 4, 3, 2))),
                        kNow);
  EXPECT_EQ(p.create_ranks, (std::vector<int>{0, 1, 2}));
  // The pods are rendered for the 3 nodes admitted: 2 to 3 nodes (minReplicas to the admitted count).
  const auto pods = testing::writes(p, Verb::kCreate, "Pod");
  ASSERT_EQ(pods.size(), 3u);
  std::map<std::string, std::string> env;
  for (const auto& e : pods[0].body["spec"]["containers"][0]["env"]) env[e["name"]] = e.value("value", "");
  EXPECT_EQ(env["PET_NNODES"], "2:3");
}

TEST(DecideQueuedJob, AnEvictedJobDeletesItsPodsThenGivesTheQuotaBack) {
  const json evicted = workload_json({{"QuotaReserved", "True", "QuotaReserved"}, {"Admitted", "True", "Admitted"},
                                      {"Evicted", "True", "Preempted"}}, 4, 4);
  TrainingJob job = queued_job();
  job.status.phase = JobPhase::kRunning;
  const Plan first = decide(job, observed_with(seen(evicted), {running_pod(0), running_pod(1), running_pod(2), running_pod(3)}), kNow);
  EXPECT_EQ(first.delete_pods.size(), 4u);
  EXPECT_TRUE(workload_status(first).empty());  // not while its pods still hold the GPUs
  EXPECT_EQ(first.status.phase, JobPhase::kSuspended);
  EXPECT_EQ(find_condition(first.status, kAdmitted)->reason, "Preempted");
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].reason, "Evicted");
  EXPECT_EQ(first.status.restarts, 0);  // a preemption is no failure of the job's

  const Plan gone = decide(job, observed_with(seen(evicted)), kNow);
  const auto released = workload_status(gone);
  ASSERT_EQ(released.count("QuotaReserved"), 1u);
  EXPECT_EQ(std::get<0>(released.at("QuotaReserved")), "False");
  EXPECT_EQ(released.at("Requeued"), (std::tuple<std::string, std::string, std::string>{"True", "Preempted", "Kueue evicted the job: Evicted says Preempted"}));
  const auto patch = testing::writes(gone, Verb::kPatchStatus, "Workload").at(0);
  EXPECT_EQ(patch.path, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/resnet/status");
  EXPECT_EQ(patch.body["metadata"]["resourceVersion"], "77");
}

TEST(DecideQueuedJob, AFinishedJobMarksItsWorkloadFinishedOnce) {
  TrainingJob job = queued_job();
  job.status.phase = JobPhase::kSucceeded;
  set_condition(job.status, ConditionType::kSucceeded, true, "AllNodesSucceeded", "all 4 nodes' trainer containers exited 0", kNow);
  const json admitted = workload_json({{"QuotaReserved", "True", "QuotaReserved"}, {"Admitted", "True", "Admitted"}}, 4, 4);
  const Plan p = decide(job, observed_with(seen(admitted)), kNow);
  EXPECT_EQ(workload_status(p).at("Finished"), (std::tuple<std::string, std::string, std::string>{
                                                   "True", "Succeeded", "all 4 nodes' trainer containers exited 0"}));
  const json finished = workload_json({{"Finished", "True", "Succeeded"}}, 4, 4);
  EXPECT_TRUE(workload_status(decide(job, observed_with(seen(finished)), kNow)).empty());
}

TEST(DecideQueuedJob, ASuspendedJobGivesItsQuotaBackByDroppingItsWorkload) {
  TrainingJob job = queued_job();
  job.spec.suspend = true;
  const json admitted = workload_json({{"QuotaReserved", "True", "QuotaReserved"}, {"Admitted", "True", "Admitted"}}, 4, 4);
  const Plan p = decide(job, observed_with(seen(admitted), {running_pod(0)}), kNow);
  const auto dropped = testing::writes(p, Verb::kDelete, "Workload");
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].path, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/resnet");
  EXPECT_EQ(dropped[0].body["propagationPolicy"], "Background");
  EXPECT_EQ(p.delete_pods.size(), 1u);
  EXPECT_EQ(p.status.phase, JobPhase::kSuspended);
  EXPECT_FALSE(testing::writes_any(decide(job, observed_with(seen(std::nullopt)), kNow), Verb::kCreate, "Workload"));
}

TEST(DecideQueuedJob, AJobWithoutTheLabelIgnoresKueue) {
  Plan p = decide(testing::example_job(), observed_with(seen(std::nullopt)), kNow);
  EXPECT_FALSE(testing::writes_any(p, Verb::kCreate, "Workload"));
  EXPECT_EQ(p.create_ranks.size(), 4u);
  EXPECT_EQ(find_condition(p.status, kAdmitted), nullptr);
}

}  // namespace
}  // namespace kubedist::trainingjob
