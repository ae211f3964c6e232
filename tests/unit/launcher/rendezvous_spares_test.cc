// Spares (JOIN ... spare): the rendezvous rules for a job's spec.spares, driven through the pure coordinator.
#include "rendezvous/coordinator.h"
#include "rendezvous/wire.h"

#include <gtest/gtest.h>

#include "coordinator_harness.h"

namespace kubedist::launcher {
namespace {

using Kind = RendezvousMessage::Kind;
using namespace std::chrono_literals;

// The coordinator harness, with spares: out() by member, join() also as a spare or naming the slot it stood in for.
struct Harness : testing::ByMember {
  using testing::ByMember::ByMember;
  // Nodes 0, 1 and 2 (ids 1, 2, 3) of a rigid job of three, and spare node 3 (id 9), which joined first.
  void run_three_and_a_spare() {
    join(9, 3, true);
    join(1, 0);
    join(2, 1);
    EXPECT_TRUE(out().empty()) << "a spare does not make up the first round";
    join(3, 2);
    auto m = out();
    ASSERT_EQ(m.size(), 3u);
    EXPECT_FALSE(m.count(9));
    EXPECT_EQ(m[3].assignment.group_world_size, 3);
  }
};

TEST(RendezvousSpares, ASpareWaitsOutsideTheGroupAndTakesALostMembersPlaceAtOnce) {
  Harness h(3, 3);
  h.run_three_and_a_spare();
  EXPECT_EQ(h.c.report().spares, std::vector<int>{3});
  h.c.leave(2, h.t);  // node 1 vanished (its node lost power)
  auto stops = h.out();
  EXPECT_EQ(stops[1].kind, Kind::Stop);
  EXPECT_EQ(stops[3].kind, Kind::Stop);
  EXPECT_FALSE(stops.count(9)) << "a spare has nothing to stop";
  h.join(1, 0);
  EXPECT_TRUE(h.out().empty());
  h.join(3, 2);  // the survivors are back: the spare fills the open place without the last call
  auto m = h.out();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[9].kind, Kind::Round);
  EXPECT_EQ(m[9].assignment.group_rank, 1) << "the lost node's place: its group rank and global ranks";
  EXPECT_EQ(m[9].assignment.rank_offset, 2);
  EXPECT_EQ(m[3].assignment.group_rank, 2) << "the survivors keep theirs";
  EXPECT_EQ(m[3].assignment.rank_offset, 4);
  EXPECT_EQ(m[9].assignment.world_size, 6);
  EXPECT_EQ(m[9].assignment.restart_count, 1);
  EXPECT_EQ(m[9].assignment.stand_in_slot, 1) << "the stand-in is told its slot";
  EXPECT_EQ(m[3].assignment.stand_in_slot, -1);
  const auto r = h.c.report();
  EXPECT_EQ(r.restarts_by_cause.at(kCauseNodeLost), 1);
  EXPECT_TRUE(r.spares.empty());
  EXPECT_EQ(r.stand_ins, (std::map<int, int>{{1, 3}}));
  EXPECT_EQ(r.lost_nodes, std::vector<int>{1});
}

TEST(RendezvousSpares, TheLostNodeBackWaitsAsASpareAndTheStandInKeepsItsPlace) {
  Harness h(3, 3);
  h.run_three_and_a_spare();
  h.c.leave(2, h.t);
  h.out();
  h.join(1, 0);
  h.join(3, 2);
  h.out();
  h.join(5, 1);  // node 1's launcher again (its node came back)
  EXPECT_TRUE(h.out().empty()) << "the group is whole: no restart";
  EXPECT_EQ(h.c.report().spares, std::vector<int>{1});
  h.c.failed(1, 1, 3, "rank 0 exited with code 3", h.t);  // a crash: every member joins again
  h.out();
  h.join(1, 0);
  h.join(9, 3, true);  // the stand-in says spare as it did, and is a member in its place all the same
  h.join(3, 2);
  auto m = h.out();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_FALSE(m.count(5));
  EXPECT_EQ(m[9].assignment.group_rank, 1);
  EXPECT_EQ(h.c.report().stand_ins, (std::map<int, int>{{1, 3}}));
}

TEST(RendezvousSpares, ANewNodeZeroGivesAStandInTheSlotItNamesAndTheLostNodeWaits) {
  Harness h(3, 3);  // node 0 was replaced: this rendezvous never saw the takeover
  h.join(5, 1);     // node 1 came back before the stand-in joined
  h.join(1, 0);
  h.join(9, 3, false, 1);  // the stand-in names slot 1
  EXPECT_TRUE(h.out().empty());
  h.join(3, 2);
  auto m = h.out();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_FALSE(m.count(5)) << "the lost node waits as a spare";
  EXPECT_EQ(m[9].assignment.group_rank, 1);
  EXPECT_EQ(m[9].assignment.stand_in_slot, 1);
  EXPECT_EQ(h.c.report().spares, std::vector<int>{1});
  EXPECT_EQ(h.c.report().stand_ins, (std::map<int, int>{{1, 3}}));
}

TEST(RendezvousSpares, AStandInWhosePlaceIsInTheRunningGroupWaitsAsASpare) {
  Harness h(2, 2);
  h.join(1, 0);
  h.join(2, 1);
  h.out();
  h.join(9, 3, false, 1);  // node 1 holds its own place in the running group
  EXPECT_TRUE(h.out().empty());
  EXPECT_EQ(h.c.report().spares, std::vector<int>{3});
  EXPECT_TRUE(h.c.report().stand_ins.empty());
}

TEST(RendezvousSpares, ALossWhileTheGroupReformsOpensAPlaceToo) {
  Harness h(3, 3);
  h.run_three_and_a_spare();
  h.c.failed(3, 0, 1, "rank 4 exited with code 1", h.t);
  h.out();
  h.join(1, 0);
  h.join(3, 2);
  h.c.leave(2, h.t);  // node 1 lost while its workers were stopping
  auto m = h.out();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[9].assignment.group_rank, 1);
}

