#include "trainingjob/decide/plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "test_jobs.h"
#include "test_plans.h"
#include "trainingjob/decide/decide_state.h"
#include "trainingjob/decide/failures.h"
#include "trainingjob/decide/lost_pods.h"
#include "trainingjob/decide/ranks.h"
#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

constexpr UnixSeconds kNow = 1'800'000'000;

PodFacts pod(int rank, const std::string& phase, std::optional<int> exit_code = std::nullopt) {
  PodFacts p = testing::example_pod(rank, phase);
  p.exit_code = exit_code;
  return p;
}

std::vector<PodFacts> pods(int n, const std::string& phase) {
  std::vector<PodFacts> out;
  for (int i = 0; i < n; ++i) out.push_back(pod(i, phase, phase == "Succeeded" ? std::optional<int>(0) : std::nullopt));
  return out;
}

TrainingJob job_with(const json& spec_patch, const std::string& phase = "") {
  json j = testing::example_job_json();
  j["spec"].merge_patch(spec_patch);
  auto job = testing::job_from(j);
  job.status.phase = parse_job_phase(phase);
  return job;
}

bool has_event(const Plan& p, const std::string& reason) {
  for (const auto& e : p.events) {
    if (e.reason == reason) return true;
  }
  return false;
}

std::vector<std::string> deleted_names(const Plan& p) {
  std::vector<std::string> names;
  for (const auto& d : p.delete_pods) names.push_back(d.name);
  return names;
}

TEST(Decide, NewJobCreatesServiceAndAllPodsNodeZeroFirst) {
  auto p = decide(testing::example_job(), {}, false, kNow);
  EXPECT_TRUE(testing::writes_any(p, Write::Verb::kCreate, "Service"));
  EXPECT_EQ(p.create_ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(p.delete_pods.empty());
  EXPECT_EQ(p.status.phase, JobPhase::kPending);
  EXPECT_TRUE(condition_true(p.status, ConditionType::kCreated));
  EXPECT_EQ(p.status.selector, "kubedist.io/job-name=resnet");
  EXPECT_EQ(p.status.observed_generation, 1);
  EXPECT_EQ(p.status.start_time, format_rfc3339(kNow));
  EXPECT_TRUE(has_event(p, "Created"));
  EXPECT_EQ(p.events.size(), 1u);
}

TEST(Decide, AMissingNamespaceRdzvSecretIsCreatedForAnActiveJobOnly) {
  Observed observed;
  observed.service_exists = true;
  observed.namespace_secret_exists = false;
  EXPECT_TRUE(testing::writes_named(decide(testing::example_job(), observed, kNow), Write::Verb::kCreate, "Secret", kNamespaceRdzvSecret));
  observed.namespace_secret_exists = true;
  EXPECT_FALSE(testing::writes_named(decide(testing::example_job(), observed, kNow), Write::Verb::kCreate, "Secret", kNamespaceRdzvSecret));  // never a second one
  observed.namespace_secret_exists = false;
  auto finished = testing::example_job();
  finished.status.phase = JobPhase::kSucceeded;
  EXPECT_FALSE(testing::writes_named(decide(finished, observed, kNow), Write::Verb::kCreate, "Secret", kNamespaceRdzvSecret));
  auto deleting = testing::example_job();
  deleting.deleting = true;
  EXPECT_FALSE(testing::writes_named(decide(deleting, observed, kNow), Write::Verb::kCreate, "Secret", kNamespaceRdzvSecret));
}

TEST(Decide, AJobWhosePodsMountItsOwnSecretFromAnEarlierOperatorKeepsItAndNeedsNoNamespaceSecret) {
  Observed observed;
  observed.service_exists = true;
  observed.namespace_secret_exists = false;
  const auto job = testing::example_job();
  PodFacts node0 = pod(0, "Running");
  node0.rdzv_secret = node0.job_rdzv_secret = true;
  observed.pods = {node0};
  const Plan p = decide(job, observed, kNow);
  EXPECT_TRUE(p.job_rdzv_secret);
  EXPECT_FALSE(testing::writes_named(p, Write::Verb::kCreate, "Secret", kNamespaceRdzvSecret));
  EXPECT_FALSE(p.create_ranks.empty());
  observed.pods = {};
  EXPECT_FALSE(decide(job, observed, kNow).job_rdzv_secret);
}

TEST(Decide, CreatesOnlyWhatIsMissingAndNeverDuplicates) {
  auto job = testing::example_job();
  auto p = decide(job, {pod(0, "Running"), pod(2, "Pending")}, true, kNow);
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "Service"));
  EXPECT_EQ(p.create_ranks, (std::vector<int>{1, 3}));
}

TEST(Decide, AllPodsRunningIsRunningWithCountsAndWorldSize) {
  auto p = decide(testing::example_job(), pods(4, "Running"), true, kNow);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_EQ(p.status.phase, JobPhase::kRunning);
  EXPECT_EQ(p.status.replicas, 4);
  EXPECT_EQ(p.status.ready_replicas, 4);
  EXPECT_EQ(p.status.world_size, 32);  // nprocPerNode auto, 8 GPUs per node
  EXPECT_TRUE(condition_true(p.status, ConditionType::kRunning));
  EXPECT_TRUE(p.events.empty());
}

TEST(Decide, SteadyStateChangesNothing) {
  auto job = testing::example_job();
  auto first = decide(job, pods(4, "Running"), true, kNow);
  job.status = first.status;
  auto second = decide(job, pods(4, "Running"), true, kNow + 100);
  EXPECT_EQ(second.status, job.status);
  EXPECT_TRUE(second.events.empty());
  EXPECT_TRUE(second.delete_pods.empty());
  EXPECT_TRUE(second.create_ranks.empty());
}

TEST(Decide, IgnoresPodsOwnedBySomeoneElse) {
  auto foreign = pod(0, "Running");
  foreign.owner_uid = "other-job";
  auto p = decide(testing::example_job(), {foreign}, true, kNow);
  EXPECT_EQ(p.create_ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(p.delete_pods.empty());
}

TEST(Decide, WaitsForATerminatingPodBeforeRecreatingItsName) {
  auto old = pod(1, "Running");
  old.deleting = true;
  auto p = decide(testing::example_job(), {pod(0, "Running"), old, pod(2, "Running"), pod(3, "Running")}, true, kNow);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_EQ(p.status.replicas, 3);
}

TEST(Decide, RecreatesAnExternallyDeletedPodAndCountsItAsNodeLost) {
  auto job = testing::example_job();
  job.status = decide(job, pods(4, "Running"), true, kNow).status;
  auto p = decide(job, {pod(0, "Running"), pod(1, "Running"), pod(3, "Running")}, true, kNow);
  EXPECT_EQ(p.create_ranks, (std::vector<int>{2}));
  EXPECT_TRUE(has_event(p, "PodLost"));
  EXPECT_EQ(p.status.restarts, 1);
  EXPECT_EQ(p.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(p.status.phase, JobPhase::kRestarting);
  // Once recreated, the pod is not counted again.
  job.status = p.status;
  auto ps = pods(4, "Running");
  ps[2] = pod(2, "Pending");
  auto again = decide(job, ps, true, kNow + 1);
  EXPECT_EQ(again.status.restarts, 1);
  EXPECT_TRUE(again.create_ranks.empty());
}

TEST(Decide, ScaleDownDeletesTheHighestRanks) {
  auto job = job_with({{"replicas", 2}, {"minReplicas", 1}, {"maxReplicas", 4}}, "Running");
  auto p = decide(job, pods(4, "Running"), true, kNow);
  EXPECT_EQ(deleted_names(p), (std::vector<std::string>{"resnet-node-2", "resnet-node-3"}));
  EXPECT_TRUE(has_event(p, "ScaledDown"));
  EXPECT_EQ(p.status.phase, JobPhase::kScaling);
}

TEST(Decide, ScaleUpCreatesNewRanks) {
  auto job = job_with({{"replicas", 6}, {"maxReplicas", 8}}, "Running");
  job.status = decide(testing::example_job(), pods(4, "Running"), true, kNow).status;
  job.generation = 2;
  auto p = decide(job, pods(4, "Running"), true, kNow);
  EXPECT_EQ(p.create_ranks, (std::vector<int>{4, 5}));
  EXPECT_TRUE(has_event(p, "ScaledUp"));
  EXPECT_EQ(p.status.phase, JobPhase::kScaling);
  EXPECT_EQ(p.status.observed_generation, 2);
}

TEST(Decide, DeletesStrayPodsWithBadRanks) {
  auto stray = pod(1, "Running");
  stray.rank = -1;
  stray.uid = "stray";
  auto p = decide(testing::example_job(), {pod(0, "Running"), stray}, true, kNow);
  EXPECT_EQ(deleted_names(p), (std::vector<std::string>{"resnet-node-1"}));
  EXPECT_EQ(p.delete_pods[0].uid, "stray");
}

TEST(Decide, AllNodesSucceededIsSucceeded) {
  auto p = decide(testing::example_job(), pods(4, "Succeeded"), true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kSucceeded);
  EXPECT_TRUE(condition_true(p.status, ConditionType::kSucceeded));
  EXPECT_EQ(p.status.completion_time, format_rfc3339(kNow));
  EXPECT_TRUE(has_event(p, "AllNodesSucceeded"));
  EXPECT_TRUE(p.delete_pods.empty());  // cleanPodPolicy Running keeps finished pods
}

TEST(Decide, SomeNodesSucceededKeepsWaiting) {
  auto ps = pods(4, "Running");
  ps[1] = pod(1, "Succeeded", 0);
  auto p = decide(job_with(json::object(), "Running"), ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kRunning);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_TRUE(p.delete_pods.empty());
}

TEST(Decide, RetryableFailureRecreatesThePodAndCountsARestart) {
  auto ps = pods(4, "Running");
  ps[0] = pod(0, "Failed", 1);
  auto p = decide(testing::example_job(), ps, true, kNow);
  EXPECT_EQ(deleted_names(p), (std::vector<std::string>{"resnet-node-0"}));
  EXPECT_TRUE(p.create_ranks.empty());  // after the old pod is gone
  EXPECT_EQ(p.status.restarts, 1);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartPodFailure), 1);
  EXPECT_EQ(p.status.phase, JobPhase::kRestarting);
  EXPECT_TRUE(condition_true(p.status, ConditionType::kRestarting));
  ASSERT_TRUE(has_event(p, "PodFailed"));
  EXPECT_NE(p.events[0].message.find("pod resnet-node-0 failed (exit code 1)"), std::string::npos);
  EXPECT_EQ(p.events[0].type, "Warning");
}

