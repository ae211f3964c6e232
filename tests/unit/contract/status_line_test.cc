#include "contract/status_line.h"

#include <gtest/gtest.h>

#include "contract/restart_cause.h"

namespace kubedist::contract {
namespace {

StatusReport running_report() {
  StatusReport r;
  r.round = 3;
  r.restarts = 4;
  r.restarts_by_cause = {{kCauseNodeLost, 1}, {kCauseScale, 2}, {kCauseWorkerCrash, 1}};
  r.nodes = 2;
  r.world_size = 8;
  r.phase = "running";
  r.run_id = "resnet";
  return r;
}

TEST(StatusLine, EncodesEveryFieldInOrderAsOneLine) {
  EXPECT_EQ(encode_status_line(running_report()),
            "STATUS round=3 restarts=4 node_lost=1 scale=2 worker_crash=1 nodes=2 world_size=8 phase=running "
            "run=resnet\n");
}

TEST(StatusLine, RoundTripsWithAndWithoutTheNewline) {
  const StatusReport reports[] = {
      running_report(),
      {-1, 0, {{kCauseNodeLost, 0}, {kCauseScale, 0}, {kCauseWorkerCrash, 0}}, 0, 0, "gathering", "job", std::nullopt,
       {}, std::nullopt, {}, {}},
      {7, 123456789, {{kCauseWorkerCrash, 123456789}}, 10000, 999999999, "over", "a-b.c", std::nullopt, {},
       std::nullopt, {}, {}},
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
      // words without a key, or without a value where a count or number belongs
      {"STATUS round=1 restarts=0 nodes=1 world_size=1 =3", "bad field '=3'"},
      {"STATUS round=1 restarts=0 nodes=1 world_size=1 scale=", "bad field 'scale='"},
      {"STATUS round=1 restarts=0 nodes=1 world_size=1 scale=1.5", "bad field 'scale=1.5'"},
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

TEST(StatusLine, IgnoresAnUnknownFieldWhoseValueIsNoCount) {
  // A newer launcher's field: an older reader goes on with what it knows.
  const ParsedStatusLine p = parse_status_line("STATUS round=1 restarts=0 nodes=1 world_size=1 color=red run=j");
  ASSERT_TRUE(p.report) << p.error;
  EXPECT_TRUE(p.report->restarts_by_cause.empty());
  EXPECT_EQ(p.report->run_id, "j");
}

TEST(StatusLine, CarriesTheSparesAndTheStandInsOnlyWhenThereAreAny) {
  StatusReport r = running_report();
  r.spares = {3, 5};
  r.stand_ins = {{1, 4}, {2, 6}};
  const std::string line = encode_status_line(r);
  EXPECT_EQ(line, "STATUS round=3 restarts=4 node_lost=1 scale=2 worker_crash=1 nodes=2 world_size=8 phase=running "
                  "run=resnet spares=[3,5] stand_ins=[1:4,2:6]\n");
  const ParsedStatusLine back = parse_status_line(line);
  ASSERT_TRUE(back.report) << back.error;
  EXPECT_EQ(*back.report, r);
  // A reader older than the fields ignores them (their values are no counts): no restart cause named spares.
  const ParsedStatusLine one = parse_status_line("STATUS round=1 restarts=0 nodes=1 world_size=1 spares=[3]");
  ASSERT_TRUE(one.report) << one.error;
  EXPECT_EQ(one.report->spares, std::vector<int>{3});
  EXPECT_TRUE(one.report->restarts_by_cause.empty());
  for (const std::string bad : {"spares=[3,2]", "spares=[x]", "spares=3", "stand_ins=[1:]", "stand_ins=[2:1,1:3]",
                                "stand_ins=[1-2]", "stand_ins=[:2]"}) {
    const ParsedStatusLine p = parse_status_line("STATUS round=1 restarts=0 nodes=1 world_size=1 " + bad);
    EXPECT_FALSE(p.report) << bad;
    EXPECT_NE(p.error.find("bad field '" + bad + "'"), std::string::npos) << p.error;
  }
}

TEST(StatusLine, CarriesTheNewestCheckpointAsOneWordNoOlderReaderTakesForACount) {
  StatusReport r = running_report();
  r.checkpoint = StatusCheckpoint{1500, "periodic", 16, 4200};
  const std::string line = encode_status_line(r);
  EXPECT_EQ(line, "STATUS round=3 restarts=4 node_lost=1 scale=2 worker_crash=1 nodes=2 world_size=8 phase=running "
                  "run=resnet ckpt=1500:periodic:16:4200\n");
  const ParsedStatusLine back = parse_status_line(line);
  ASSERT_TRUE(back.report) << back.error;
  EXPECT_EQ(*back.report, r);
  EXPECT_FALSE(status_line_detail::parse_number("1500:periodic:16:4200")) << "an older reader skips it";
  for (const std::string bad : {"ckpt=", "ckpt=1500", "ckpt=1500:periodic:16", "ckpt=1500:Periodic:16:0",
                                "ckpt=x:periodic:16:0", "ckpt=1500:periodic:16:0:9", "ckpt=-1:periodic:1:0"}) {
    const ParsedStatusLine p = parse_status_line("STATUS round=1 restarts=0 nodes=1 world_size=1 " + bad);
    EXPECT_FALSE(p.report) << bad;
  }
}

StatusProgress full_progress() {
  StatusProgress p;
  p.step = 1200;
  p.total_steps = 5000;
  p.epoch = 2;
  p.samples = 76800000000;  // more than an int holds
  p.steps_per_second = 2.5;
  p.step_age_ms = 400;
  p.up_ms = 600000;
  p.busy_ms = 540000;
  p.lost_ms = 12000;
  p.metrics = {{"loss", 0.53125}, {"lr", 1e-05}, {"grad_norm", -3.0}};
  p.slow_rank = 3;
  p.slow_node_rank = 1;
  p.slow_ratio = 1.85;
  p.slow_step_seconds = 0.21;
  p.hang_message = "rank 1 on j-node-1 stuck 31 s in recv (train.py:57) 100% \xc3\xa9\ttab\nline";
  p.hang_age_ms = 90000;
  return p;
}

TEST(StatusLine, CarriesTheJobsProgressAfterTheRestartFields) {
  StatusReport r = running_report();
  r.progress = StatusProgress{};
  r.progress->step = 7;
  r.progress->steps_per_second = 2;
  EXPECT_EQ(encode_status_line(r),
            "STATUS round=3 restarts=4 node_lost=1 scale=2 worker_crash=1 nodes=2 world_size=8 phase=running "
            "run=resnet step=7 sps=2.0 age_ms=0 up_ms=0 busy_ms=0 lost_ms=0\n");
  r.progress = full_progress();
  const std::string line = encode_status_line(r);
  EXPECT_NE(line.find(" step=1200 total=5000 epoch=2 samples=76800000000 sps=2.5 age_ms=400 up_ms=600000 "
                      "busy_ms=540000 lost_ms=12000 m.grad_norm=-3 m.loss=0.53125 m.lr=1e-05 slow=3,1,1.85,0.21 "
                      "hang_age_ms=90000 hang_msg=rank%201%20on%20j-node-1%20stuck%2031%20s%20in%20recv%20"
                      "(train.py:57)%20100%25%20%C3%A9%09tab%0Aline\n"),
            std::string::npos)
      << line;
}

TEST(StatusLine, RoundTripsProgress) {
  StatusReport r = running_report();
  r.restarts_by_cause[kCauseHang] = 1;
  r.progress = full_progress();
  const ParsedStatusLine back = parse_status_line(encode_status_line(r));
  ASSERT_TRUE(back.report) << back.error;
  EXPECT_EQ(*back.report, r);
  r.progress = StatusProgress{};  // step 0 and nothing else reported
  const ParsedStatusLine bare = parse_status_line(encode_status_line(r));
  ASSERT_TRUE(bare.report) << bare.error;
  EXPECT_EQ(*bare.report, r);
}

TEST(StatusLine, AnOlderReaderWouldRefuseProgressRatherThanCountItAsARestart) {
  // The readers before progress took every key=count as a cause: "sps" always has a '.', which they refused.
  StatusReport r = running_report();
  r.progress = StatusProgress{};
  r.progress->steps_per_second = 3;
  EXPECT_NE(encode_status_line(r).find(" sps=3.0 "), std::string::npos);
  r.progress->steps_per_second = 1e20;
  EXPECT_NE(encode_status_line(r).find(" sps=1e+20 "), std::string::npos);
}

TEST(StatusLine, NamesTheLostNodesInBracketsWhichNoReaderTakesForACount) {
  StatusReport r = running_report();
  EXPECT_EQ(encode_status_line(r).find(" lost="), std::string::npos);  // none lost: no field
  r.lost_nodes = {1};
  const std::string line = encode_status_line(r);
  EXPECT_NE(line.find(" run=resnet lost=[1]\n"), std::string::npos) << line;
  // A reader older than the field ignores it: its value is neither a count nor a number.
  EXPECT_FALSE(status_line_detail::is_count("[1]", false));
  EXPECT_FALSE(status_line_detail::parse_number("[1]"));
  r.lost_nodes = {0, 3, 17};
  const ParsedStatusLine back = parse_status_line(encode_status_line(r));
  ASSERT_TRUE(back.report) << back.error;
  EXPECT_EQ(*back.report, r);
  EXPECT_EQ(parse_status_line("STATUS round=1 restarts=1 nodes=1 world_size=1 lost=[]").report->lost_nodes,
            std::vector<int>{});
}

TEST(StatusLine, RefusesMalformedLostNodes) {
  std::string many = "[";
  for (size_t i = 0; i <= kMaxLostNodes; ++i) many += (i ? "," : "") + std::to_string(i);
  many += "]";
  for (const std::string& value : {std::string("1"), std::string("[1"), std::string("1]"), std::string("[1,]"),
                                   std::string("[,1]"), std::string("[-1]"), std::string("[01]"), std::string("[3,1]"),
                                   std::string("[2,2]"), std::string("[a]"), std::string("[9999999999]"), many}) {
    const std::string line = "STATUS round=1 restarts=1 nodes=1 world_size=1 lost=" + value;
    const ParsedStatusLine p = parse_status_line(line);
    EXPECT_FALSE(p.report) << value;
    EXPECT_NE(p.error.find("bad field 'lost="), std::string::npos) << value << ": " << p.error;
  }
}

TEST(StatusLine, CarriesTheCountsTakenOverFromAnEarlierNodeZero) {
  StatusReport r = running_report();
  EXPECT_EQ(encode_status_line(r).find(" carried="), std::string::npos);  // an older launcher's report
  r.carried = std::map<std::string, int>{};
  EXPECT_NE(encode_status_line(r).find(" run=resnet carried=[]\n"), std::string::npos) << encode_status_line(r);
  r.carried = std::map<std::string, int>{{kCauseNodeLost, 1}, {kCauseWorkerCrash, 2}};
  const std::string line = encode_status_line(r);
  EXPECT_NE(line.find(" carried=[node_lost:1,worker_crash:2]"), std::string::npos) << line;
  const ParsedStatusLine back = parse_status_line(line);
  ASSERT_TRUE(back.report) << back.error;
  EXPECT_EQ(*back.report, r);
  // Readers older than the field ignore it: its value is neither a count nor a number.
  EXPECT_FALSE(status_line_detail::is_count("[node_lost:1]", false));
  EXPECT_FALSE(status_line_detail::parse_number("[]"));
}

TEST(StatusLine, RefusesMalformedCarriedCounts) {
  std::string many = "[";
  for (char c = 'a'; c <= 'q'; ++c) many += std::string(c == 'a' ? "" : ",") + c + ":1";  // 17 causes
  many += "]";
  for (const std::string& value : {std::string("1"), std::string("["), std::string("[a]"), std::string("[a:]"),
                                   std::string("[:1]"), std::string("[A:1]"), std::string("[a:1,a:2]"),
                                   std::string("[a:-1]"), std::string("[a:01]"), std::string("[a:1,]"),
                                   std::string("[a:9999999999]"), many}) {
    const ParsedStatusLine p = parse_status_line("STATUS round=1 restarts=1 nodes=1 world_size=1 carried=" + value);
    EXPECT_FALSE(p.report) << value;
    EXPECT_NE(p.error.find("bad field 'carried="), std::string::npos) << value << ": " << p.error;
  }
}

TEST(StatusLine, KeepsTheLineShortWhateverTheWorkersReported) {
  StatusReport r = running_report();
  r.progress = full_progress();
  for (int i = 0; i < 20; ++i) r.progress->metrics["metric_with_a_long_name_" + std::to_string(100 + i)] = -1e-300;
  r.progress->metrics["bad name"] = 1;
  r.progress->metrics[std::string(40, 'x')] = 1;
  r.progress->hang_message = std::string(5000, '\n');  // every byte escaped to three
  const std::string line = encode_status_line(r);
  const ParsedStatusLine back = parse_status_line(line);
  ASSERT_TRUE(back.report) << back.error;
  EXPECT_EQ(back.report->progress->metrics.size(), kMaxStatusMetrics);
  EXPECT_FALSE(back.report->progress->metrics.count("bad name"));
  EXPECT_EQ(back.report->progress->hang_message, std::string(kMaxHangMessage, '\n'));
  // The poller reads at most 4096 bytes, the signed framing ("MAC n <64 hex> ") included.
  EXPECT_LT(line.size() + 100, 4096u) << line.size();
}

// Python stacks in Chinese: the cut at kMaxHangMessage bytes falls before a character, never inside one, at every
// offset (issue 39 item 2).
TEST(StatusLine, CutsAHangMessageBeforeACharacterThatDoesNotFitWhole) {
  for (const std::string prefix : {"", "x", "xy"}) {
    SCOPED_TRACE("prefix of " + std::to_string(prefix.size()) + " bytes");
    std::string message = prefix;
    while (message.size() < 2 * kMaxHangMessage) message += "在等待集合通信";
    StatusReport r = running_report();
    r.progress = full_progress();
    r.progress->hang_message = message;
    const ParsedStatusLine back = parse_status_line(encode_status_line(r));
    ASSERT_TRUE(back.report) << back.error;
    const std::string& got = back.report->progress->hang_message;
    EXPECT_LE(got.size(), kMaxHangMessage);
    EXPECT_GT(got.size(), kMaxHangMessage - 3);
    EXPECT_EQ(message.compare(0, got.size(), got), 0);  // a prefix of the message
    EXPECT_EQ((got.size() - prefix.size()) % 3, 0u);  // whole 3-byte characters only
  }
  EXPECT_EQ(cut_hang_message("short"), "short");
}

TEST(StatusLine, RefusesMalformedProgress) {
  const std::string head = "STATUS round=1 restarts=0 nodes=1 world_size=1 run=j ";
  const std::pair<std::string, std::string> cases[] = {
      {"step=-1", "bad field 'step=-1'"},
      {"step=1e3", "bad field 'step=1e3'"},
      {"step=1 total=x", "bad field 'total=x'"},
      {"step=1 samples=1234567890123456789", "bad field 'samples=1234567890123456789'"},
      {"step=1 sps=nan", "bad field 'sps=nan'"},
      {"step=1 sps=inf", "bad field 'sps=inf'"},
      {"step=1 sps=1e999", "bad field 'sps=1e999'"},
      {"step=1 sps=-0.5", "bad field 'sps=-0.5'"},
      {"step=1 sps=0x10", "bad field 'sps=0x10'"},
      {"step=1 m.=1", "bad field 'm.=1'"},
      {"step=1 m.bad-name=1", "bad field 'm.bad-name=1'"},
      {"step=1 m.loss=", "bad field 'm.loss='"},
      {"step=1 m.a=1 m.b=1 m.c=1 m.d=1 m.e=1 m.f=1 m.g=1 m.h=1 m.i=1", "bad field 'm.i=1'"},
      {"step=1 slow=1,0,2", "bad field 'slow=1,0,2'"},
      {"step=1 slow=1,0,2,0.5,9", "bad field 'slow=1,0,2,0.5,9'"},
      {"step=1 slow=-1,0,2,0.5", "bad field 'slow=-1,0,2,0.5'"},
      {"step=1 slow=1,0,x,0.5", "bad field 'slow=1,0,x,0.5'"},
      {"step=1 hang_msg=%G1", "bad field 'hang_msg=%G1'"},
      {"step=1 hang_msg=ab%4", "bad field 'hang_msg=ab%4'"},
      {"step=1 hang_msg=" + std::string(kMaxHangMessage + 1, 'a'), "bad field 'hang_msg=aaa"},
      {"sps=1.0 age_ms=3", "has progress without step"},
  };
  for (const auto& [words, want] : cases) {
    const ParsedStatusLine p = parse_status_line(head + words);
    EXPECT_FALSE(p.report) << words;
    EXPECT_NE(p.error.find(want), std::string::npos) << words << " -> " << p.error;
  }
}

}  // namespace
}  // namespace kubedist::contract
