// The rendezvous rules, driven through the pure coordinator with a fake clock.
#include "rendezvous/coordinator.h"

#include <gtest/gtest.h>

#include "coordinator_harness.h"

namespace kubedist::launcher {
namespace {

using Clock = RendezvousCoordinator::Clock;
using Kind = RendezvousMessage::Kind;
using testing::by_member;
using testing::Harness;
using namespace std::chrono_literals;

TEST(RendezvousCoordinator, FormsAtOnceWhenMaxNodesJoinWithDenseRanksNodeZeroFirst) {
  Harness h(2, 2);
  h.join(7, 1, 3);
  EXPECT_TRUE(h.out().empty());
  h.join(9, 0, 2);
  auto m = by_member(h.out());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[9].kind, Kind::Round);
  EXPECT_EQ(m[9].assignment.group_rank, 0);
  EXPECT_EQ(m[9].assignment.rank_offset, 0);
  EXPECT_EQ(m[7].assignment.group_rank, 1);
  EXPECT_EQ(m[7].assignment.rank_offset, 2);
  EXPECT_EQ(m[7].assignment.world_size, 5);
  EXPECT_EQ(m[9].assignment.world_size, 5);
  EXPECT_EQ(m[7].assignment.group_world_size, 2);
  EXPECT_EQ(m[7].assignment.restart_count, 0);
}

TEST(RendezvousCoordinator, ElasticWaitsTheLastCallForLateJoiners) {
  Harness h(1, 3);
  h.join(1, 0);
  EXPECT_TRUE(h.out().empty());
  h.advance(500ms);
  h.join(2, 4);  // node ranks need not be dense
  h.advance(400ms);
  EXPECT_TRUE(h.out().empty());
  h.advance(200ms);
  auto m = by_member(h.out());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[2].assignment.group_rank, 1);
  EXPECT_EQ(m[2].assignment.world_size, 4);
}

TEST(RendezvousCoordinator, WorkerFailureStopsEveryNodeAndTheNextRoundCountsARestart) {
  Harness h(2, 2);
  h.run_two_nodes();
  h.c.failed(2, 0, 3, "rank 3 exited with code 3", h.t);
  auto stops = by_member(h.out());
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[1].kind, Kind::Stop);
  EXPECT_EQ(stops[2].kind, Kind::Stop);
  h.c.failed(1, 0, 1, "stale report from the same round", h.t);
  EXPECT_TRUE(h.out().empty());
  h.join(2, 1);
  EXPECT_TRUE(h.out().empty());
  h.join(1, 0);
  auto rounds = by_member(h.out());
  EXPECT_EQ(rounds[1].assignment.round, 1);
  EXPECT_EQ(rounds[1].assignment.restart_count, 1);
  EXPECT_EQ(h.c.restart_count(), 1);
}

TEST(RendezvousCoordinator, GivesUpWithTheFailingWorkersExitCodeAfterMaxRestarts) {
  Harness h(1, 1, 0);
  h.join(1, 0);
  h.out();
  h.c.failed(1, 0, 42, "rank 0 exited with code 42", h.t);
  auto m = by_member(h.out());
  EXPECT_EQ(m[1].kind, Kind::Fail);
  EXPECT_EQ(m[1].exit_code, 42);
  EXPECT_NE(m[1].reason.find("--max-restarts=0"), std::string::npos);
  EXPECT_TRUE(h.c.over());
}

TEST(RendezvousCoordinator, ExitCodePolicyEndsAtOnceOnAPermanentCodeAndRestartsASignal) {
  RendezvousCoordinator c({"job", 1, 1, 5, 1000ms, 5000ms, true}, Clock::time_point{});
  c.join(1, {"job", 0, 2}, Clock::time_point{});
  c.take_outbox();
  c.failed(1, 0, 137, "rank 1 was killed by SIGKILL", Clock::time_point{});  // retryable: a new round
  auto m = by_member(c.take_outbox());
  EXPECT_EQ(m[1].kind, Kind::Stop);
  EXPECT_FALSE(c.over());
  c.join(1, {"job", 0, 2}, Clock::time_point{});
  c.take_outbox();
  c.failed(1, 1, 3, "rank 0 exited with code 3", Clock::time_point{});
  m = by_member(c.take_outbox());
  EXPECT_EQ(m[1].kind, Kind::Fail);
  EXPECT_EQ(m[1].exit_code, 3);
  EXPECT_NE(m[1].reason.find("exit code 3 is permanent under restartPolicy ExitCode"), std::string::npos);
  EXPECT_EQ(c.restart_count(), 1);  // 4 restarts were left
  EXPECT_TRUE(c.over());
}