TEST(RendezvousSpares, SeveralLossesUseSeveralSparesAndAScaleDownNone) {
  Harness h(2, 4);
  h.join(1, 0);
  h.join(2, 1);
  h.join(3, 2);
  h.join(4, 3);
  h.out();
  h.join(8, 4, true);
  h.join(9, 5, true);
  EXPECT_TRUE(h.out().empty()) << "spares do not grow a group";
  h.c.leave(2, h.t);
  h.c.leave(4, h.t);
  h.out();
  h.join(1, 0);
  h.join(3, 2);
  auto m = h.out();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[8].assignment.group_rank, 1);
  EXPECT_EQ(m[9].assignment.group_rank, 3);
  EXPECT_EQ(h.c.report().stand_ins, (std::map<int, int>{{1, 4}, {3, 5}}));
  h.c.leave(3, h.t, true);  // node 2 scaled down on purpose: the group shrinks
  h.out();
  h.join(10, 6, true);
  h.join(1, 0);
  h.join(8, 4, true);
  h.join(9, 5, true);
  EXPECT_TRUE(h.out().empty()) << "below the maximum: the last call, and no spare for a scale-down";
  h.advance(1100ms);
  m = h.out();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_FALSE(m.count(10));
  EXPECT_EQ(h.c.report().spares, std::vector<int>{6});
}

TEST(RendezvousSpares, AnElasticGroupBelowItsSizeTakesASpareThatJoinsLater) {
  Harness h(1, 3);
  h.join(1, 0);
  h.join(2, 1);
  h.join(3, 2);
  h.out();
  h.c.leave(3, h.t);
  h.out();
  h.join(1, 0);
  h.join(2, 1);
  h.advance(1100ms);
  ASSERT_EQ(h.out().size(), 2u) << "no spare yet: the group shrinks";
  h.join(9, 7, true);  // a new spare: it joins the running group in the lost node's place
  auto stops = h.out();
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[1].kind, Kind::Stop);
  h.join(1, 0);
  h.join(2, 1);
  auto m = h.out();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[9].assignment.group_rank, 2);
  EXPECT_EQ(h.c.report().restarts_by_cause.at(kCauseScale), 1);
}

TEST(RendezvousSpares, ASpareNotNeededEndsWithZeroAndANodeNotAdmittedWithOne) {
  Harness h(2, 2);
  h.join(1, 0);
  h.join(2, 1);
  h.join(9, 2, true);
  h.join(7, 3);  // not a spare: finds the group full
  h.out();
  h.c.done(1, 0, h.t);
  h.c.done(2, 0, h.t);
  auto m = h.out();
  EXPECT_EQ(m[9].kind, Kind::Fail);
  EXPECT_EQ(m[9].exit_code, 0);
  EXPECT_EQ(m[9].reason, "this spare was not needed: the job finished");
  EXPECT_EQ(m[7].exit_code, 1);
  h.join(11, 4, true);
  EXPECT_EQ(h.out()[11].exit_code, 0);
}

