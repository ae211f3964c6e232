#include "rendezvous/wire.h"

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

TEST(RendezvousWire, RequestsRoundTrip) {
  const std::string join = encode_join({"job-1", 3, 8});
  EXPECT_EQ(join, "JOIN job-1 3 8\n");
  auto j = parse_request(join.substr(0, join.size() - 1));
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->join.run_id, "job-1");
  EXPECT_EQ(j->join.node_rank, 3);
  EXPECT_EQ(j->join.nproc, 8);
  auto line = encode_failed(4, 137, "rank 2\nwas killed");
  EXPECT_EQ(line, "FAILED 4 137 rank 2 was killed\n");
  auto f = parse_request(line.substr(0, line.size() - 1));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->summary, "rank 2 was killed");
  EXPECT_EQ(f->exit_code, 137);
  auto done = parse_request("DONE 2");
  ASSERT_EQ(encode_done(2), "DONE 2\n");
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->kind, MemberRequest::Kind::Done);
  EXPECT_EQ(done->round, 2);
}

TEST(RendezvousWire, MessagesRoundTrip) {
  RendezvousMessage round{RendezvousMessage::Kind::Round, {2, 1, 1, 2, 4, 8, "", 0}, 2, 0, ""};
  auto line = encode_message(round);
  EXPECT_EQ(line, "ROUND 2 1 1 2 4 8\n");
  auto r = parse_message(line.substr(0, line.size() - 1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->assignment.rank_offset, 4);
  auto fail = parse_message("FAIL 3 giving up: node 1 left");
  ASSERT_TRUE(fail.ok());
  EXPECT_EQ(fail->exit_code, 3);
  EXPECT_EQ(fail->reason, "giving up: node 1 left");
}

TEST(RendezvousWire, AJoinMayCarryTheJoinersSettingsForARunTheHostDoesNotKnow) {
  JoinRequest join{"job-b", 1, 2, CoordinatorSettings{"job-b", 1, 3, 2, std::chrono::milliseconds(1500),
                                                      std::chrono::milliseconds(60000), true}};
  auto line = encode_join(join);
  EXPECT_EQ(line, "JOIN job-b 1 2 1 3 2 1500 60000 1\n");
  auto r = parse_request(line.substr(0, line.size() - 1));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->join.settings.has_value());
  const CoordinatorSettings& g = *r->join.settings;
  EXPECT_EQ(g.run_id, "job-b");
  EXPECT_EQ(g.min_nodes, 1);
  EXPECT_EQ(g.max_nodes, 3);
  EXPECT_EQ(g.max_restarts, 2);
  EXPECT_EQ(g.last_call.count(), 1500);
  EXPECT_EQ(g.join_timeout.count(), 60000);
  EXPECT_TRUE(g.permanent_exit_codes);
  auto plain = parse_request("JOIN job-b 1 2");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->join.settings.has_value());
  for (std::string bad : {"JOIN b 1 2 1", "JOIN b 1 2 1 3 2 1500 60000", "JOIN b 1 2 3 1 0 0 0 0",
                          "JOIN b 1 2 0 1 0 0 0 0", "JOIN b 1 2 1 1 -1 0 0 0", "JOIN b 1 2 1 1 0 0 0 2",
                          "JOIN b 1 2 1 1 0 0 0 0 extra", "JOIN b 1 2 x 1 0 0 0 0"}) {
    auto m = parse_request(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.error(), "bad rendezvous request: '" + bad + "'");
  }
}

TEST(RendezvousWire, ARoundCarriesTheWorkersStoreWhenTheHostChoseIt) {
  RendezvousMessage round{RendezvousMessage::Kind::Round, {0, 0, 1, 2, 1, 2, "node-0.job", 41234}, 0, 0, ""};
  auto line = encode_message(round);
  EXPECT_EQ(line, "ROUND 0 0 1 2 1 2 node-0.job 41234\n");
  auto r = parse_message(line.substr(0, line.size() - 1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->assignment.master_addr, "node-0.job");
  EXPECT_EQ(r->assignment.master_port, 41234);
  auto without = parse_message("ROUND 0 0 1 2 1 2");
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->assignment.master_addr, "");
  EXPECT_EQ(without->assignment.master_port, 0);
  for (std::string bad : {"ROUND 0 0 1 2 1 2 host", "ROUND 0 0 1 2 1 2 host x", "ROUND 0 0 1 2 1 2 host 0",
                          "ROUND 0 0 1 2 1 2 host 70000", "ROUND 0 0 1 2 1 2 host 80 extra"}) {
    auto m = parse_message(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.error(), "bad rendezvous message: '" + bad + "'");
  }
}

TEST(RendezvousWire, RejectsGarbage) {
  for (std::string bad : {"", "HELLO", "JOIN job", "JOIN job 1 0", "DONE x", "ROUND 1 2"})
    EXPECT_FALSE(parse_request(bad).ok() && parse_message(bad).ok()) << bad;
  EXPECT_FALSE(parse_request("JOIN job -1 2").ok());
}

