#include "contract/status_line.h"

#include <gtest/gtest.h>

#include "contract/restart_cause.h"

namespace kubedist::contract {
namespace {

StatusReport running_report() {
  return {3, 4, {{kCauseNodeLost, 1}, {kCauseScale, 2}, {kCauseWorkerCrash, 1}}, 2, 8, "running", "resnet"};
}

TEST(StatusLine, EncodesEveryFieldInOrderAsOneLine) {
  EXPECT_EQ(encode_status_line(running_report()),
            "STATUS round=3 restarts=4 node_lost=1 scale=2 worker_crash=1 nodes=2 world_size=8 phase=running "
            "run=resnet\n");
}

TEST(StatusLine, RoundTripsWithAndWithoutTheNewline) {
  const StatusReport reports[] = {
      running_report(),
      {-1, 0, {{kCauseNodeLost, 0}, {kCauseScale, 0}, {kCauseWorkerCrash, 0}}, 0, 0, "gathering", "job"},
      {7, 123456789, {{kCauseWorkerCrash, 123456789}}, 10000, 999999999, "over", "a-b.c"},
  };
  for (const auto& r : reports) {
    const std::string line = encode_status_line(r);
    for (const std::string& text : {line, line.substr(0, line.size() - 1)}) {
      const ParsedStatusLine back = parse_status_line(text);
      ASSERT_TRUE(back.report) << text << " -> " << back.error;
      EXPECT_EQ(*back.report, r) << text;
    }
  }
}

TEST(StatusLine, ReadsAnOlderLauncherWithoutRunOrPhase) {
  const ParsedStatusLine p = parse_status_line("STATUS round=-1 restarts=0 nodes=0 world_size=0");
  ASSERT_TRUE(p.report) << p.error;
  EXPECT_EQ(p.report->round, -1);
  EXPECT_EQ(p.report->run_id, "");
  EXPECT_EQ(p.report->phase, "");
}

TEST(StatusLine, TakesAnUnknownCountAsANewRestartCause) {
  const ParsedStatusLine p = parse_status_line("STATUS round=1 restarts=2 preempted=2 nodes=1 world_size=1");
  ASSERT_TRUE(p.report) << p.error;
  EXPECT_EQ(p.report->restarts_by_cause, (std::map<std::string, int>{{"preempted", 2}}));
}

TEST(StatusLine, RefusesBadLinesSayingWhatIsWrong) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "the rendezvous service answered '', not a STATUS report"},
      {"FAIL 1 no", "the rendezvous service answered 'FAIL 1 no', not a STATUS report"},
      {"STATUSround=1", "not a STATUS report"},
      // truncated: in the middle of a word, or before the fields every report has
      {"STATUS round=3 restarts=4 node_lo", "bad field 'node_lo' in the rendezvous STATUS report"},
      {"STATUS round=3 restarts=4 nodes=", "bad field 'nodes='"},
      {"STATUS round=1 restarts=0", "lacks round, restarts, nodes or world_size"},
      {"STATUS round=1 nodes=1 world_size=1", "lacks round, restarts, nodes or world_size"},
      // unknown fields without a count
      {"STATUS round=1 restarts=0 nodes=1 world_size=1 color=red", "bad field 'color=red'"},
      {"STATUS round=1 restarts=0 nodes=1 world_size=1 =3", "bad field '=3'"},
      {"STATUS round=1 restarts=x nodes=1 world_size=1", "bad field 'restarts=x'"},
      // out of range: negative, leading zeros, more than an int holds
      {"STATUS round=1 restarts=0 nodes=1 world_size=1 scale=-1", "bad field 'scale=-1'"},
      {"STATUS round=-2 restarts=0 nodes=1 world_size=1", "bad field 'round=-2'"},
      {"STATUS round=1 restarts=007 nodes=1 world_size=1", "bad field 'restarts=007'"},
      {"STATUS round=1 restarts=0 nodes=1 world_size=1000000000", "bad field 'world_size=1000000000'"},
      {"STATUS round=1 restarts=0 nodes=1 world_size=99999999999", "bad field 'world_size=99999999999'"},
      {"STATUS round=1 restarts=0 nodes=1 world_size=4x", "bad field 'world_size=4x'"},
  };
  for (const auto& [line, want] : cases) {
    const ParsedStatusLine p = parse_status_line(line);
    EXPECT_FALSE(p.report) << line;
    EXPECT_NE(p.error.find(want), std::string::npos) << line << " -> " << p.error;
  }
}

}  // namespace
}  // namespace kubedist::contract