TEST(Decide, TheStatusIsWrittenBeforeThePodItCountsIsDeletedOnItsUid) {
  auto ps = pods(4, "Running");
  ps[0] = pod(0, "Failed", 1);
  const Plan p = decide(testing::example_job(), ps, true, kNow);
  ASSERT_EQ(p.writes.size(), 2u);
  EXPECT_EQ(p.writes[0].verb, Write::Verb::kPatchStatus);
  EXPECT_EQ(p.writes[0].kind, "TrainingJob");
  EXPECT_EQ(p.writes[0].path, "/apis/kubedist.io/v1alpha1/namespaces/team-a/trainingjobs/resnet/status");
  EXPECT_EQ(p.writes[0].precondition, "10");  // the resourceVersion decided on
  EXPECT_EQ(p.writes[0].body["status"]["restarts"], 1);
  EXPECT_EQ(p.writes[1], (Write{Write::Verb::kDelete, "Pod", "resnet-node-0", "/api/v1/namespaces/team-a/pods/resnet-node-0",
                               {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}}, "pod-0"}));
  EXPECT_EQ(testing::pod_deletions(p), p.delete_pods);
}

TEST(Decide, AnUnchangedStatusIsNoWrite) {
  auto job = testing::example_job();
  const Plan first = decide(job, pods(4, "Running"), true, kNow);
  job.status = first.status;
  EXPECT_FALSE(testing::writes_any(decide(job, pods(4, "Running"), true, kNow), Write::Verb::kPatchStatus, "TrainingJob"));
}

TEST(Decide, RestartingLastsUntilAllNodesRunAgain) {
  auto job = testing::example_job();
  job.status.phase = JobPhase::kRestarting;
  job.status.restarts = 1;
  auto ps = pods(4, "Running");
  ps[0] = pod(0, "Pending");
  auto p = decide(job, ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kRestarting);
  p = decide(job, pods(4, "Running"), true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kRunning);
  EXPECT_EQ(p.status.restarts, 1);
}

TEST(Decide, BackoffLimitEndsTheJobAsFailed) {
  auto job = job_with({{"backoffLimit", 2}});
  job.status.restarts = 2;
  job.status.restarts_by_reason[kRestartPodFailure] = 2;
  auto ps = pods(4, "Running");
  ps[3] = pod(3, "Failed", 137);
  auto p = decide(job, ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  const Condition* c = find_condition(p.status, ConditionType::kFailed);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "BackoffLimitExceeded");
  EXPECT_NE(c->message.find("backoffLimit 2 reached after 2 pod failures"), std::string::npos);
  EXPECT_EQ(p.status.restarts, 2);
  // cleanPodPolicy Running: the running pods go, the failed one stays for its logs.
  EXPECT_EQ(deleted_names(p), (std::vector<std::string>{"resnet-node-0", "resnet-node-1", "resnet-node-2"}));
}

TEST(Decide, InPlaceRestartsDoNotSpendTheBackoffLimit) {
  auto job = job_with({{"backoffLimit", 1}});
  job.status.restarts = 5;
  job.status.restarts_by_reason[kRestartWorkerCrash] = 5;
  auto ps = pods(4, "Running");
  ps[2] = pod(2, "Failed", 137);
  auto p = decide(job, ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kRestarting);
  EXPECT_EQ(deleted_names(p), (std::vector<std::string>{"resnet-node-2"}));
  EXPECT_EQ(p.status.restarts, 6);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartPodFailure), 1);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartWorkerCrash), 5);
}

TEST(Decide, BackoffLimitZeroFailsOnTheFirstFailure) {
  auto ps = pods(4, "Running");
  ps[1] = pod(1, "Failed", 2);
  auto p = decide(job_with({{"backoffLimit", 0}}), ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
}

TEST(Decide, RestartPolicyNeverFailsOnAnyPodFailure) {
  auto ps = pods(4, "Running");
  ps[2] = pod(2, "Failed", 137);
  auto p = decide(job_with({{"restartPolicy", "Never"}}), ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  EXPECT_EQ(find_condition(p.status, ConditionType::kFailed)->reason, "PodFailed");
}

TEST(FailureIsRetryable, ExitCodePolicySplitsPermanentAndRetryableCodes) {
  struct Case {
    RestartPolicy policy;
    std::optional<int> code;
    bool retryable;
  };
  const std::vector<Case> cases = {
      {RestartPolicy::kExitCode, 1, false},   {RestartPolicy::kExitCode, 127, false},
      {RestartPolicy::kExitCode, 128, true},  {RestartPolicy::kExitCode, 137, true},
      {RestartPolicy::kExitCode, std::nullopt, true},  // evicted, node lost
      {RestartPolicy::kExitCode, 0, true},    {RestartPolicy::kOnFailure, 1, true},
      {RestartPolicy::kOnFailure, 137, true}, {RestartPolicy::kNever, 137, false},
      {RestartPolicy::kNever, std::nullopt, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(failure_is_retryable(c.policy, pod(0, "Failed", c.code)), c.retryable)
        << to_string(c.policy) << " " << c.code.value_or(-1);
  }
}

TEST(Decide, ExitCodePolicyFailsPermanentlyOnAProgramError) {
  auto ps = pods(4, "Running");
  ps[0] = pod(0, "Failed", 3);
  auto p = decide(job_with({{"restartPolicy", "ExitCode"}}), ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  EXPECT_NE(find_condition(p.status, ConditionType::kFailed)->message.find("restartPolicy ExitCode makes this failure permanent"),
            std::string::npos);
  ps[0] = pod(0, "Failed", 143);
  p = decide(job_with({{"restartPolicy", "ExitCode"}}), ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kRestarting);
}

TEST(Decide, SuspendDeletesAllPodsAndResumeRecreatesThem) {
  auto job = job_with({{"suspend", true}}, "Running");
  job.status.start_time = format_rfc3339(kNow - 50);
  auto p = decide(job, pods(4, "Running"), true, kNow);
  EXPECT_EQ(p.delete_pods.size(), 4u);
  EXPECT_EQ(p.status.phase, JobPhase::kSuspended);
  EXPECT_TRUE(condition_true(p.status, ConditionType::kSuspended));
  EXPECT_TRUE(p.status.start_time.empty());
  EXPECT_TRUE(has_event(p, "Suspended"));

  job.status = p.status;
  p = decide(job, {}, true, kNow);  // suspended, nothing left: quiet
  EXPECT_TRUE(p.events.empty());
  EXPECT_TRUE(p.delete_pods.empty());
  EXPECT_EQ(p.status.phase, JobPhase::kSuspended);
  EXPECT_EQ(p.status.replicas, 0);

  auto resumed = job_with({{"suspend", false}});
  resumed.status = p.status;
  p = decide(resumed, {}, true, kNow);
  EXPECT_EQ(p.create_ranks.size(), 4u);
  EXPECT_FALSE(condition_true(p.status, ConditionType::kSuspended));
  EXPECT_TRUE(has_event(p, "Resumed"));
  EXPECT_EQ(p.status.start_time, format_rfc3339(kNow));
}

TEST(Decide, ActiveDeadlineFailsTheJobOrAsksToComeBack) {
  auto job = job_with({{"activeDeadlineSeconds", 100}}, "Running");
  job.status.start_time = format_rfc3339(kNow - 40);
  auto p = decide(job, pods(4, "Running"), true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kRunning);
  EXPECT_EQ(p.requeue_after_s, 60);

  job.status.start_time = format_rfc3339(kNow - 100);
  p = decide(job, pods(4, "Running"), true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  EXPECT_EQ(find_condition(p.status, ConditionType::kFailed)->reason, "DeadlineExceeded");
  EXPECT_EQ(p.delete_pods.size(), 4u);
}

TEST(Decide, CleanPodPolicyChoosesWhichPodsGoWhenFinished) {
  auto ps = pods(3, "Succeeded");
  ps.push_back(pod(3, "Running"));
  struct Case {
    const char* policy;
    size_t deleted;
  };
  for (const auto& c : std::vector<Case>{{"Running", 1}, {"All", 4}, {"None", 0}}) {
    auto job = job_with({{"cleanPodPolicy", c.policy}}, "Succeeded");
    auto p = decide(job, ps, true, kNow);
    EXPECT_EQ(p.delete_pods.size(), c.deleted) << c.policy;
    EXPECT_EQ(p.status.phase, JobPhase::kSucceeded);
    EXPECT_EQ(has_event(p, "CleanedUp"), c.deleted > 0) << c.policy;
  }
}

TEST(Decide, TtlDeletesTheJobAfterItFinished) {
  auto job = job_with({{"ttlSecondsAfterFinished", 30}}, "Succeeded");
  job.status.completion_time = format_rfc3339(kNow - 10);
  auto p = decide(job, {}, true, kNow);
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kDelete, "TrainingJob"));
  EXPECT_EQ(p.requeue_after_s, 20);
  job.status.completion_time = format_rfc3339(kNow - 30);
  p = decide(job, {}, true, kNow);
  EXPECT_TRUE(testing::writes_any(p, Write::Verb::kDelete, "TrainingJob"));
  EXPECT_TRUE(has_event(p, "TTLExpired"));
}

TEST(Decide, FinishedJobsStayFinished) {
  auto job = testing::example_job();
  job.status.phase = JobPhase::kFailed;
  auto p = decide(job, {}, true, kNow);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "Service"));
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
}

TEST(Decide, DeletingJobsAreLeftToGarbageCollection) {
  auto job = testing::example_job();
  job.deleting = true;
  auto p = decide(job, {}, false, kNow);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "Service"));
  EXPECT_EQ(p.status, job.status);
}