TEST(RendezvousCoordinator, ALostNodeReformsTheRestWhenElastic) {
  Harness h(1, 2);
  h.run_two_nodes();
  h.c.leave(2, h.t);
  EXPECT_EQ(by_member(h.out())[1].kind, Kind::Stop);
  h.join(1, 0);
  h.advance(1001ms);
  auto m = by_member(h.out());
  EXPECT_EQ(m[1].kind, Kind::Round);
  EXPECT_EQ(m[1].assignment.world_size, 2);
  EXPECT_EQ(m[1].assignment.group_world_size, 1);
}

TEST(RendezvousCoordinator, ReportCountsRestartsByCause) {
  Harness h(1, 3, 10);
  std::map<std::string, int> zero{{"hang", 0}, {"node_lost", 0}, {"scale", 0}, {"worker_crash", 0}};
  const std::map<std::string, int> none;
  EXPECT_EQ(h.c.report(), (RendezvousReport{-1, 0, zero, 0, 0, "gathering", "job", std::nullopt, {}, none, {}, {}}));
  h.run_two_nodes();
  h.advance(1001ms);
  h.out();
  EXPECT_EQ(h.c.report(), (RendezvousReport{0, 0, zero, 2, 4, "running", "job", std::nullopt, {}, none, {}, {}}));
  // A worker crash on node 1: worker_crash.
  h.c.failed(2, 0, 1, "rank 3 exited 1", h.t);
  h.join(1, 0);
  h.join(2, 1);
  h.advance(1001ms);
  h.out();
  // Node 1 vanishes (no LEAVE): node_lost.
  h.c.leave(2, h.t);
  h.join(1, 0);
  h.advance(1001ms);
  h.out();
  EXPECT_EQ(h.c.report().nodes, 1);
  // Node 1 comes back while the group runs: scale.
  h.join(3, 1);
  h.join(1, 0);
  h.advance(1001ms);
  h.out();
  // Node 1 leaves on purpose (LEAVE): scale.
  h.c.leave(3, h.t, true);
  h.join(1, 0);
  h.advance(1001ms);
  h.out();
  const RendezvousReport r = h.c.report();
  EXPECT_EQ(r.restarts_by_cause,
            (std::map<std::string, int>{{"hang", 0}, {"node_lost", 1}, {"scale", 2}, {"worker_crash", 1}}));
  EXPECT_EQ(r.restarts, 4);
  EXPECT_EQ(r.restarts, h.c.restart_count());
  EXPECT_EQ(r.round, 4);
  EXPECT_EQ(r.nodes, 1);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.phase, "running");
}

TEST(RendezvousCoordinator, ReportNamesTheNodesLostUntilTheyJoinAgain) {
  Harness h(1, 3, 10);
  h.join(1, 0);
  h.join(2, 1);
  h.join(3, 2);
  h.out();
  EXPECT_TRUE(h.c.report().lost_nodes.empty());
  // Nodes 2 and 1 vanish (no LEAVE), one after the other: both named, ascending.
  h.c.leave(3, h.t);
  h.join(1, 0);
  h.join(2, 1);
  h.advance(1001ms);
  h.out();
  EXPECT_EQ(h.c.report().lost_nodes, std::vector<int>{2});
  h.c.leave(2, h.t);
  h.join(1, 0);
  h.advance(1001ms);
  h.out();
  EXPECT_EQ(h.c.report().lost_nodes, (std::vector<int>{1, 2}));
  // Node 2 joins again (its launcher restarted in its pod): no longer lost.
  h.join(4, 2);
  EXPECT_EQ(h.c.report().lost_nodes, std::vector<int>{1});
  h.join(1, 0);
  h.advance(1001ms);
  h.out();
  // A node that says LEAVE (scaled down) is not lost.
  h.c.leave(4, h.t, true);
  EXPECT_EQ(h.c.report().lost_nodes, std::vector<int>{1});
  // Nor is one that leaves before any round ran.
  Harness g(2, 2);
  g.join(1, 0);
  g.c.leave(1, g.t);
  EXPECT_TRUE(g.c.report().lost_nodes.empty());
}