TEST(RendezvousSpares, TheJoinLineSaysSpareLast) {
  JoinRequest join{"job", 3, 2, CoordinatorSettings{"job", 2, 2, 1, 1000ms, 60000ms, false}};
  join.spare = true;
  EXPECT_EQ(encode_join(join), "JOIN job 3 2 2 2 1 1000 60000 0 spare\n");
  for (const std::string line : {"JOIN job 3 2 2 2 1 1000 60000 0 spare", "JOIN job 3 2 spare"}) {
    auto r = parse_request(line);
    ASSERT_TRUE(r.ok()) << line;
    EXPECT_TRUE(r->join.spare);
    EXPECT_EQ(r->join.settings.has_value(), line.size() > 20);
  }
  auto plain = parse_request("JOIN job 3 2 2 2 1 1000 60000 0");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->join.spare);
  EXPECT_EQ(plain->join.stand_in, -1);
  join.stand_in = 1;  // once it stood in, it names its slot instead
  EXPECT_EQ(encode_join(join), "JOIN job 3 2 2 2 1 1000 60000 0 stand_in=1\n");
  auto back = parse_request("JOIN job 3 2 2 2 1 1000 60000 0 stand_in=1");
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->join.spare);
  EXPECT_EQ(back->join.stand_in, 1);
  EXPECT_TRUE(back->join.settings.has_value());
  for (const std::string bad : {"JOIN job 3 2 spare spare", "JOIN job 3 2 spares", "JOIN job 3 2 spare 2 2 1 1000 60000 0",
                                "JOIN job 3 2 1 spare", "JOIN job 3 2 stand_in=", "JOIN job 3 2 stand_in=-1",
                                "JOIN job 3 2 stand_in=x", "JOIN job 3 2 spare stand_in=1"})
    EXPECT_FALSE(parse_request(bad).ok()) << bad;
}

TEST(RendezvousSpares, TheRoundTellsAStandInItsSlotLast) {
  RendezvousMessage round;
  round.kind = Kind::Round;
  round.assignment = Assignment{4, 1, 1, 3, 2, 6, "10.0.0.1", 29500, 1};
  const std::string line = encode_message(round);
  EXPECT_EQ(line, "ROUND 4 1 1 3 2 6 10.0.0.1 29500 slot=1\n");
  auto back = parse_message(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->assignment.stand_in_slot, 1);
  EXPECT_EQ(back->assignment.master_port, 29500);
  auto bare = parse_message("ROUND 4 1 1 3 2 6 slot=2");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->assignment.stand_in_slot, 2);
  EXPECT_EQ(bare->assignment.master_addr, "");
  for (const std::string bad : {"ROUND 4 1 1 3 2 6 slot=", "ROUND 4 1 1 3 2 6 slot=1 10.0.0.1 29500",
                                "ROUND 4 1 1 3 2 6 10.0.0.1 29500 slot=x", "ROUND 4 1 1 3 2 6 10.0.0.1"})
    EXPECT_FALSE(parse_message(bad).ok()) << bad;
}


TEST(RendezvousSpares, AReleasedMemberGivesItsPlaceToASpareAndNeverTakesOneAgain) {
  Harness h(3, 3);
  h.run_three_and_a_spare();
  const auto answer = h.c.release({1, contract::ReleaseWhy::kCordoned}, h.t);  // node 1's node is being drained
  EXPECT_TRUE(answer.released);
  auto stops = h.out();
  ASSERT_EQ(stops.size(), 3u) << "every member stops, node 1 included";
  EXPECT_EQ(stops[2].kind, Kind::Stop);
  EXPECT_EQ(h.c.last_event(), "node 1's node is going away (cordoned); a spare takes its place");
  EXPECT_EQ(h.c.report().lost_nodes, std::vector<int>{1}) << "so that the operator makes no pod of node rank 1";
  h.join(1, 0);
  h.join(3, 2);
  auto m = h.out();
  ASSERT_EQ(m.size(), 3u) << "the spare fills the place at once, without waiting for node 1";
  EXPECT_EQ(m[9].assignment.group_rank, 1);
  EXPECT_EQ(m[9].assignment.stand_in_slot, 1);
  h.join(2, 1);  // node 1's launcher, its workers stopped: it waits, and is no spare anyone may count on
  EXPECT_TRUE(h.out().empty());
  auto r = h.c.report();
  EXPECT_EQ(r.restarts_by_cause.at(kCauseNodeLost), 1);
  EXPECT_TRUE(r.spares.empty()) << "a released launcher is not reported ready";
  EXPECT_EQ(r.lost_nodes, std::vector<int>{1}) << "nor back";
  EXPECT_EQ(r.stand_ins, (std::map<int, int>{{1, 3}}));
  EXPECT_TRUE(h.c.release({1, contract::ReleaseWhy::kCordoned}, h.t).released) << "the same notice again";
  EXPECT_TRUE(h.out().empty()) << "changes nothing";
  h.c.leave(9, h.t);  // the stand-in lost: node 1, released, does not take its own place back
  h.out();
  h.join(1, 0);
  h.join(3, 2);
  EXPECT_TRUE(h.out().empty());
  h.c.leave(2, h.t, true);  // node 1's pod evicted at last; a new pod of node rank 1 on another node is a member
  h.join(5, 1);
  m = h.out();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[5].assignment.group_rank, 1);
  EXPECT_EQ(m[5].assignment.stand_in_slot, -1);
}