TEST(Decide, InvalidSpecFailsOnceWithAClearMessageAndNoHotLoop) {
  json j = testing::example_job_json();
  j["spec"]["template"]["spec"]["containers"][0].erase("command");
  auto job = testing::job_from(j);
  auto p = decide(job, {}, false, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  const Condition* c = find_condition(p.status, ConditionType::kFailed);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "InvalidSpec");
  EXPECT_NE(c->message.find("command is required"), std::string::npos);
  EXPECT_TRUE(has_event(p, "InvalidSpec"));
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "Service"));
  EXPECT_FALSE(p.requeue_after_s.has_value());

  job.status = p.status;  // the second look changes nothing and says nothing
  auto again = decide(job, {}, false, kNow + 5);
  EXPECT_EQ(again.status, job.status);
  EXPECT_TRUE(again.events.empty());
}

TEST(Decide, FixingAnInvalidSpecStartsTheJob) {
  json j = testing::example_job_json();
  j["spec"]["replicas"] = "x";
  auto bad = testing::job_from(j);
  auto good = testing::example_job();
  good.status = decide(bad, {}, false, kNow).status;
  good.generation = bad.generation + 1;  // the user's edit
  auto p = decide(good, {}, false, kNow);
  EXPECT_EQ(p.create_ranks.size(), 4u);
  EXPECT_EQ(p.status.phase, JobPhase::kPending);
  EXPECT_FALSE(condition_true(p.status, ConditionType::kFailed));
  EXPECT_TRUE(has_event(p, "SpecFixed"));
}

TEST(Decide, APodTemplateTheApiServerRejectsStaysFailedUntilTheSpecChanges) {
  auto job = testing::example_job();
  job.generation = 3;
  // What the act layer writes when the API server refuses to create the first pod.
  job.status = decide(job, {}, true, kNow).status;
  job.status.phase = JobPhase::kFailed;
  set_condition(job.status, ConditionType::kFailed, true, "InvalidSpec",
                "the API server rejected pod resnet-node-0: spec.containers[1].name: Duplicate value", kNow);
  auto p = decide(job, {}, true, kNow + 5);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(p.status, job.status);
  EXPECT_FALSE(p.requeue_after_s.has_value());

  job.generation = 4;  // kubectl edit: now it is tried again
  auto fixed = decide(job, {}, true, kNow + 10);
  EXPECT_EQ(fixed.create_ranks.size(), 4u);
  EXPECT_TRUE(has_event(fixed, "SpecFixed"));
  EXPECT_EQ(fixed.status.observed_generation, 4);
}

TEST(Decide, APodCreateTheApiServerRefusedFailsTheJobOnceForThatSpecOnly) {
  auto job = testing::example_job();
  job.generation = 3;
  Observed o;
  o.service_exists = true;
  o.pod_rejected = PodRejection{"resnet-node-0", "spec.containers[1].name: Duplicate value: \"trainer\"", 3};
  auto p = decide(job, o, kNow);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  const Condition* c = find_condition(p.status, ConditionType::kFailed);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "InvalidSpec");
  EXPECT_EQ(c->message, "the API server rejected pod resnet-node-0: spec.containers[1].name: Duplicate value: \"trainer\"");
  EXPECT_EQ(p.status.completion_time, format_rfc3339(kNow));
  ASSERT_FALSE(p.events.empty());
  EXPECT_EQ(p.events.back().reason, "InvalidSpec");
  EXPECT_EQ(p.events.back().message, c->message);

  // Once written, the failure holds while the refusal is still known: no new Event, no create, no change.
  job.status = p.status;
  auto again = decide(job, o, kNow + 5);
  EXPECT_EQ(again.status, job.status);
  EXPECT_TRUE(again.events.empty());
  EXPECT_TRUE(again.create_ranks.empty());

  // A refusal of another generation's template says nothing of this one.
  auto fresh = testing::example_job();
  fresh.generation = 4;
  auto other = decide(fresh, o, kNow);
  EXPECT_EQ(other.status.phase, JobPhase::kPending);
  EXPECT_EQ(other.create_ranks.size(), 4u);
}

TEST(Decide, AForbiddenPodIsAConditionAndOneWarningEventAndCreatesWaitForTheBackoffWithoutAClaim) {
  auto job = testing::example_job();
  Observed o;
  o.service_exists = true;
  const std::string why = "pods \"resnet-node-0\" is forbidden: violates PodSecurity \"restricted:latest\": "
                          "privileged (container \"trainer\" must not set securityContext.privileged=true)";
  o.pod_refused = PodRefusal{"resnet-node-0", why, 1, kNow + 5};
  auto p = decide(job, o, kNow);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_TRUE(p.creates_held);
  EXPECT_EQ(p.requeue_after_s, 5);
  EXPECT_FALSE(condition_true(p.status, ConditionType::kCreated));  // nothing claimed
  EXPECT_FALSE(has_event(p, "Created"));
  EXPECT_NE(p.status.phase, JobPhase::kFailed);  // the namespace's rules may change; the spec is not at fault
  const Condition* c = find_condition(p.status, ConditionType::kPodsRefused);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "True");
  EXPECT_EQ(c->reason, "PodSecurity");
  EXPECT_EQ(c->message, "the API server refused pod resnet-node-0: " + why);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].type, "Warning");
  EXPECT_EQ(p.events[0].reason, "PodsRefused");

  // Once written: no second Event, nothing created before retry_at, then the pods are tried again.
  job.status = p.status;
  auto held = decide(job, o, kNow + 3);
  EXPECT_TRUE(held.events.empty());
  EXPECT_TRUE(held.create_ranks.empty());
  EXPECT_EQ(held.requeue_after_s, 2);
  EXPECT_EQ(held.status, job.status);
  auto retry = decide(job, o, kNow + 5);
  EXPECT_EQ(retry.create_ranks.size(), 4u);
  EXPECT_FALSE(retry.creates_held);
  EXPECT_TRUE(retry.events.empty());
  EXPECT_FALSE(condition_true(retry.status, ConditionType::kCreated));

  // The server took them: the next pass sees the pods and says so.
  Observed taken;
  taken.service_exists = true;
  taken.pods = pods(4, "Pending");
  auto after = decide(job, taken, kNow + 7);
  EXPECT_TRUE(after.create_ranks.empty());
  EXPECT_TRUE(condition_true(after.status, ConditionType::kCreated));
  c = find_condition(after.status, ConditionType::kPodsRefused);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "PodsCreated");
}