TEST(RendezvousCoordinator, GoesOnFromTheCountsMembersCarryUntilTheFirstRoundForms) {
  Harness h(2, 2, 10);
  EXPECT_EQ(h.c.report().carried, (std::map<std::string, int>{}));  // says it takes them, before any came
  // Node 0 was replaced: its members carry what they last saw of the one before; the highest of each cause.
  h.c.carry({{"worker_crash", 2}, {"node_lost", 1}});
  h.c.carry({{"worker_crash", 3}});
  RendezvousReport r = h.c.report();
  EXPECT_EQ(r.restarts_by_cause.at("worker_crash"), 3);
  EXPECT_EQ(r.restarts_by_cause.at("node_lost"), 1);
  EXPECT_EQ(r.restarts, 4);
  EXPECT_EQ(r.carried, (std::map<std::string, int>{{"node_lost", 1}, {"worker_crash", 3}}));
  h.run_two_nodes();
  h.advance(1001ms);
  h.out();
  // Once a round formed, a member that merely reconnected carries this rendezvous' own counts: ignored.
  h.c.carry({{"worker_crash", 9}});
  EXPECT_EQ(h.c.report().restarts_by_cause.at("worker_crash"), 3);
  // Its own restarts add to them; the workers' restart count (TORCHELASTIC_RESTART_COUNT) is its own.
  h.c.failed(2, 0, 1, "rank 3 exited 1", h.t);
  h.join(1, 0);
  h.join(2, 1);
  h.advance(1001ms);
  auto m = by_member(h.out());
  EXPECT_EQ(m[1].assignment.restart_count, 1);
  r = h.c.report();
  EXPECT_EQ(r.restarts_by_cause.at("worker_crash"), 4);
  EXPECT_EQ(r.restarts, 5);
  // Whatever members carry, each count stays one the STATUS line can hold.
  Harness big(1, 1);
  big.c.carry({{"worker_crash", 999999999}, {"node_lost", 999999999}});
  EXPECT_EQ(big.c.report().restarts, 999999999);
  EXPECT_TRUE(contract::parse_status_line(contract::encode_status_line(big.c.report())).report);
}

TEST(RendezvousCoordinator, AHangRestartsTheGroupChargedAndCountedAsHang) {
  Harness h(2, 2, 1);
  h.run_two_nodes();
  EXPECT_EQ(h.c.round_members(), (std::vector<MemberId>{1, 2}));
  EXPECT_EQ(h.c.node_rank_of(2), 1);
  EXPECT_EQ(h.c.node_rank_of(99), -1);
  h.c.hang("no step for 30 s: rank 3 stuck", h.t);
  auto m = by_member(h.out());
  EXPECT_EQ(m[1].kind, Kind::Stop);
  EXPECT_EQ(m[2].kind, Kind::Stop);
  EXPECT_EQ(h.c.report().restarts_by_cause.at("hang"), 1);
  EXPECT_EQ(h.c.report().restarts, 1);
  h.join(1, 0);
  h.join(2, 1);
  ASSERT_EQ(by_member(h.out())[1].kind, Kind::Round);
  // The second hang finds --max-restarts spent: the job ends with the hang's code and message.
  h.c.hang("no step for 30 s: rank 0 stuck", h.t);
  m = by_member(h.out());
  EXPECT_EQ(m[1].kind, Kind::Fail);
  EXPECT_EQ(m[1].exit_code, kHangExitCode);
  EXPECT_NE(m[1].reason.find("hang: no step for 30 s: rank 0 stuck"), std::string::npos) << m[1].reason;
  EXPECT_TRUE(h.c.over());
}

TEST(RendezvousCoordinator, AHangIsIgnoredWhileNoRoundRuns) {
  Harness h(2, 2);
  h.join(1, 0);
  h.c.hang("late", h.t);
  EXPECT_TRUE(h.out().empty());
  EXPECT_EQ(h.c.report().restarts, 0);
}

TEST(RendezvousCoordinator, AGracefulLeaveIsNotCountedWhenNoRestartHappens) {
  Harness h(1, 2, 0);
  h.run_two_nodes();
  h.advance(1001ms);
  h.out();
  h.c.leave(2, h.t, true);  // no restart left: the job ends, nothing is counted
  EXPECT_TRUE(h.c.over());
  EXPECT_EQ(h.c.report().restarts, 0);
  EXPECT_EQ(h.c.report().phase, "over");
}

TEST(RendezvousCoordinator, BelowMinNodesWaitsJoinTimeoutThenFailsClearly) {
  Harness h(2, 2);
  h.run_two_nodes();
  h.c.leave(2, h.t);
  h.out();
  h.join(1, 0);
  h.advance(4900ms);
  EXPECT_TRUE(h.out().empty());
  h.advance(200ms);
  auto m = by_member(h.out());
  EXPECT_EQ(m[1].kind, Kind::Fail);
  EXPECT_NE(m[1].reason.find("only 1 of the minimum 2 nodes"), std::string::npos) << m[1].reason;
}

TEST(RendezvousCoordinator, ANewNodeJoiningStartsANewRoundWithIt) {
  Harness h(1, 2);
  h.join(1, 0);
  h.advance(1001ms);
  h.out();
  h.join(2, 1);
  EXPECT_EQ(by_member(h.out())[1].kind, Kind::Stop);
  h.join(1, 0);
  auto m = by_member(h.out());
  EXPECT_EQ(m[1].assignment.world_size, 4);
  EXPECT_EQ(m[2].assignment.group_rank, 1);
}