TEST(RendezvousSpares, AReleaseIsKeptWithoutAReadySpareForNodeZeroAndForNoSuchLauncher) {
  Harness h(3, 3);
  h.join(1, 0);
  h.join(2, 1);
  h.join(3, 2);
  h.out();
  using contract::ReleaseWhy;
  EXPECT_EQ(h.c.release({1, ReleaseWhy::kNotReady}, h.t), (contract::ReleaseAnswer{1, false, "no spare waits ready"}));
  h.join(9, 3, true);
  EXPECT_EQ(h.c.release({0, ReleaseWhy::kTerminationNotice}, h.t).why, "node rank 0 hosts the rendezvous");
  EXPECT_EQ(h.c.release({7, ReleaseWhy::kCordoned}, h.t).why, "no launcher of that node rank is connected");
  EXPECT_TRUE(h.out().empty()) << "nothing changed";
  EXPECT_TRUE(h.c.release({3, ReleaseWhy::kCordoned}, h.t).released) << "a spare on a node going away";
  EXPECT_TRUE(h.c.report().spares.empty());
  EXPECT_EQ(h.c.release({1, ReleaseWhy::kCordoned}, h.t).why, "no spare waits ready") << "it stands in for no one";
  h.c.leave(2, h.t);  // and not for a lost member either
  h.out();
  h.join(1, 0);
  h.join(3, 2);
  EXPECT_TRUE(h.out().empty());
}

TEST(RendezvousSpares, ARigidMembersLeaveOpensItsPlaceToASpare) {
  Harness h(3, 3);
  h.run_three_and_a_spare();
  h.c.leave(2, h.t, true);  // node 1's pod evicted (LEAVE): a rigid job is never scaled down
  h.out();
  h.join(1, 0);
  h.join(3, 2);
  auto m = h.out();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[9].assignment.group_rank, 1);
  const auto r = h.c.report();
  EXPECT_EQ(r.restarts_by_cause.at(kCauseNodeLost), 1);
  EXPECT_EQ(r.restarts_by_cause.at(kCauseScale), 0);
  EXPECT_EQ(r.lost_nodes, std::vector<int>{1}) << "so that the operator makes no pod of node rank 1 again";
  EXPECT_EQ(h.c.last_event(), "node 1 left the job (its pod is being removed); a spare takes its place");
}

TEST(RendezvousSpares, TheOperatorsReleaseLineAndItsAnswer) {
  auto r = parse_request("RELEASE 10001 termination_notice");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->kind, MemberRequest::Kind::Release);
  EXPECT_EQ(r->release, (contract::ReleaseNotice{10001, contract::ReleaseWhy::kTerminationNotice}));
  EXPECT_EQ(contract::encode_release({1, contract::ReleaseWhy::kNotReady}), "RELEASE 1 not_ready");
  for (const std::string bad : {"RELEASE", "RELEASE 1", "RELEASE x cordoned", "RELEASE 1 drained", "RELEASE -1 cordoned",
                                "RELEASE 01 cordoned", "RELEASE 1234567 cordoned", "RELEASE 1 cordoned extra"})
    EXPECT_FALSE(parse_request(bad).ok()) << bad;
  const contract::ReleaseAnswer kept{2, false, "no spare waits ready"};
  EXPECT_EQ(contract::encode_release_answer(kept), "KEPT 2 no spare waits ready");
  EXPECT_EQ(contract::parse_release_answer("KEPT 2 no spare waits ready"), kept);
  EXPECT_EQ(contract::parse_release_answer("RELEASED 2"), (contract::ReleaseAnswer{2, true, ""}));
  for (const std::string bad : {"RELEASED", "RELEASED 2 why", "KEPT 2", "KEPT x no", "STATUS round=1", ""})
    EXPECT_FALSE(contract::parse_release_answer(bad).has_value()) << bad;
}

}  // namespace
}  // namespace kubedist::launcher