TEST(Decide, AQuotaThatRefusesTheSecondPodKeepsTheFirstAndRetriesOnlyTheMissingOne) {
  auto job = testing::example_job();
  job.spec.replicas = 2;
  Observed o;
  o.service_exists = true;
  o.pods = pods(1, "Pending");
  o.pod_refused = PodRefusal{"resnet-node-1",
                             "pods \"resnet-node-1\" is forbidden: exceeded quota: one, requested: pods=1, used: "
                             "pods=1, limited: pods=1",
                             3, kNow + 20};
  auto p = decide(job, o, kNow);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_EQ(p.requeue_after_s, 20);
  EXPECT_EQ(find_condition(p.status, ConditionType::kPodsRefused)->reason, "ResourceQuota");
  EXPECT_TRUE(has_event(p, "PodsRefused"));
  EXPECT_EQ(decide(job, o, kNow + 20).create_ranks, std::vector<int>{1});
}

TEST(RefusedCreateBackoff, DoublesFromFiveSecondsToFiveMinutes) {
  EXPECT_EQ(refused_create_backoff_s(1), 5);
  EXPECT_EQ(refused_create_backoff_s(2), 10);
  EXPECT_EQ(refused_create_backoff_s(3), 20);
  EXPECT_EQ(refused_create_backoff_s(7), 300);
  EXPECT_EQ(refused_create_backoff_s(1000), 300);
}

TEST(RefusalReason, NamesTheAdmissionThatRefusedFromTheServersMessage) {
  EXPECT_EQ(refusal_reason("pods \"a\" is forbidden: violates PodSecurity \"restricted:latest\": ..."), "PodSecurity");
  EXPECT_EQ(refusal_reason("pods \"a\" is forbidden: exceeded quota: q, requested: pods=1"), "ResourceQuota");
  EXPECT_EQ(refusal_reason("pods \"a\" is forbidden: failed quota: q: must specify limits.cpu"), "ResourceQuota");
  EXPECT_EQ(refusal_reason("admission webhook \"deny.example.com\" denied the request: no"), "AdmissionWebhook");
  EXPECT_EQ(refusal_reason("pods is forbidden: User \"system:serviceaccount:x:y\" cannot create resource"),
            "Forbidden");
}

TEST(Decide, TheFirstPodToFailIsTheLastFailureAndItsMessageReachesTheEvent) {
  auto job = job_with(json::object(), "Running");
  job.status.replicas = 4;
  auto ps = pods(4, "Running");
  ps[1] = pod(1, "Failed", 1);  // failed later, because its peer was gone
  ps[1].finished_at = "2026-12-03T05:00:09Z";
  ps[1].termination_message = "worker rank 2 (local rank 0) on resnet-node-1 exited with code 1: RuntimeError: gloo";
  ps[3] = pod(3, "Failed", 3);
  ps[3].finished_at = "2026-12-03T05:00:07Z";
  ps[3].node_name = "n3";
  ps[3].failure_reason = "Error";
  ps[3].termination_message = "worker rank 6 (local rank 0) on resnet-node-3 exited with code 3: ValueError: bad batch";
  auto p = decide(job, ps, true, kNow);
  ASSERT_TRUE(p.status.last_failure.has_value());
  EXPECT_EQ(*p.status.last_failure, (LastFailure{"2026-12-03T05:00:07Z", "resnet-node-3", "n3", 3, "Error",
                                                 ps[3].termination_message}));
  bool named = false;
  for (const auto& e : p.events) {
    named = named || (e.reason == "PodFailed" &&
                      e.message.find("pod resnet-node-3 failed (exit code 3, reason Error): worker rank 6 (local rank "
                                     "0) on resnet-node-3 exited with code 3: ValueError: bad batch") == 0);
  }
  EXPECT_TRUE(named) << "a PodFailed Event carries the launcher's summary";

  // The same failure under restartPolicy ExitCode ends the job, and its condition says why.
  auto permanent = job_with({{"restartPolicy", "ExitCode"}}, "Running");
  permanent.status.replicas = 4;
  auto q = decide(permanent, ps, true, kNow);
  EXPECT_EQ(q.status.phase, JobPhase::kFailed);
  EXPECT_EQ(q.status.last_failure->pod, "resnet-node-3");
  const Condition* c = find_condition(q.status, ConditionType::kFailed);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->message.find("ValueError: bad batch"), std::string::npos) << c->message;
}

int sum(const std::map<std::string, int>& m) {
  int n = 0;
  for (const auto& [k, v] : m) n += v;
  return n;
}

// The node that running_job() schedules rank's pod on. Appended rather than "n" + std::to_string(rank): GCC 12
// warns (-Wrestrict, a false positive) on the inlined insert at the front of a temporary string in Release.
std::string node_of(int rank) {
  std::string name = "n";
  name += std::to_string(rank);
  return name;
}

// A job whose 4 pods ran at the last status write, each scheduled on node n<rank>.
TrainingJob running_job(std::vector<PodFacts>* ps) {
  auto job = testing::example_job();
  *ps = pods(4, "Running");
  for (auto& p : *ps) p.node_name = node_of(p.rank);
  job.status = decide(job, *ps, true, kNow).status;
  EXPECT_EQ(job.status.phase, JobPhase::kRunning);
  return job;
}

std::vector<NodeFacts> up(const std::vector<std::string>& names) {
  std::vector<NodeFacts> out;
  for (const auto& n : names) out.push_back(NodeFacts{n, true, "", false, ""});
  return out;
}

// The pods' nodes of running_job() missing from `nodes` are deleted: the act layer's GET answered 404 for them.
Observed observed(const std::vector<PodFacts>& ps, std::vector<NodeFacts> nodes) {
  Observed o;
  o.pods = ps;
  o.service_exists = true;
  o.nodes_watched = true;
  for (int rank = 0; rank < 4; ++rank) o.nodes_gone.insert(node_of(rank));
  for (const auto& n : nodes) o.nodes_gone.erase(n.name);
  o.nodes = std::move(nodes);
  o.node_lost_grace_s = 60;
  return o;
}

TEST(Decide, PodsOfADeletedNodeAreForceDeletedAndCountedAsNodeLost) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  auto p = decide(job, observed(ps, up({"n0", "n1", "n3"})), kNow + 5);
  ASSERT_EQ(p.delete_pods.size(), 1u);
  EXPECT_EQ(p.delete_pods[0], (PodDeletion{"resnet-node-2", "pod-2", true}));
  EXPECT_EQ(p.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(p.status.restarts_by_reason.count("pod_failure") ? p.status.restarts_by_reason["pod_failure"] : 0, 0);
  EXPECT_EQ(p.status.restarts, 1);
  EXPECT_EQ(p.status.lost_pods, (std::vector<std::string>{"pod-2"}));
  EXPECT_EQ(p.status.phase, JobPhase::kRestarting);
  ASSERT_TRUE(has_event(p, "PodLost"));
  // The pod terminating on the next look is not counted twice; gone, it is recreated and forgotten.
  job.status = p.status;
  ps[2].deleting = true;
  auto next = decide(job, observed(ps, up({"n0", "n1", "n3"})), kNow + 6);
  EXPECT_EQ(next.status.restarts, 1);
  EXPECT_TRUE(next.create_ranks.empty());
  job.status = next.status;
  ps.erase(ps.begin() + 2);
  auto gone = decide(job, observed(ps, up({"n0", "n1", "n3"})), kNow + 7);
  EXPECT_EQ(gone.create_ranks, (std::vector<int>{2}));
  EXPECT_EQ(gone.status.restarts, 1);
  EXPECT_TRUE(gone.status.lost_pods.empty());
}

TEST(Decide, ALostPodWhoseDeleteDidNotLandIsDeletedAgainButCountedOnce) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  auto first = decide(job, observed(ps, up({"n0", "n1", "n3"})), kNow + 5);
  ASSERT_EQ(first.status.restarts_by_reason["node_lost"], 1);
  job.status = first.status;  // written, but the force-delete failed: the pod is still there, not deleting
  auto retry = decide(job, observed(ps, up({"n0", "n1", "n3"})), kNow + 8);
  EXPECT_EQ(retry.delete_pods, (std::vector<PodDeletion>{{"resnet-node-2", "pod-2", true}}));
  EXPECT_EQ(retry.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(retry.status.restarts, 1);
  EXPECT_FALSE(has_event(retry, "PodLost"));
  EXPECT_EQ(retry.status.phase, JobPhase::kRestarting);
}

