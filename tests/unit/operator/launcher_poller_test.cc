// Which job the poller asks, and where; bad addresses fail before any network use; one tenant's node 0s that never
// answer cost another tenant's job no wait (real sockets on 127.0.0.1).
#include "trainingjob/act/launcher_poller.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include "contract/status_line.h"
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
                                    "running", "resnet", std::nullopt, 0, {1}, std::nullopt, {}, {}}));
  // The spares waiting and the places they took (spec.spares) reach the report as node 0 wrote them.
  const auto spares = contract::parse_status_line(
      "STATUS round=3 restarts=1 node_lost=1 nodes=2 world_size=8 phase=running run=resnet lost=[1] "
      "spares=[10001] stand_ins=[1:10000]");
  ASSERT_TRUE(spares.report) << spares.error;
  const LauncherReport with_spares = launcher_report(*spares.report, "pod-0");
  EXPECT_EQ(with_spares.spares, std::vector<int>{10001});
  EXPECT_EQ(with_spares.stand_ins, (std::map<int, int>{{1, 10000}}));
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

// A job that ended before a poll: node 0's pod that Succeeded left its launcher's last STATUS line, read as the
// report of that pod as of the second it finished; nothing from another pod, a failed one, or another message.
TEST(FinalLauncherReport, IsNodeZerosLastStatusLeftInItsTerminationMessage) {
  const TrainingJob job = testing::example_job();
  PodFacts node0;
  node0.name = "resnet-node-0";
  node0.uid = "pod-0";
  node0.owner_uid = job.uid;
  node0.rank = 0;
  node0.phase = "Succeeded";
  node0.finished_at = "2026-12-07T04:00:00Z";
  node0.termination_message = "STATUS round=0 restarts=0 nodes=2 world_size=4 phase=over run=resnet step=80 "
                              "total=80 sps=12.5 age_ms=100 up_ms=9000 busy_ms=8000 lost_ms=0 m.loss=0.27";
  const auto report = final_launcher_report(job, {node0});
  ASSERT_TRUE(report && report->progress);
  EXPECT_EQ(report->pod_uid, "pod-0");
  EXPECT_EQ(report->progress->step, 80);
  EXPECT_EQ(report->progress->total_steps, 80);
  EXPECT_EQ(report->polled_at, *parse_rfc3339("2026-12-07T04:00:00Z"));
  for (const auto& change : std::vector<std::function<void(PodFacts&)>>{
           [](PodFacts& p) { p.phase = "Failed"; },
           [](PodFacts& p) { p.rank = 1; },
           [](PodFacts& p) { p.owner_uid = "another-job"; },
           [](PodFacts& p) { p.termination_message = "rank 1 (local rank 1) on h exited with code 3"; },
           [](PodFacts& p) { p.termination_message = "STATUS round=x"; }}) {
    PodFacts other = node0;
    change(other);
    EXPECT_FALSE(final_launcher_report(job, {other})) << other.termination_message;
  }
}

TEST(QueryLauncher, ABadAddressIsRefusedWithoutConnecting) {
  auto r = query_launcher("not-an-ip", 1234, std::chrono::milliseconds(100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "rendezvous at not-an-ip:1234: not an IPv4 address and port");
  EXPECT_FALSE(query_launcher("10.0.0.1", 70000, std::chrono::milliseconds(100)).ok());
}

// A node 0 on 127.0.0.1: `answers` replies to STATUS with a round-1 line for run `run`; otherwise it accepts
// connections and never says a word (a node 0 whose launcher is stopped). Counts the connections it accepted.
class FakeNodeZero {
 public:
  FakeNodeZero(bool answers, std::string run) : answers_(answers), run_(std::move(run)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    listen(fd_, 1024);
    socklen_t len = sizeof sa;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeNodeZero() {
    stop_ = true;
    thread_.join();
    for (int c : held_) close(c);
    close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      ++accepted_;
      if (!answers_) {
        held_.push_back(c);  // open and silent until the end
        continue;
      }
      char buf[64];
      (void)!read(c, buf, sizeof buf);  // "STATUS\n"
      contract::StatusReport r;
      r.round = 1;
      r.nodes = 2;
      r.world_size = 2;
      r.phase = "running";
      r.run_id = run_;
      const std::string line = contract::encode_status_line(r) + "\n";
      (void)!write(c, line.data(), line.size());
      close(c);
    }
  }
  const bool answers_;
  const std::string run_;
  int fd_ = -1, port_ = 0;
  std::atomic<int> accepted_{0};
  std::atomic<bool> stop_{false};
  std::vector<int> held_;
  std::thread thread_;
};

LauncherTarget target(const std::string& key, const std::string& pod = "", int port = 0) {
  LauncherTarget t;
  t.job_key = key;
  t.pod_uid = pod;
  t.ip = "127.0.0.1";
  t.port = port;
  return t;
}

TEST(FairPollOrder, TakesOneJobOfEachNamespaceInTurnAndRotatesTheNamespaces) {
  std::vector<LauncherTarget> targets;
  for (const char* key : {"noisy/a", "noisy/b", "noisy/c", "quiet/q", "other/o"}) targets.push_back(target(key));
  EXPECT_EQ(fair_poll_order(targets, 0), (std::vector<size_t>{0, 4, 3, 1, 2}));  // noisy, other, quiet, noisy...
  EXPECT_EQ(fair_poll_order(targets, 1), (std::vector<size_t>{4, 3, 0, 1, 2}));
  EXPECT_TRUE(fair_poll_order({}, 3).empty());
}

TEST(LauncherPoller, NodeZerosThatNeverAnswerCostAnotherTenantsJobNoWaitAndAreAskedLessOften) {
  FakeNodeZero silent(false, ""), quiet(true, "q");
  std::vector<LauncherTarget> targets;
  for (int i = 0; i < 200; ++i) {
    targets.push_back(target("noisy/j" + std::to_string(i), "pod-" + std::to_string(i), silent.port()));
  }
  targets.push_back(target("quiet/q", "pod-q", quiet.port()));
  std::mutex mu;
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> changes;
  LauncherPoller poller(std::chrono::milliseconds(1000), [&] { return targets; }, [&](const std::string& key) {
    std::lock_guard<std::mutex> lock(mu);
    changes.emplace_back(key, std::chrono::steady_clock::now());
  });
  const auto start = std::chrono::steady_clock::now();
  poller.poll_once();
  const auto pass = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].first, "quiet/q");
  // Answered before any silent node 0's deadline (1 s) came: neither its namespace's place nor a batch held it.
  EXPECT_LT(changes[0].second - start, std::chrono::milliseconds(1000));
  EXPECT_EQ(poller.latest("quiet/q")->round, 1);
  // All 200 asked, 16 at a time, each on its own 1 s: 13 rounds of deadlines, no more.
  EXPECT_EQ(silent.accepted(), 200);
  EXPECT_LT(pass, std::chrono::seconds(14 + 5));
  // Backing off: the next pass asks the quiet job, and of the silent ones only job 7, whose node 0 is a new pod.
  // The others are asked again in 2 passes, then 4, 8... (at most every 32).
  targets[7].pod_uid = "pod-7-new";
  const auto again = std::chrono::steady_clock::now();
  poller.poll_once();
  EXPECT_LT(std::chrono::steady_clock::now() - again, std::chrono::milliseconds(1000 + 1500));
  EXPECT_EQ(silent.accepted(), 201);
  EXPECT_EQ(quiet.accepted(), 2);
}

}  // namespace
}  // namespace kubedist::trainingjob