TEST(RendezvousCoordinator, AJoinerGrowsTheGroupWithoutUsingARestart) {
  // torchrun: membership changes do not count as retries, so even --max-restarts=0 admits a joiner.
  Harness h(1, 2, 0);
  h.join(1, 0);
  h.advance(1001ms);
  h.out();
  h.join(2, 1);
  EXPECT_EQ(by_member(h.out())[1].kind, Kind::Stop);
  h.join(1, 0);
  auto m = by_member(h.out());
  ASSERT_EQ(m[2].kind, Kind::Round);
  EXPECT_EQ(m[2].assignment.world_size, 4);
  EXPECT_EQ(m[2].assignment.restart_count, 1);
  // The joiner cost nothing: a worker failure now still finds --max-restarts=0 exhausted and ends the job.
  h.c.failed(2, 1, 9, "rank 3 exited 9", h.t);
  EXPECT_TRUE(h.c.over());
  EXPECT_EQ(by_member(h.out())[1].exit_code, 9);
}

TEST(RendezvousCoordinator, ScalingUpWaitsTheLastCallSoThatSeveralJoinersFormOneRound) {
  Harness h(1, 3, 0);
  h.join(1, 0);
  h.advance(1001ms);
  h.out();
  h.join(2, 1);
  h.join(1, 0);  // node 0 stopped its workers
  EXPECT_EQ(h.out().size(), 1u);  // only node 0's STOP: 2 of 3 nodes, the last call runs
  h.advance(500ms);
  h.join(3, 2);  // max reached: forms at once
  auto m = by_member(h.out());
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[3].assignment.group_world_size, 3);
  EXPECT_EQ(m[1].assignment.restart_count, 1);
  EXPECT_EQ(h.c.report().restarts_by_cause.at("scale"), 1);
}

TEST(RendezvousCoordinator, AJoinerOfAFullGroupWaitsAndIsToldItWasNotAdmittedWhenTheJobFinishes) {
  Harness h(1, 2, 0);
  h.run_two_nodes();
  h.advance(1001ms);
  h.out();
  h.join(3, 2);
  EXPECT_TRUE(h.out().empty());  // MAX nodes run: it waits
  h.c.done(1, 0, h.t);
  h.c.done(2, 0, h.t);
  ASSERT_TRUE(h.c.over());
  auto m = by_member(h.out());
  EXPECT_EQ(m[1].exit_code, 0);
  EXPECT_EQ(m[3].kind, Kind::Fail);
  EXPECT_EQ(m[3].exit_code, 1);
  EXPECT_EQ(m[3].reason,
            "this node was not admitted (the group already had the maximum of 2 nodes) and the job finished without it");
}

TEST(RendezvousCoordinator, AJoinerAfterANodeFinishedWaitsAndIsNotAdmitted) {
  Harness h(1, 3, 5);
  h.run_two_nodes();
  h.advance(1001ms);
  h.out();
  h.c.done(2, 0, h.t);
  h.join(3, 2);
  EXPECT_TRUE(h.out().empty());  // node 1 is gone with its share of the work: no re-forming
  h.c.done(1, 0, h.t);
  auto m = by_member(h.out());
  EXPECT_EQ(m[3].exit_code, 1);
  EXPECT_NE(m[3].reason.find("other nodes had already finished"), std::string::npos) << m[3].reason;
}

TEST(RendezvousCoordinator, AJoinerAfterTheJobFinishedIsRefusedWithANonZeroCode) {
  Harness h(1, 1);
  h.join(1, 0);
  h.out();
  h.c.done(1, 0, h.t);
  h.out();
  h.join(2, 1);
  auto m = by_member(h.out());
  EXPECT_EQ(m[2].exit_code, 1);
  EXPECT_EQ(m[2].reason, "this node was not admitted: the job had already finished");
}

TEST(RendezvousCoordinator, FinishesWhenEveryNodeIsDoneAndTellsWaitingNodes) {
  Harness h(2, 2);
  h.run_two_nodes();
  h.c.done(2, 0, h.t);
  h.c.leave(2, h.t);  // a finished node leaves: not a failure
  EXPECT_FALSE(h.c.over());
  EXPECT_TRUE(h.out().empty());
  h.c.done(1, 0, h.t);
  EXPECT_TRUE(h.c.over());
  auto m = by_member(h.out());
  EXPECT_EQ(m[1].kind, Kind::Fail);
  EXPECT_EQ(m[1].exit_code, 0);
}

TEST(RendezvousCoordinator, RejectsANodeOfAnotherJob) {
  Harness h(1, 2);
  h.c.join(5, {"other", 1, 1}, h.t);
  auto m = by_member(h.out());
  EXPECT_EQ(m[5].kind, Kind::Fail);
  EXPECT_NE(m[5].reason.find("run id mismatch"), std::string::npos);
}

}  // namespace
}  // namespace kubedist::launcher