TEST(Decide, AFinishedPodKeepsItsVerdictWhenItsNodeGoes) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  ps[2].phase = "Succeeded";
  ps[2].exit_code = 0;
  auto p = decide(job, observed(ps, up({"n0", "n1", "n3"})), kNow + 5);  // n2 deleted after its pod finished
  EXPECT_TRUE(p.delete_pods.empty());
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_EQ(p.status.restarts, 0);
  for (auto& pod : ps) pod.phase = "Succeeded", pod.exit_code = 0;
  EXPECT_EQ(decide(job, observed(ps, up({"n0", "n1", "n3"})), kNow + 6).status.phase, JobPhase::kSucceeded);
  // A pod that failed for its own reason keeps it too: restartPolicy decides, not the lost node.
  ps = pods(4, "Running");
  for (auto& pod : ps) pod.node_name = node_of(pod.rank);
  ps[2] = pod(2, "Failed", 3);
  ps[2].node_name = "n2";
  auto permanent = decide(job_with({{"restartPolicy", "ExitCode"}}), observed(ps, up({"n0", "n1", "n3"})), kNow + 7);
  EXPECT_EQ(permanent.status.phase, JobPhase::kFailed);
}

TEST(Decide, ARestartCountFromBeforeRestartsByReasonIsPodFailures) {
  auto job = job_with({{"backoffLimit", 2}});
  job.status.phase = JobPhase::kRunning;
  job.status.restarts = 2;  // written by an operator that knew no reasons: every restart was a pod failure
  auto ps = pods(4, "Running");
  ps[1] = pod(1, "Failed", 137);
  auto p = decide(job, ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartPodFailure), 2);
  EXPECT_EQ(p.status.restarts, 2);
}

TEST(Decide, ANodeMissingFromTheCacheLosesItsPodsOnlyOnceTheApiServerConfirmsItGone) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  ps[3].node_name = "brand-new";  // bound to a node the node watch has not delivered (or the GET could not tell)
  auto p = decide(job, observed(ps, up({"n0", "n1", "n2"})), kNow + 5);
  EXPECT_TRUE(p.delete_pods.empty());
  EXPECT_EQ(p.status, job.status);
  EXPECT_EQ(p.requeue_after_s, 5);  // looked at again soon
  // However long it stays unknown, a cache miss alone never loses the pod.
  EXPECT_TRUE(decide(job, observed(ps, up({"n0", "n1", "n2"})), kNow + 3600).delete_pods.empty());
  // The API server answered 404 for it: deleted, its pod forced.
  Observed gone = observed(ps, up({"n0", "n1", "n2"}));
  gone.nodes_gone.insert("brand-new");
  auto later = decide(job, gone, kNow + 6);
  EXPECT_EQ(later.delete_pods, (std::vector<PodDeletion>{{"resnet-node-3", "pod-3", true}}));
  EXPECT_EQ(later.status.restarts_by_reason["node_lost"], 1);
}

TEST(Decide, APodStuckTerminatingOnALostNodeIsForced) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  ps[2].deleting = true;  // evicted by a drain, then the node went away: no kubelet will confirm
  auto p = decide(job, observed(ps, up({"n0", "n1", "n3"})), kNow + 5);
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-node-2", "pod-2", true}}));
  EXPECT_EQ(p.status.restarts_by_reason["node_lost"], 1);
  // On a node that is still there it is left to finish terminating.
  auto healthy = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 5);
  EXPECT_TRUE(healthy.delete_pods.empty());
}

TEST(Decide, NodeZeroLostIsRecreatedFirst) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  ps.erase(ps.begin() + 3);
  ps.erase(ps.begin());
  auto p = decide(job, observed(ps, up({"n1", "n2"})), kNow + 5);
  EXPECT_EQ(p.create_ranks, (std::vector<int>{0, 3}));
  EXPECT_EQ(p.status.restarts_by_reason["node_lost"], 2);
}

TEST(Decide, ANotReadyNodeLosesItsPodsOnlyAfterTheGraceAndWithoutForce) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  std::vector<NodeFacts> nodes = up({"n0", "n1", "n2", "n3"});
  nodes[2] = NodeFacts{"n2", false, format_rfc3339(kNow - 20), false, ""};
  auto early = decide(job, observed(ps, nodes), kNow);
  EXPECT_TRUE(early.delete_pods.empty());
  EXPECT_EQ(early.requeue_after_s, 40);
  EXPECT_EQ(early.status.restarts, 0);
  auto late = decide(job, observed(ps, nodes), kNow + 40);
  // Deleted, not forced: the node may merely be cut off, its pod still running there under the same hostname.
  EXPECT_EQ(late.delete_pods, (std::vector<PodDeletion>{{"resnet-node-2", "pod-2", false}}));
  EXPECT_EQ(late.status.restarts_by_reason["node_lost"], 1);
  EXPECT_NE(late.events.back().message.find("node n2 has been NotReady for 60s"), std::string::npos)
      << late.events.back().message;
  EXPECT_NE(late.events.back().message.find("once its node confirms the deletion or is confirmed gone"),
            std::string::npos);
  // Terminating and unconfirmed, it stays: no force, no new pod of its name, no second count.
  job.status = late.status;
  ps[2].deleting = true;
  auto waiting = decide(job, observed(ps, nodes), kNow + 100);
  EXPECT_TRUE(waiting.delete_pods.empty());
  EXPECT_TRUE(waiting.create_ranks.empty());
  EXPECT_EQ(waiting.status.restarts, 1);
  EXPECT_EQ(waiting.status.phase, JobPhase::kRestarting);
  // Out of service (the administrator's taint) or deleted: now it is forced, and recreated once gone.
  nodes[2].out_of_service = true;
  EXPECT_EQ(decide(job, observed(ps, nodes), kNow + 101).delete_pods,
            (std::vector<PodDeletion>{{"resnet-node-2", "pod-2", true}}));
  nodes.erase(nodes.begin() + 2);
  auto deleted = decide(job, observed(ps, nodes), kNow + 102);
  EXPECT_EQ(deleted.delete_pods, (std::vector<PodDeletion>{{"resnet-node-2", "pod-2", true}}));
  EXPECT_EQ(deleted.status.restarts, 1);
}

TEST(Decide, AnOutOfServiceNodeLosesItsPodsAtOnceAndForced) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  std::vector<NodeFacts> nodes = up({"n0", "n1", "n2", "n3"});
  nodes[1] = NodeFacts{"n1", false, format_rfc3339(kNow - 1), false, "", true};
  auto p = decide(job, observed(ps, nodes), kNow);
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-node-1", "pod-1", true}}));
  EXPECT_EQ(p.status.restarts_by_reason["node_lost"], 1);
  EXPECT_NE(p.events.back().message.find("node n1 is out of service (taint node.kubernetes.io/out-of-service)"),
            std::string::npos)
      << p.events.back().message;
  // A Ready node with the taint is not judged lost here: the taint's NoExecute evicts its pods, which then count.
  nodes[1] = NodeFacts{"n1", true, "", false, "", true};
  EXPECT_TRUE(decide(job, observed(ps, nodes), kNow).delete_pods.empty());
}

TEST(Decide, NodeZeroFinishedIsAFinishedJobWhoseOtherPodsAreStoppedNotRecreated) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  ps[0].phase = "Succeeded";  // node 0's launcher, the rendezvous host, exited 0 after training at world size 2
  ps[0].exit_code = 0;
  ps.erase(ps.begin() + 3);   // node 3's pod vanished with its node
  // Node 2's node was deleted (a lost node while the group went on without it); node 1 still runs.
  auto p = decide(job, observed(ps, up({"n0", "n1"})), kNow + 5);
  EXPECT_EQ(p.status.phase, JobPhase::kSucceeded);
  const Condition* c = find_condition(p.status, ConditionType::kSucceeded);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "GroupFinished");
  EXPECT_EQ(c->message,
            "node 0 (pod resnet-node-0) finished the training: its launcher, the rendezvous host, exited 0; "
            "stopping pods resnet-node-1, resnet-node-2");
  EXPECT_TRUE(has_event(p, "GroupFinished"));
  EXPECT_EQ(p.status.completion_time, format_rfc3339(kNow + 5));
  // Stopped, forced only where the node is confirmed gone; nothing recreated, no loss counted.
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-node-1", "pod-1", false}, {"resnet-node-2", "pod-2", true}}));
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_EQ(p.status.restarts, 0);
  EXPECT_FALSE(has_event(p, "PodLost"));
  EXPECT_FALSE(condition_true(p.status, ConditionType::kRunning));
  // The next pass finds a finished job: nothing is recreated for the stopped pods.
  job.status = p.status;
  ps[1].deleting = true;
  ps.erase(ps.begin() + 2);
  auto next = decide(job, observed(ps, up({"n0", "n1"})), kNow + 6);
  EXPECT_EQ(next.status.phase, JobPhase::kSucceeded);
  EXPECT_TRUE(next.create_ranks.empty());
  EXPECT_TRUE(next.delete_pods.empty());  // stopping on a node that answers: left to its kubelet
  EXPECT_EQ(next.status.restarts, 0);
  // Its node stops reporting, then is confirmed shut down: the stopped pod is forced, still nothing recreated.
  std::vector<NodeFacts> nodes = up({"n0", "n1"});
  nodes[1] = NodeFacts{"n1", false, format_rfc3339(kNow), false, ""};
  EXPECT_TRUE(decide(job, observed(ps, nodes), kNow + 600).delete_pods.empty());
  nodes[1].out_of_service = true;
  auto forced = decide(job, observed(ps, nodes), kNow + 601);
  EXPECT_EQ(forced.delete_pods, (std::vector<PodDeletion>{{"resnet-node-1", "pod-1", true}}));
  EXPECT_TRUE(forced.create_ranks.empty());
  EXPECT_EQ(forced.status.phase, JobPhase::kSucceeded);
}

