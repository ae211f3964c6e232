// Which job the poller asks, and where; bad addresses fail before any network use.
#include "trainingjob/act/launcher_poller.h"

#include <gtest/gtest.h>

#include "test_jobs.h"

namespace kubedist::trainingjob {
namespace {

TrainingJob job(int min, int max, const std::string& phase = "Running") {
  auto j = testing::example_job_json();
  j["spec"]["minReplicas"] = min;
  j["spec"]["replicas"] = max;
  j["spec"]["maxReplicas"] = max;
  j["spec"]["masterPort"] = 23456;
  auto t = testing::job_from(j);
  t.status.phase = parse_job_phase(phase);
  return t;
}

PodFacts node0(const std::string& phase = "Running", const std::string& ip = "10.1.2.3") {
  PodFacts p;
  p.name = "resnet-node-0";
  p.uid = "pod-0";
  p.owner_uid = "uid-1";
  p.rank = 0;
  p.phase = phase;
  p.pod_ip = ip;
  return p;
}

TEST(LauncherTarget, NodeZeroRunningWithAnAddressIsAskedOnMasterPortPlusOne) {
  auto t = launcher_target(job(2, 4), {node0()});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->job_key, "team-a/resnet");
  EXPECT_EQ(t->pod_uid, "pod-0");
  EXPECT_EQ(t->ip, "10.1.2.3");
  EXPECT_EQ(t->port, 23457);
}

TEST(LauncherTarget, NeedsTheSecretOnlyWhenNodeZeroMountsIt) {
  EXPECT_FALSE(launcher_target(job(2, 4), {node0()})->needs_secret);  // a pod from before the Secret
  auto signing = node0();
  signing.rdzv_secret = true;
  EXPECT_TRUE(launcher_target(job(2, 4), {signing})->needs_secret);
}

TEST(LauncherTarget, NothingToAskWhenThereIsNoListenerOrNoRunningNodeZero) {
  EXPECT_FALSE(launcher_target(job(1, 1), {node0()}).has_value());  // single node: no rendezvous listener
  EXPECT_FALSE(launcher_target(job(2, 4), {node0("Pending", "")}).has_value());
  EXPECT_FALSE(launcher_target(job(2, 4), {node0("Running", "")}).has_value());
  EXPECT_FALSE(launcher_target(job(2, 4, "Succeeded"), {node0()}).has_value());
  EXPECT_FALSE(launcher_target(job(2, 4, "Suspended"), {node0()}).has_value());
  auto foreign = node0();
  foreign.owner_uid = "someone-else";
  EXPECT_FALSE(launcher_target(job(2, 4), {foreign}).has_value());
  auto leaving = node0();
  leaving.deleting = true;
  EXPECT_FALSE(launcher_target(job(2, 4), {leaving}).has_value());
}

TEST(LauncherReport, KeepsEveryFieldOfTheStatusLineAndNamesThePod) {
  const auto status = contract::parse_status_line(
      "STATUS round=3 restarts=4 node_lost=1 scale=2 worker_crash=1 nodes=2 world_size=8 phase=running run=resnet "
      "lost=[1]");
  ASSERT_TRUE(status.report) << status.error;
  LauncherReport report = launcher_report(*status.report, "pod-0");
  EXPECT_NEAR(report.polled_at, now_unix(), 5);
  report.polled_at = 0;
  EXPECT_EQ(report, (LauncherReport{"pod-0", 3, 4, {{"node_lost", 1}, {"scale", 2}, {"worker_crash", 1}}, 2, 8,
                                    "running", "resnet", std::nullopt, 0, {1}, std::nullopt}));
  const auto with_progress = contract::parse_status_line(
      "STATUS round=3 restarts=4 hang=1 nodes=2 world_size=8 phase=running run=resnet step=7 sps=1.5 age_ms=0 "
      "up_ms=9 busy_ms=8 lost_ms=1 m.loss=0.5 hang_age_ms=3 hang_msg=stuck");
  ASSERT_TRUE(with_progress.report) << with_progress.error;
  const LauncherReport r = launcher_report(*with_progress.report, "pod-0");
  ASSERT_TRUE(r.progress);
  EXPECT_EQ(r.progress->step, 7);
  EXPECT_EQ(r.progress->hang_message, "stuck");
  EXPECT_EQ(r.restarts_by_reason.at("hang"), 1);
}

TEST(QueryLauncher, ABadAddressIsRefusedWithoutConnecting) {
  auto r = query_launcher("not-an-ip", 1234, std::chrono::milliseconds(100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "rendezvous STATUS from not-an-ip:1234: not an IPv4 address and port");
  EXPECT_FALSE(query_launcher("10.0.0.1", 70000, std::chrono::milliseconds(100)).ok());
}

}  // namespace
}  // namespace kubedist::trainingjob
