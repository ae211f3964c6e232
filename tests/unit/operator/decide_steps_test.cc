// The steps of decide() one by one (decide_*.h), where plan_test.cc's whole decisions do not already pin them.
#include <gtest/gtest.h>

#include "test_jobs.h"
#include "trainingjob/decide/failures.h"
#include "trainingjob/decide/launcher.h"
#include "trainingjob/decide/lost_pods.h"
#include "trainingjob/decide/phase.h"
#include "trainingjob/decide/ranks.h"
#include "trainingjob/decide/decide_state.h"
#include "trainingjob/decide/stop.h"
#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {
namespace {

constexpr UnixSeconds kNow = 1'800'000'000;

PodFacts pod(int rank, const std::string& phase) {
  PodFacts p = testing::example_pod(rank, phase);
  p.node_name = "n" + std::to_string(rank);
  return p;
}

Observed with_pods(std::vector<PodFacts> pods) {
  Observed o;
  o.pods = std::move(pods);
  o.service_exists = true;
  return o;
}

TEST(DecideState, KeepsOnlyTheJobsOwnPodsAndForgetsLostPodsThatAreGone) {
  auto job = testing::example_job();
  job.status.lost_pods = {"pod-1", "gone"};
  auto foreign = pod(2, "Running");
  foreign.owner_uid = "someone-else";
  auto leaving = pod(3, "Running");
  leaving.deleting = true;
  const Observed o = with_pods({pod(0, "Running"), pod(1, "Running"), foreign, leaving});
  DecideState s(job, o, kNow);
  ASSERT_EQ(s.live.size(), 2u);
  ASSERT_EQ(s.terminating.size(), 1u);
  EXPECT_EQ(s.terminating[0].name, "resnet-node-3");
  EXPECT_EQ(s.plan.status.lost_pods, (std::vector<std::string>{"pod-1"}));
}

TEST(DecideState, TheEarliestTimerWinsAndNoneIsShorterThanASecond) {
  auto job = testing::example_job();
  const Observed o;
  DecideState s(job, o, kNow);
  s.requeue(30);
  s.requeue(50);
  EXPECT_EQ(s.plan.requeue_after_s, 30);
  s.requeue(0);
  EXPECT_EQ(s.plan.requeue_after_s, 1);
}

TEST(DecideLostPods, ANotReadyNodeWithinItsGraceAsksToComeBackWhenTheGraceEnds) {
  auto job = testing::example_job();
  Observed o = with_pods({pod(0, "Running")});
  o.nodes_watched = true;
  o.node_lost_grace_s = 60;
  o.nodes = {NodeFacts{"n0", false, format_rfc3339(kNow - 20), false, ""}};
  DecideState s(job, o, kNow);
  EXPECT_FALSE(node_lost(s, s.live[0]).lost());
  EXPECT_EQ(s.plan.requeue_after_s, 40);
  DecideState later(job, o, kNow + 61);
  const NodeLoss late = node_lost(later, later.live[0]);
  EXPECT_EQ(late.why, "node n0 has been NotReady for 81s");
  EXPECT_FALSE(late.force);  // NotReady is not gone: the pod may still run there
  o.nodes_watched = false;  // without the node watch, no node is judged
  DecideState blind(job, o, kNow + 61);
  EXPECT_FALSE(node_lost(blind, blind.live[0]).lost());
}

TEST(DecideLostPods, ALostPodPastTheTargetIsDeletedButNotCounted) {
  auto job = testing::example_job();
  auto evicted = pod(5, "Failed");
  evicted.failure_reason = "Evicted";
  const Observed o = with_pods({evicted});
  DecideState s(job, o, kNow);
  const auto lost = decide_lost_pods(s, 4);
  EXPECT_EQ(lost, (std::set<std::string>{"pod-5"}));
  ASSERT_EQ(s.plan.delete_pods.size(), 1u);
  EXPECT_FALSE(s.plan.delete_pods[0].force);  // its node is there to confirm
  EXPECT_EQ(s.plan.status.restarts, 0);
  EXPECT_TRUE(s.lost.empty());
}

TEST(DecideRanks, ASecondPodOfTheSameRankIsSurplusAndAnElasticChangeSpeaksForItself) {
  auto job = testing::example_job();
  auto twin = pod(1, "Running");
  twin.uid = "twin";
  const Observed o = with_pods({pod(0, "Running"), pod(1, "Running"), twin});
  DecideState s(job, o, kNow);
  const Ranks r = decide_ranks(s, 4, {}, /*elastic_changed=*/false);
  EXPECT_EQ(r.by_rank.size(), 2u);
  EXPECT_EQ(r.surplus, (std::vector<std::string>{"resnet-node-1"}));
  ASSERT_EQ(s.plan.delete_pods.size(), 1u);
  EXPECT_EQ(s.plan.delete_pods[0].uid, "twin");
  ASSERT_EQ(s.plan.events.size(), 1u);
  EXPECT_EQ(s.plan.events[0].reason, "ScaledDown");
  DecideState elastic(job, o, kNow);
  decide_ranks(elastic, 4, {}, /*elastic_changed=*/true);
  EXPECT_TRUE(elastic.plan.events.empty());
}

TEST(DecideFailures, TheLastPodFailureWithinTheBackoffLimitIsStillRetried) {
  auto job = testing::example_job();
  job.spec.backoff_limit = 2;
  job.status.restarts_by_reason[kRestartPodFailure] = 1;
  job.status.restarts = 1;
  const Observed o = with_pods({pod(0, "Running"), pod(1, "Failed")});
  DecideState s(job, o, kNow);
  const std::map<int, const PodFacts*> by_rank{{0, &s.live[0]}, {1, &s.live[1]}};
  const FailureVerdict v = decide_failures(s, by_rank);
  EXPECT_FALSE(v.ending.has_value());
  ASSERT_EQ(v.retryable.size(), 1u);
  EXPECT_EQ(s.plan.status.restarts_by_reason[kRestartPodFailure], 2);
  EXPECT_EQ(s.plan.status.launcher.absorb, 1);  // the launchers' re-form for it is the same incident
  EXPECT_EQ(v.restart_message, "pod resnet-node-1 failed; recreating it (pod failure 2, backoffLimit 2)");
  job.status.restarts_by_reason[kRestartPodFailure] = 2;
  DecideState spent(job, o, kNow);
  const std::map<int, const PodFacts*> again{{0, &spent.live[0]}, {1, &spent.live[1]}};
  const FailureVerdict end = decide_failures(spent, again);
  ASSERT_TRUE(end.ending.has_value());
  EXPECT_EQ(end.ending->reason, "BackoffLimitExceeded");
  EXPECT_TRUE(spent.plan.delete_pods.empty());  // the pod stays for cleanPodPolicy to judge
}

TEST(DecideLauncher, AReportFromAnotherPodThanNodeZeroIsNotThisGroups) {
  auto job = testing::example_job();
  Observed o = with_pods({pod(0, "Running")});
  o.launcher = LauncherReport{"old-node-0", 3, 2, {{kRestartWorkerCrash, 2}}, 4, 32, "running", "resnet",
                              std::nullopt, 0, {}, std::nullopt, {}, {}};
  DecideState s(job, o, kNow);
  fold_launcher(s, &s.live[0]);
  EXPECT_EQ(s.plan.status.restarts, 0);
  EXPECT_TRUE(s.plan.status.launcher.pod_uid.empty());
}

TEST(DecideLauncher, ACountThatWentDownIsALauncherRestartedInItsPodAndAnAbsurdJumpIsIgnored) {
  auto job = testing::example_job();
  job.status.launcher = LauncherSeen{"pod-0", {{kRestartWorkerCrash, 5}}, 0, {}, 0, "", 0, 0};
  Observed o = with_pods({pod(0, "Running")});
  o.launcher = LauncherReport{"pod-0", 1, 2, {{kRestartWorkerCrash, 2}}, 4, 32, "running", "resnet", std::nullopt,
                              0, {}, std::nullopt, {}, {}};
  DecideState s(job, o, kNow);
  fold_launcher(s, &s.live[0]);
  EXPECT_EQ(s.plan.status.restarts_by_reason[kRestartWorkerCrash], 2);
  EXPECT_EQ(s.plan.status.launcher.restarts_by_reason[kRestartWorkerCrash], 2);
  o.launcher->restarts_by_reason[kRestartWorkerCrash] = 2 + 1'000'000;
  job.status = s.plan.status;
  DecideState absurd(job, o, kNow);
  fold_launcher(absurd, &absurd.live[0]);
  EXPECT_EQ(absurd.plan.status.restarts_by_reason[kRestartWorkerCrash], 2);
}

TEST(DecidePhase, SurplusPodsBeingRemovedAreScalingAndAllRunningIsRunning) {
  auto job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  const Observed o = with_pods({pod(0, "Running"), pod(1, "Running")});
  DecideState s(job, o, kNow);
  Ranks r{{{0, &s.live[0]}, {1, &s.live[1]}}, {"resnet-node-2"}, {}};
  decide_phase(s, 2, r, FailureVerdict{}, false);
  EXPECT_EQ(s.plan.status.phase, JobPhase::kScaling);
  DecideState done(job, o, kNow);
  decide_phase(done, 2, Ranks{{{0, &done.live[0]}, {1, &done.live[1]}}, {}, {}}, FailureVerdict{}, false);
  EXPECT_EQ(done.plan.status.phase, JobPhase::kRunning);
  EXPECT_EQ(find_condition(done.plan.status, ConditionType::kRunning)->message, "2/2 nodes running");
}

TEST(DecidePhase, ALaunchersWorldSizeWinsOnlyWhileItRuns) {
  auto job = testing::example_job();
  Observed o = with_pods({pod(0, "Running")});
  o.launcher = LauncherReport{"pod-0", 1, 0, {}, 1, 5, "running", "resnet", std::nullopt, 0, {}, std::nullopt, {}, {}};
  DecideState s(job, o, kNow);
  decide_phase(s, 1, Ranks{{{0, &s.live[0]}}, {}, {}}, FailureVerdict{}, false);
  EXPECT_EQ(s.plan.status.world_size, 5);
  o.launcher->phase = "gathering";
  DecideState gathering(job, o, kNow);
  decide_phase(gathering, 1, Ranks{{{0, &gathering.live[0]}}, {}, {}}, FailureVerdict{}, false);
  EXPECT_EQ(gathering.plan.status.world_size, 8);  // 8 GPUs per node, as the pods say
}

TEST(DecideStop, EndingTurnsRunningAndRestartingFalseAndCreatesNothing) {
  auto job = testing::example_job();
  set_condition(job.status, ConditionType::kRunning, true, "AllNodesRunning", "", kNow - 10);
  const Observed o = with_pods({pod(0, "Running")});
  DecideState s(job, o, kNow);
  s.plan.create_ranks = {1};
  s.plan.requeue_after_s = 5;
  const Plan p = finish(s, {false, "DeadlineExceeded", "too long"});
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  EXPECT_FALSE(condition_true(p.status, ConditionType::kRunning));
  EXPECT_EQ(find_condition(p.status, ConditionType::kRestarting), nullptr);  // never set, so not added
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_FALSE(p.requeue_after_s.has_value());
  EXPECT_EQ(p.delete_pods.size(), 1u);  // cleanPodPolicy Running
}

}  // namespace
}  // namespace kubedist::trainingjob