TEST(RendezvousWire, LeaveAndStatusRequestsTakeNoArguments) {
  EXPECT_EQ(encode_leave(), "LEAVE\n");
  EXPECT_EQ(encode_status(), "STATUS\n");
  auto leave = parse_request("LEAVE");
  ASSERT_TRUE(leave.ok());
  EXPECT_EQ(leave->kind, MemberRequest::Kind::Leave);
  auto status = parse_request("STATUS\r");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->kind, MemberRequest::Kind::Status);
  auto bad = parse_request("STATUS please");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "bad rendezvous request: 'STATUS please'");
  EXPECT_FALSE(parse_request("LEAVE 3").ok());
}

TEST(RendezvousWire, CarryNamesTheRunAndEachCauseWithItsCount) {
  const std::string line = encode_carry("resnet", {{"node_lost", 1}, {"worker_crash", 12}});
  EXPECT_EQ(line, "CARRY resnet node_lost=1 worker_crash=12\n");
  auto r = parse_request(line);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->kind, MemberRequest::Kind::Carry);
  EXPECT_EQ(r->run_id, "resnet");
  EXPECT_EQ(r->carried, (std::map<std::string, int>{{"node_lost", 1}, {"worker_crash", 12}}));
  auto none = parse_request("CARRY resnet");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->carried.empty());
  std::string many = "CARRY resnet";
  for (char c = 'a'; c <= 'q'; ++c) many += std::string(" ") + c + "=1";  // 17 causes
  for (const std::string& bad : {std::string("CARRY"), std::string("CARRY resnet node_lost"),
                                std::string("CARRY resnet node_lost="), std::string("CARRY resnet =1"),
                                std::string("CARRY resnet Node=1"), std::string("CARRY resnet node_lost=-1"),
                                std::string("CARRY resnet node_lost=01"), std::string("CARRY resnet a=1 a=2"),
                                std::string("CARRY resnet node_lost=9999999999"), many}) {
    EXPECT_FALSE(parse_request(bad).ok()) << bad;
  }
}

// The STATUS answer has one encoder and one parser for both halves: tests/unit/contract/status_line_test.cc.

TEST(RendezvousWire, ProgressRoundTripsWithEachRankAndTheLowestOnesCounts) {
  NodeProgress p;
  p.ranks = {{2, 120, 0.25}, {3, 119, 0}};
  p.total_steps = 1000;
  p.epoch = 1;
  p.samples = 12345678901234;
  p.metrics = {{"loss", 0.5}, {"lr", 1e-4}};
  const std::string line = encode_progress(7, p);
  EXPECT_EQ(line, "PROGRESS 7 2:120:0.25 3:119:0 total=1000 epoch=1 samples=12345678901234 m.loss=0.5 m.lr=0.0001\n");
  auto back = parse_request(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->kind, MemberRequest::Kind::Progress);
  EXPECT_EQ(back->round, 7);
  EXPECT_EQ(back->progress, p);
}

TEST(RendezvousWire, StacksRoundTripWithAnyText) {
  std::map<int, StackSummary> s{{1, {"j-node-1", "in recv (train.py:40)", "recv c10d.py:9 < main train.py:40"}},
                                {3, {"j-node-1", "", ""}}};
  const std::string line = encode_stacks(4, s);
  EXPECT_EQ(line, "STACKS 4 1 :j-node-1 :in%20recv%20(train.py:40) :recv%20c10d.py:9%20<%20main%20train.py:40 "
                  "3 :j-node-1 : :\n");
  auto back = parse_request(line);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->kind, MemberRequest::Kind::Stacks);
  EXPECT_EQ(back->round, 4);
  EXPECT_EQ(back->stacks, s);
  auto dump = parse_message("DUMP 4");
  ASSERT_TRUE(dump.ok());
  EXPECT_EQ(dump->kind, RendezvousMessage::Kind::Dump);
  EXPECT_EQ(dump->round, 4);
  RendezvousMessage m;
  m.kind = RendezvousMessage::Kind::Dump;
  m.round = 4;
  EXPECT_EQ(encode_message(m), "DUMP 4\n");
}

TEST(RendezvousWire, RefusesMalformedProgressAndStacks) {
  for (const char* line : {"PROGRESS", "PROGRESS 1", "PROGRESS -1 0:1:0", "PROGRESS 1 0:1", "PROGRESS 1 0:1:0:0",
                           "PROGRESS 1 x:1:0", "PROGRESS 1 0:-1:0", "PROGRESS 1 0:1:nan", "PROGRESS 1 0:1:-1",
                           "PROGRESS 1 total=5", "PROGRESS 1 0:1:0 total=x", "PROGRESS 1 0:1:0 color=red",
                           "PROGRESS 1 0:1:0 m.bad-name=1", "PROGRESS 1 0:1:0 total=5 1:1:0",
                           "PROGRESS 1 0:1:0 m.a=1 m.b=1 m.c=1 m.d=1 m.e=1 m.f=1 m.g=1 m.h=1 m.i=1",
                           "STACKS", "STACKS 1 0 :h :w", "STACKS 1 0 h :w :t", "STACKS 1 0 :h :w :%ZZ",
                           "STACKS 1 x :h :w :t", "DUMP", "DUMP x"}) {
    if (std::string(line).rfind("DUMP", 0) == 0) EXPECT_FALSE(parse_message(line).ok()) << line;
    else EXPECT_FALSE(parse_request(line).ok()) << line;
  }
}

}  // namespace
}  // namespace kubedist::launcher