TEST(Decide, NodesStillRunningHealthyGetAGraceToFinishAfterNodeZero) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  ps[0].phase = "Succeeded";
  ps[0].exit_code = 0;
  ps[0].finished_at = format_rfc3339(kNow);
  // The others still run, ready, on Ready nodes: they usually exit 0 moments later (AllNodesSucceeded).
  auto early = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 10);
  EXPECT_EQ(early.status.phase, JobPhase::kRunning);
  EXPECT_TRUE(early.delete_pods.empty());
  EXPECT_EQ(early.requeue_after_s, 20);
  // Past the grace they are stopped: the group is done.
  auto late = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 30);
  EXPECT_EQ(late.status.phase, JobPhase::kSucceeded);
  EXPECT_EQ(find_condition(late.status, ConditionType::kSucceeded)->reason, "GroupFinished");
  EXPECT_EQ(late.delete_pods.size(), 3u);
  // One of them not ready: no wait.
  ps[2].ready = false;
  EXPECT_EQ(decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 10).status.phase, JobPhase::kSucceeded);
}

TEST(Decide, ANodeWhoseTrainerExitedZeroIsWaitedForAsFinishingNotStoppedAsNotReady) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  ps[0].phase = "Succeeded";
  ps[0].exit_code = 0;
  ps[0].finished_at = format_rfc3339(kNow);
  // What a kubelet reports for a second between the trainer's exit and the pod's Succeeded: Running, not ready,
  // the container terminated with 0 (seen on the real nodes: real.plugin.dryrun lost node 1's pod and its logs).
  ps[1].ready = false;
  ps[1].exit_code = 0;
  ps[1].finished_at = format_rfc3339(kNow);
  auto early = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 1);
  EXPECT_EQ(early.status.phase, JobPhase::kRunning);
  EXPECT_TRUE(early.delete_pods.empty());
  EXPECT_EQ(early.requeue_after_s, 29);
  // Then all Succeeded: AllNodesSucceeded, every pod kept.
  for (auto& pod : ps) pod.phase = "Succeeded", pod.exit_code = 0, pod.ready = false;
  auto all = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 2);
  EXPECT_EQ(find_condition(all.status, ConditionType::kSucceeded)->reason, "AllNodesSucceeded");
  EXPECT_TRUE(all.delete_pods.empty());
  // A trainer that exited non-zero is no finishing node: no wait.
  ps = {};
  job = running_job(&ps);
  ps[0].phase = "Succeeded";
  ps[0].exit_code = 0;
  ps[0].finished_at = format_rfc3339(kNow);
  ps[1].ready = false;
  ps[1].exit_code = 1;
  EXPECT_EQ(decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 1).status.phase, JobPhase::kSucceeded);
}

TEST(Decide, NodeZeroFinishedOutweighsAnotherNodesFailureOrNotReadyNode) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  job.spec.backoff_limit = 0;
  ps[0].phase = "Succeeded";
  ps[0].exit_code = 0;
  ps[1] = pod(1, "Failed", 1);  // its launcher lost the finished host
  ps[1].node_name = "n1";
  std::vector<NodeFacts> nodes = up({"n0", "n1", "n2", "n3"});
  nodes[3] = NodeFacts{"n3", false, format_rfc3339(kNow - 600), false, ""};  // NotReady long past the grace
  auto p = decide(job, observed(ps, nodes), kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kSucceeded);
  EXPECT_EQ(find_condition(p.status, ConditionType::kSucceeded)->reason, "GroupFinished");
  EXPECT_EQ(p.status.restarts, 0);  // neither a pod failure (backoffLimit 0 would have failed the job) nor a loss
  EXPECT_FALSE(p.status.last_failure.has_value());
  // Node 1's failed pod stays for its logs (cleanPodPolicy Running); the running ones are stopped, none forced.
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-node-2", "pod-2", false}, {"resnet-node-3", "pod-3", false}}));
  // All nodes finished together: still AllNodesSucceeded.
  for (auto& pod : ps) pod.phase = "Succeeded", pod.exit_code = 0;
  auto all = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow);
  EXPECT_EQ(find_condition(all.status, ConditionType::kSucceeded)->reason, "AllNodesSucceeded");
  EXPECT_TRUE(all.delete_pods.empty());
}

TEST(Decide, AVanishedPodIsCountedInAStatusWrittenBeforeItsReplacementIsCreated) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  ps.erase(ps.begin() + 2);  // deleted at once (grace 0) between two passes: no pod is left to carry its uid
  const Observed o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  auto p = decide(job, o, kNow);
  EXPECT_EQ(p.create_ranks, (std::vector<int>{2}));
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartNodeLost), 1);
  // Once the replacement exists nothing shows the loss: the act layer writes this status before creating it.
  EXPECT_TRUE(p.status_before_creates);
  EXPECT_EQ(p.status.phase, JobPhase::kRestarting);
  const auto at = [&](const std::string& kind) {
    return std::find_if(p.writes.begin(), p.writes.end(), [&](const Write& w) { return w.kind == kind; }) -
           p.writes.begin();
  };
  EXPECT_LT(at("TrainingJob"), at("Pod"));  // the status write comes first in the plan's writes
  EXPECT_LT(at("Pod"), static_cast<std::ptrdiff_t>(p.writes.size()));
  // Written, then the pass stopped before the create (a crash, a refused create): recreated, not counted again.
  job.status = p.status;
  auto again = decide(job, o, kNow + 1);
  EXPECT_EQ(again.create_ranks, (std::vector<int>{2}));
  EXPECT_EQ(again.status.restarts_by_reason.at(kRestartNodeLost), 1);
  EXPECT_EQ(again.status.restarts, 1);
  EXPECT_FALSE(again.status_before_creates);
  // A pod that is merely missing at the start (never created) is no loss and needs no early write.
  auto first = decide(testing::example_job(), observed({}, up({"n0", "n1", "n2", "n3"})), kNow);
  EXPECT_EQ(first.create_ranks.size(), 4u);
  EXPECT_FALSE(first.status_before_creates);
}

TEST(Decide, AFailedPodIsCountedOnceThoughItsDeleteDidNotLand) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  job.spec.backoff_limit = 1;
  ps[1] = pod(1, "Failed", 137);
  ps[1].node_name = "n1";
  const Observed o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  auto first = decide(job, o, kNow);
  EXPECT_EQ(first.delete_pods, (std::vector<PodDeletion>{{"resnet-node-1", "pod-1", false}}));
  EXPECT_EQ(first.status.restarts_by_reason.at(kRestartPodFailure), 1);
  EXPECT_EQ(first.status.failed_pods, (std::vector<std::string>{"pod-1"}));
  // Deciding again from the same (unwritten) status counts the same failure, no more: a status write that failed
  // leaves the pod in place (the act layer deletes only after writing), and the next pass counts it then.
  EXPECT_EQ(decide(job, o, kNow + 1).status.restarts_by_reason.at(kRestartPodFailure), 1);
  // Written, then the operator crashed before the DELETE (or the DELETE failed): the pod is deleted again, not
  // counted again, and backoffLimit 1 is not exceeded by it.
  job.status = first.status;
  auto again = decide(job, o, kNow + 2);
  EXPECT_EQ(again.delete_pods, (std::vector<PodDeletion>{{"resnet-node-1", "pod-1", false}}));
  EXPECT_EQ(again.status.restarts_by_reason.at(kRestartPodFailure), 1);
  EXPECT_EQ(again.status.restarts, 1);
  EXPECT_EQ(again.status.phase, JobPhase::kRestarting);
  EXPECT_FALSE(has_event(again, "PodFailed"));
  EXPECT_EQ(again.status.launcher.absorb, first.status.launcher.absorb);
  // Gone: recreated and forgotten; its replacement failing too is a second failure, past backoffLimit 1.
  job.status = again.status;
  ps[1].deleting = true;
  EXPECT_TRUE(decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 3).create_ranks.empty());
  ps.erase(ps.begin() + 1);
  auto gone = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 4);
  EXPECT_EQ(gone.create_ranks, (std::vector<int>{1}));
  EXPECT_TRUE(gone.status.failed_pods.empty());
  EXPECT_EQ(gone.status.restarts, 1);
  job.status = gone.status;
  auto replacement = pod(1, "Failed", 137);
  replacement.uid = "pod-1b";
  replacement.node_name = "n1";
  ps.insert(ps.begin() + 1, replacement);
  auto second = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 5);
  EXPECT_EQ(second.status.phase, JobPhase::kFailed);
  EXPECT_EQ(find_condition(second.status, ConditionType::kFailed)->reason, "BackoffLimitExceeded");
}

