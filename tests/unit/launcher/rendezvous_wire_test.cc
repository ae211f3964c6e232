#include "rendezvous_wire.h"

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

TEST(RendezvousWire, RequestsRoundTrip) {
  MemberRequest join{MemberRequest::Kind::Join, {"job-1", 3, 8}, 0, 0, ""};
  auto j = parse_request(encode_request(join).substr(0, encode_request(join).size() - 1));
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->join.run_id, "job-1");
  EXPECT_EQ(j->join.node_rank, 3);
  EXPECT_EQ(j->join.nproc, 8);
  auto line = encode_request({MemberRequest::Kind::Failed, {}, 4, 137, "rank 2\nwas killed"});
  EXPECT_EQ(line, "FAILED 4 137 rank 2 was killed\n");
  auto f = parse_request(line.substr(0, line.size() - 1));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->summary, "rank 2 was killed");
  EXPECT_EQ(f->exit_code, 137);
}

TEST(RendezvousWire, MessagesRoundTrip) {
  RendezvousMessage round{RendezvousMessage::Kind::Round, {2, 1, 1, 2, 4, 8}, 2, 0, ""};
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

TEST(RendezvousWire, RejectsGarbage) {
  for (std::string bad : {"", "HELLO", "JOIN job", "JOIN job 1 0", "DONE x", "ROUND 1 2"})
    EXPECT_FALSE(parse_request(bad).ok() && parse_message(bad).ok()) << bad;
  EXPECT_FALSE(parse_request("JOIN job -1 2").ok());
}

}  // namespace
}  // namespace kubedist::launcher