TEST(Decide, NodesNotWatchedJudgeNoNodeLoss) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  Observed o = observed(ps, {});
  o.nodes_watched = false;
  auto p = decide(job, o, kNow + 5);
  EXPECT_TRUE(p.delete_pods.empty());
  EXPECT_EQ(p.status, job.status);
}

TEST(Decide, EvictedPodsAreNodeLossesThatSpendNoBackoffLimitEvenUnderNever) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  job.spec.restart_policy = RestartPolicy::kNever;
  job.spec.backoff_limit = 0;
  ps[1].phase = "Failed";
  ps[1].failure_reason = "Evicted";
  auto p = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 5);
  EXPECT_EQ(p.status.phase, JobPhase::kRestarting);
  ASSERT_EQ(p.delete_pods.size(), 1u);
  EXPECT_EQ(p.delete_pods[0], (PodDeletion{"resnet-node-1", "pod-1", false}));
  EXPECT_EQ(p.status.restarts_by_reason["node_lost"], 1);
  EXPECT_TRUE(failure_is_node_loss(ps[1]));
  EXPECT_FALSE(failure_is_node_loss(pod(1, "Failed", 1)));
}

TEST(Decide, APodDeletedBySomeoneElseWhileRunningCountsOnce) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  ps[3].deleting = true;
  auto p = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 5);
  EXPECT_EQ(p.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(p.status.lost_pods, (std::vector<std::string>{"pod-3"}));
  job.status = p.status;
  auto again = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 6);
  EXPECT_EQ(again.status.restarts, 1);
}

TEST(Decide, PodsAScaleDownIsStillRemovingAreNotLostWhenScalingUpAgain) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  job.status.phase = JobPhase::kScaling;
  ps[2].deleting = true;
  ps[3].deleting = true;
  auto p = decide(job, observed(ps, up({"n0", "n1", "n2", "n3"})), kNow + 5);
  EXPECT_EQ(p.status.restarts, 0);
  EXPECT_TRUE(p.create_ranks.empty());
}

LauncherReport report(const std::string& uid, int crash, int lost, int scale, const std::string& phase = "running") {
  return {uid, 5, crash + lost + scale, {{"worker_crash", crash}, {"node_lost", lost}, {"scale", scale}}, 4, 32,
          phase, "resnet", std::nullopt, 0, {}, std::nullopt, {}, {}};
}

TEST(Decide, LauncherRestartsAreFoldedInByReasonWithoutDoubleCounting) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  Observed o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0", 2, 1, 0);
  auto p = decide(job, o, kNow + 1);
  EXPECT_EQ(p.status.restarts_by_reason["worker_crash"], 2);
  EXPECT_EQ(p.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(p.status.restarts, 3);
  EXPECT_EQ(p.status.launcher.pod_uid, "pod-0");
  EXPECT_TRUE(has_event(p, "WorkerRestarted"));
  EXPECT_TRUE(has_event(p, "GroupRestarted"));
  // The same report again changes nothing; one more crash adds one.
  job.status = p.status;
  auto same = decide(job, o, kNow + 2);
  EXPECT_EQ(same.status, job.status);
  EXPECT_TRUE(same.events.empty());
  o.launcher = report("pod-0", 3, 1, 0);
  auto more = decide(job, o, kNow + 3);
  EXPECT_EQ(more.status.restarts_by_reason["worker_crash"], 3);
  EXPECT_EQ(more.status.restarts, 4);
  // Node 0 replaced: its launcher counts from zero again, on top of what was counted.
  job.status = more.status;
  ps[0].uid = "pod-0b";
  o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0b", 1, 0, 1);
  auto replaced = decide(job, o, kNow + 4);
  EXPECT_EQ(replaced.status.restarts_by_reason["worker_crash"], 4);
  EXPECT_EQ(replaced.status.restarts_by_reason["scale"], 1);
  EXPECT_EQ(replaced.status.restarts, 6);
  EXPECT_EQ(replaced.status.restarts, sum(replaced.status.restarts_by_reason));
  // Only the launchers' own causes count, and no absurd jump: pod_failure is the operator's (backoffLimit).
  job.status = replaced.status;
  o.launcher = report("pod-0b", 1, 0, 1);
  o.launcher->restarts_by_reason["pod_failure"] = 5;
  o.launcher->restarts_by_reason["worker_crash"] = 999999999;
  auto bogus = decide(job, o, kNow + 5);
  EXPECT_EQ(bogus.status.restarts_by_reason.count("pod_failure") ? bogus.status.restarts_by_reason["pod_failure"] : 0, 0);
  EXPECT_EQ(bogus.status.restarts, 6);
  EXPECT_EQ(bogus.status.restarts, sum(bogus.status.restarts_by_reason));
  // A report from a node-0 pod that is no longer there is ignored.
  job.status = replaced.status;
  o.launcher = report("pod-0", 9, 9, 9);
  EXPECT_EQ(decide(job, o, kNow + 5).status, job.status);
}

TEST(Decide, ALostPodIsOneRestartThoughTheLaunchersReformTheGroupForItToo) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  Observed o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0", 0, 0, 0);
  job.status = decide(job, o, kNow + 1).status;
  ASSERT_EQ(job.status.launcher.pod_uid, "pod-0");
  // Node n2 is deleted: the operator counts the loss of pod 2 ...
  o = observed(ps, up({"n0", "n1", "n3"}));
  o.launcher = report("pod-0", 0, 0, 0);
  auto lost = decide(job, o, kNow + 2);
  EXPECT_EQ(lost.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(lost.status.launcher.absorb, 1);
  // ... and node 0's launcher reports the group re-formed without it (node_lost): the same incident.
  job.status = lost.status;
  ps.erase(ps.begin() + 2);
  o = observed(ps, up({"n0", "n1", "n3"}));
  o.launcher = report("pod-0", 0, 1, 0);
  auto reported = decide(job, o, kNow + 3);
  EXPECT_EQ(reported.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(reported.status.restarts, 1);
  EXPECT_EQ(reported.status.launcher.absorb, 0);
  // A later loss the launchers alone saw (no pod event) counts again, as does a worker crash.
  job.status = reported.status;
  o.launcher = report("pod-0", 1, 2, 0);
  auto later = decide(job, o, kNow + 4);
  EXPECT_EQ(later.status.restarts_by_reason["node_lost"], 2);
  EXPECT_EQ(later.status.restarts_by_reason["worker_crash"], 1);
  EXPECT_EQ(later.status.restarts, 3);
  EXPECT_EQ(parse_status(status_to_json(later.status)), later.status);
}

TEST(Decide, ANewNodeZeroThatCarriesTheCountsOfTheOneBeforeLosesNoneOfItsRestartsAndRepeatsNone) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  Observed o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0", 2, 0, 0);
  job.status = decide(job, o, kNow + 1).status;
  ASSERT_EQ(job.status.restarts_by_reason["worker_crash"], 2);
  // Node 0's pod is replaced after one more crash the operator never polled (3 by then). Its successor, still
  // gathering, has taken 3 from the members that saw it: nothing is folded until its first round forms.
  ps[0].uid = "pod-0b";
  o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0b", 3, 0, 0, "gathering");
  o.launcher->round = -1;
  o.launcher->carried = std::map<std::string, int>{{"worker_crash", 3}, {"node_lost", 0}, {"scale", 0}};
  const auto waiting = decide(job, o, kNow + 2);
  EXPECT_EQ(waiting.status.restarts_by_reason.at("worker_crash"), 2);
  EXPECT_EQ(waiting.status.launcher.pod_uid, "pod-0");
  // Once formed: the crash the earlier node 0 made since the last poll is counted, the two before it are not.
  o.launcher->round = 0;
  o.launcher->phase = "running";
  auto formed = decide(job, o, kNow + 3);
  EXPECT_EQ(formed.status.restarts_by_reason["worker_crash"], 3);
  EXPECT_EQ(formed.status.restarts, 3);
  EXPECT_EQ(formed.status.launcher.pod_uid, "pod-0b");
  job.status = formed.status;
  EXPECT_EQ(decide(job, o, kNow + 4).status, job.status);  // the same report again: nothing
  // Its own restarts add one by one.
  o.launcher->restarts_by_reason["worker_crash"] = 4;
  EXPECT_EQ(decide(job, o, kNow + 5).status.restarts_by_reason["worker_crash"], 4);
  // Members that missed the earlier node 0's last restart carry less than was folded: nothing is counted twice,
  // and the new node 0's own restarts still count.
  ps[0].uid = "pod-0c";
  o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0c", 3, 0, 0);
  o.launcher->round = 0;
  o.launcher->carried = std::map<std::string, int>{{"worker_crash", 2}};
  auto fewer = decide(job, o, kNow + 6);
  EXPECT_EQ(fewer.status.restarts_by_reason["worker_crash"], 4);  // 3 folded, + 1 of its own (3 - 2)
}

TEST(Decide, ALostPodTheLaunchersReportedFirstIsStillOneRestart) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  Observed o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0", 0, 0, 0);
  job.status = decide(job, o, kNow + 1).status;
  // Node n2's processes die: node 0's launcher re-forms the group and is polled before the pod's loss is seen.
  o.launcher = report("pod-0", 0, 1, 0);
  auto reported = decide(job, o, kNow + 2);
  EXPECT_EQ(reported.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(reported.status.launcher.prepaid, 1);
  EXPECT_EQ(parse_status(status_to_json(reported.status)), reported.status);
  // Then the operator sees node n2 gone: the same incident, so no second restart, though the pod is recreated.
  job.status = reported.status;
  Observed gone = observed(ps, up({"n0", "n1", "n3"}));
  gone.launcher = o.launcher;
  auto lost = decide(job, gone, kNow + 3);
  EXPECT_EQ(lost.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(lost.status.restarts, 1);
  EXPECT_EQ(lost.status.launcher.prepaid, 0);
  EXPECT_EQ(lost.status.launcher.absorb, 0);
  EXPECT_TRUE(has_event(lost, "PodLost"));
  EXPECT_EQ(deleted_names(lost), std::vector<std::string>{"resnet-node-2"});
  // A loss seen long after the launchers' report is another incident.
  auto late = decide(job, gone, kNow + 2 + kPrepaidWindowS + 1);
  EXPECT_EQ(late.status.restarts_by_reason["node_lost"], 2);
  EXPECT_EQ(late.status.launcher.absorb, 1);
}

TEST(Decide, ALostNodeTheLaunchersNamedIsOneRestartHoweverLateItsPodIsSeenLost) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  Observed o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0", 0, 0, 0);
  job.status = decide(job, o, kNow + 1).status;
  // Node n2 loses its power: node 0's launcher finds its connection dead within seconds and names rank 2 lost.
  o.launcher = report("pod-0", 0, 1, 0);
  o.launcher->lost_nodes = {2};
  auto reported = decide(job, o, kNow + 15);
  EXPECT_EQ(reported.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(reported.status.launcher.prepaid_nodes, std::vector<int>{2});
  EXPECT_EQ(reported.status.launcher.prepaid, 0);
  EXPECT_EQ(parse_status(status_to_json(reported.status)), reported.status);
  // The next polls still name it: nothing changes.
  job.status = reported.status;
  EXPECT_EQ(decide(job, o, kNow + 25).status, job.status);
  // The operator sees the pod lost only after the node's NotReady grace, minutes later: the same loss.
  Observed gone = observed(ps, up({"n0", "n1", "n3"}));
  gone.launcher = o.launcher;
  auto lost = decide(job, gone, kNow + 15 + 4 * kPrepaidWindowS);
  EXPECT_EQ(lost.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(lost.status.restarts, 1);
  EXPECT_TRUE(lost.status.launcher.prepaid_nodes.empty());
  EXPECT_EQ(lost.status.launcher.absorb, 0);
  EXPECT_TRUE(has_event(lost, "PodLost"));
  EXPECT_EQ(deleted_names(lost), std::vector<std::string>{"resnet-node-2"});
}

TEST(Decide, ANamedLostNodeThatJoinedAgainIsForgottenSoItsPodsLaterLossCounts) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  Observed o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0", 0, 1, 0);
  o.launcher->lost_nodes = {2, 3};
  job.status = decide(job, o, kNow + 1).status;
  EXPECT_EQ(job.status.restarts_by_reason["node_lost"], 1);
  EXPECT_EQ(job.status.launcher.prepaid_nodes, std::vector<int>{2});  // one restart: one rank prepaid
  // Rank 2's launcher came back (its container restarted in place) and joined: the launchers no longer name it.
  o.launcher->lost_nodes = {};
  job.status = decide(job, o, kNow + 11).status;
  EXPECT_TRUE(job.status.launcher.prepaid_nodes.empty());
  // Then its node goes for good: a second loss, counted.
  Observed gone = observed(ps, up({"n0", "n1", "n3"}));
  gone.launcher = o.launcher;
  auto lost = decide(job, gone, kNow + 12);
  EXPECT_EQ(lost.status.restarts_by_reason["node_lost"], 2);
  EXPECT_EQ(lost.status.launcher.absorb, 1);
}

TEST(Decide, RegroupingLaunchersShowRestartingOrScalingAndTheLaunchersWorldSize) {
  std::vector<PodFacts> ps;
  auto job = running_job(&ps);
  Observed o = observed(ps, up({"n0", "n1", "n2", "n3"}));
  o.launcher = report("pod-0", 1, 0, 0, "gathering");
  auto crash = decide(job, o, kNow + 1);
  EXPECT_EQ(crash.status.phase, JobPhase::kRestarting);
  EXPECT_EQ(find_condition(crash.status, ConditionType::kRestarting)->reason, "WorkerCrash");
  o.launcher = report("pod-0", 0, 0, 1, "gathering");
  auto scale = decide(job, o, kNow + 1);
  EXPECT_EQ(scale.status.phase, JobPhase::kScaling);
  // Still forming, nothing new: the phase stays what it was.
  job.status = scale.status;
  EXPECT_EQ(decide(job, o, kNow + 2).status.phase, JobPhase::kScaling);
  o.launcher = report("pod-0", 1, 0, 0, "running");
  o.launcher->world_size = 12;
  job.status = crash.status;
  auto back = decide(job, o, kNow + 2);
  EXPECT_EQ(back.status.phase, JobPhase::kRunning);
  EXPECT_EQ(back.status.world_size, 12);
  EXPECT_FALSE(condition_true(back.status, ConditionType::kRestarting));
}

TEST(Decide, ElasticJobShrinksPastUnschedulablePodsAndShowsScaling) {
  auto job = job_with({{"replicas", 4}, {"minReplicas", 2}, {"maxReplicas", 4}}, "Pending");
  auto ps = pods(4, "Running");
  ps[3].phase = "Pending";
  ps[3].unschedulable_since = format_rfc3339(kNow - 31);
  Observed o = observed(ps, {});
  o.unschedulable_grace_s = 30;
  auto p = decide(job, o, kNow);
  EXPECT_EQ(deleted_names(p), (std::vector<std::string>{"resnet-node-3"}));
  EXPECT_TRUE(has_event(p, "ScaledDown"));
  EXPECT_EQ(p.status.elastic.target_replicas, 3);
  EXPECT_EQ(p.status.phase, JobPhase::kScaling);
  EXPECT_TRUE(p.create_ranks.empty());
  // With node 3 gone the job runs on 3 nodes.
  job.status = p.status;
  ps.pop_back();
  o = observed(ps, {});
  auto running = decide(job, o, kNow + 1);
  EXPECT_EQ(running.status.phase, JobPhase::kRunning);
  EXPECT_TRUE(running.create_ranks.empty());
  EXPECT_EQ(running.status.restarts, 0);
}

TEST(Decide, PermanentFailureNamesTheExitCodeAndEndsAtOnce) {
  auto ps = pods(4, "Running");
  ps[2] = pod(2, "Failed", 3);
  auto p = decide(job_with({{"restartPolicy", "ExitCode"}, {"backoffLimit", 5}}), ps, true, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  EXPECT_EQ(find_condition(p.status, ConditionType::kFailed)->message,
            "pod resnet-node-2 failed (exit code 3); restartPolicy ExitCode makes this failure permanent");
  EXPECT_FALSE(p.status.completion_time.empty());
}

TEST(SetCondition, KeepsTheTransitionTimeWhileTheStatusHolds) {
  Status st;
  set_condition(st, ConditionType::kRunning, true, "A", "a", 100);
  set_condition(st, ConditionType::kRunning, true, "B", "b", 200);
  EXPECT_EQ(st.conditions[0].last_transition_time, format_rfc3339(100));
  EXPECT_EQ(st.conditions[0].reason, "B");
  set_condition(st, ConditionType::kRunning, false, "C", "c", 300);
  EXPECT_EQ(st.conditions[0].last_transition_time, format_rfc3339(300));
  EXPECT_EQ(st.conditions.size(), 1u);
}

}  // namespace
}  // namespace kubedist::trainingjob
