// The progress channel's pure parts: a worker's report, one node's ranks, node 0's view of the job (step, rate,
// stragglers, hangs, goodput) with a fake clock, the stacks' summary, and the worker's environment.
#include <gtest/gtest.h>

#include "progress/job_progress.h"
#include "progress/local_progress.h"
#include "progress/python_helper.h"
#include "progress/stacks.h"
#include "progress/worker_report.h"
#include "util/fs_util.h"

namespace kubedist::launcher {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(WorkerReport, ReadsTheDocumentedFields) {
  auto r = parse_worker_report(
      R"({"step": 120, "total_steps": 1000, "epoch": 1, "samples": 15360, "loss": 0.53, "lr": 1e-3,)"
      R"( "step_time": 0.25, "pid": 4242, "stack_signal": 39, "note": "text", "flag": true, "nested": {"a": 1}})"
      "\n");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->step, 120);
  EXPECT_EQ(r->total_steps, 1000);
  EXPECT_EQ(r->epoch, 1);
  EXPECT_EQ(r->samples, 15360);
  EXPECT_EQ(r->step_time, 0.25);
  EXPECT_EQ(r->pid, 4242);
  EXPECT_EQ(r->stack_signal, 39);
  EXPECT_EQ(r->metrics, (std::map<std::string, double>{{"loss", 0.53}, {"lr", 1e-3}}));
  auto bare = parse_worker_report(R"({"step":0})");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(*bare, WorkerReport{});
}

TEST(WorkerReport, RefusesWhatIsNoReportSayingWhy) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "not JSON"},
      {"step=3", "not JSON"},
      {R"({"step": 1)", "not JSON"},
      {"[1, 2]", "no JSON object"},
      {"42", "no JSON object"},
      {R"({"loss": 1})", "without \"step\""},
      {R"({"step": -1})", "\"step\" is no count: -1"},
      {R"({"step": 1.5})", "\"step\" is no count: 1.5"},
      {R"({"step": "3"})", "\"step\" is no count: \"3\""},
      {R"({"step": 1e400})", "not JSON"},
      {R"({"step": 3, "total_steps": -5})", "\"total_steps\" is no count"},
      {R"({"step": 3, "epoch": "one"})", "\"epoch\" is no count"},
      {std::string(5000, ' ') + R"({"step": 1})", "a report of 5011 bytes (at most 4096)"},
  };
  for (const auto& [text, want] : cases) {
    auto r = parse_worker_report(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().find(want), std::string::npos) << text << " -> " << r.error();
  }
}

TEST(WorkerReport, KeepsAFewWellNamedFiniteMetrics) {
  std::string text = R"({"step": 1, "bad name": 1, "x-y": 2, "nan_is_null": null, "neg": -2)";
  for (int i = 0; i < 20; ++i) text += ", \"m" + std::to_string(10 + i) + "\": " + std::to_string(i);
  auto r = parse_worker_report(text + ", \"" + std::string(33, 'a') + "\": 1}");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->metrics.size(), kMaxReportMetrics);
  EXPECT_FALSE(r->metrics.count("bad name"));
  EXPECT_FALSE(r->metrics.count("x-y"));
  EXPECT_EQ(r->metrics.begin()->first, "m10");  // the first by name
}

std::string take(LocalProgress& p, int local_rank, const std::string& datagram, Clock::time_point t) {
  return p.take(local_rank, datagram, datagram.size(), t);
}

TEST(LocalProgress, TracksEachRanksStepAndTimeAndWarnsOncePerKind) {
  LocalProgress p(5);
  p.start_round({4, 5});
  Clock::time_point t{};
  EXPECT_EQ(take(p, 0, R"({"step": 1, "total_steps": 10, "loss": 2, "pid": 77, "stack_signal": 39})", t), "");
  EXPECT_TRUE(p.changed());
  EXPECT_EQ(take(p, 1, R"({"step": 1})", t), "");
  t += 1s;
  EXPECT_EQ(take(p, 0, R"({"step": 3, "loss": 1})", t), "");       // 0.5 s per step, from the arrivals
  EXPECT_EQ(take(p, 1, R"({"step": 2, "step_time": 0.9})", t), "");  // the worker's own measure wins
  NodeProgress s = p.summary();
  EXPECT_FALSE(p.changed());
  EXPECT_EQ(s.ranks, (std::vector<RankSummary>{{4, 3, 0.5}, {5, 2, 0.9}}));
  EXPECT_EQ(s.metrics, (std::map<std::string, double>{{"loss", 1}}));
  EXPECT_EQ(s.total_steps, std::nullopt);  // rank 4's latest report has none
  EXPECT_EQ(p.step_seconds(), (std::map<int, double>{{4, 0.5}, {5, 0.9}}));
  auto targets = p.stack_targets();
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0].pid, 77);  // said once, kept
  EXPECT_EQ(targets[0].signal, 39);
  EXPECT_EQ(targets[1].pid, 0);

  std::string warning = take(p, 1, "not json", t);
  EXPECT_NE(warning.find("ignoring a progress report from rank 5: a report that is not JSON"), std::string::npos);
  EXPECT_EQ(take(p, 1, "{}", t), "");  // only once
  EXPECT_EQ(p.take(1, std::string(kMaxReportBytes + 1, 'x'), 100000, t), "");
  EXPECT_EQ(p.malformed(), 3u);
  // A flood: 5 a second are taken, the rest of each second dropped unread, with one warning.
  t += 2s;
  int warnings = 0;
  for (int i = 0; i < 1000; ++i) warnings += !take(p, 0, R"({"step": 4})", t).empty();
  EXPECT_EQ(warnings, 1);
  EXPECT_EQ(p.dropped(), 995u);
  t += 1s;
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(take(p, 0, R"({"step": 5})", t), "");
  EXPECT_EQ(p.dropped(), 1990u);
  EXPECT_EQ(p.summary().ranks[0].step, 5);
  // A new round forgets the old workers.
  p.start_round({0, 1});
  EXPECT_TRUE(p.summary().ranks.empty());
  EXPECT_EQ(take(p, 7, R"({"step": 1})", t), "");  // no such local rank: ignored
}

// kubedist.checkpoint's report from rank 0: a complete checkpoint, which says nothing of progress (a job that only
// checkpoints is never judged hung), kept across rounds, and aged by node 0 from when it heard of it.
TEST(Checkpoints, ACheckpointReportIsNoStepAndNodeZeroKeepsTheNewestAcrossRounds) {
  auto r = parse_worker_report(R"({"ckpt_step": 500, "ckpt_reason": "periodic", "ckpt_ranks": 16})");
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE(r->has_step);
  EXPECT_EQ(r->checkpoint, (contract::StatusCheckpoint{500, "periodic", 16, 0}));
  EXPECT_TRUE(r->metrics.empty()) << "no ckpt_ field is a metric";
  for (const std::string bad : {R"({"ckpt_step": 5})", R"({"ckpt_step": 5, "ckpt_reason": "Periodic", "ckpt_ranks": 2})",
                                R"({"ckpt_step": -5, "ckpt_reason": "periodic", "ckpt_ranks": 2})",
                                R"({"ckpt_step": 5, "ckpt_reason": "periodic", "ckpt_ranks": 0})",
                                R"({"ckpt_step": 5, "ckpt_reason": "a reason with spaces", "ckpt_ranks": 2})"})
    EXPECT_FALSE(parse_worker_report(bad)) << bad;
  LocalProgress local;
  local.start_round({0, 1});
  Clock::time_point t{};
  EXPECT_EQ(take(local, 0, R"({"ckpt_step": 500, "ckpt_reason": "periodic", "ckpt_ranks": 2})", t), "");
  EXPECT_TRUE(local.changed());
  NodeProgress s = local.summary();
  EXPECT_TRUE(s.ranks.empty()) << "no rank reported a step";
  ASSERT_TRUE(s.checkpoint);
  EXPECT_EQ(s.checkpoint->step, 500);
  local.start_round({0, 1});
  EXPECT_EQ(local.summary().checkpoint, s.checkpoint) << "a new round keeps it";

  JobProgress job({std::chrono::milliseconds(10000)}, t);
  job.start_round(0, t);
  job.update(0, 0, s, t);
  EXPECT_FALSE(job.status(t)) << "no step: no progress";
  EXPECT_FALSE(job.hang_due(t + 1h)) << "never judged hung";
  EXPECT_EQ(job.checkpoint(t + 3s), (contract::StatusCheckpoint{500, "periodic", 2, 3000}));
  job.start_round(1, t + 4s);
  job.update(0, 0, s, t + 5s);  // the same one, from an earlier round's report: still heard at t
  EXPECT_EQ(job.checkpoint(t + 5s)->age_ms, 5000);
}

// Rank 0 resumed from a checkpoint saved 90 s ago: node 0's status names it at once, aged from when it was saved.
TEST(Checkpoints, TheCheckpointResumedFromIsReportedWithItsAge) {
  auto r = parse_worker_report(
      R"({"ckpt_step": 61, "ckpt_reason": "termination", "ckpt_ranks": 4, "ckpt_age_ms": 90000})");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->checkpoint, (contract::StatusCheckpoint{61, "termination", 4, 90000}));
  for (const std::string bad : {R"({"ckpt_step": 6, "ckpt_reason": "periodic", "ckpt_ranks": 2, "ckpt_age_ms": -1})",
                                R"({"ckpt_step": 6, "ckpt_reason": "periodic", "ckpt_ranks": 2, "ckpt_age_ms": 1.5})",
                                R"({"ckpt_step": 6, "ckpt_reason": "periodic", "ckpt_ranks": 2,
                                    "ckpt_age_ms": 99999999999999999})"})
    EXPECT_FALSE(parse_worker_report(bad)) << bad;
  LocalProgress local;
  local.start_round({0, 1});
  Clock::time_point t{};
  take(local, 0, R"({"ckpt_step": 61, "ckpt_reason": "termination", "ckpt_ranks": 4, "ckpt_age_ms": 90000})", t);
  const NodeProgress s = local.summary();
  JobProgress job({std::chrono::milliseconds(10000)}, t);
  job.start_round(0, t);
  job.update(0, 0, s, t + 1s);
  EXPECT_EQ(job.checkpoint(t + 3s), (contract::StatusCheckpoint{61, "termination", 4, 92000}));
}

// Just in time: a worker says it answers the launcher's checkpoint requests, then answers one; the launcher waits
// for every local worker's answer, and a failed answer is no checkpoint.
TEST(Checkpoints, WorkersSayTheyAnswerRequestsAndTheLauncherCountsTheirAnswers) {
  auto armed = parse_worker_report(R"({"ckpt_armed": 1})");
  ASSERT_TRUE(armed) << armed.error();
  EXPECT_TRUE(armed->armed);
  EXPECT_FALSE(armed->has_step);
  EXPECT_FALSE(armed->checkpoint);
  auto saved = parse_worker_report(
      R"({"ckpt_request": "saved", "ckpt_step": 57, "ckpt_reason": "termination", "ckpt_ranks": 2})");
  ASSERT_TRUE(saved) << saved.error();
  EXPECT_EQ(saved->answer, WorkerReport::Answer::kSaved);
  EXPECT_EQ(saved->checkpoint, (contract::StatusCheckpoint{57, "termination", 2, 0}));
  auto failed = parse_worker_report(
      R"({"ckpt_request": "failed", "ckpt_step": 57, "ckpt_reason": "termination", "ckpt_ranks": 2})");
  ASSERT_TRUE(failed) << failed.error();
  EXPECT_EQ(failed->answer, WorkerReport::Answer::kFailed);
  EXPECT_FALSE(failed->checkpoint) << "a failed save is no checkpoint";
  for (const std::string bad : {R"({"ckpt_armed": 2})", R"({"ckpt_armed": true})", R"({"ckpt_request": "maybe",
                                "ckpt_step": 5, "ckpt_reason": "termination", "ckpt_ranks": 2})",
                                R"({"ckpt_request": "saved"})", R"({"ckpt_request": 1, "step": 3})"})
    EXPECT_FALSE(parse_worker_report(bad)) << bad;

  LocalProgress local;
  local.start_round({4, 5});
  Clock::time_point t{};
  EXPECT_FALSE(local.all_armed());
  take(local, 0, R"({"ckpt_armed": 1})", t);
  EXPECT_FALSE(local.all_armed()) << "one of two";
  take(local, 1, R"({"ckpt_armed": 1})", t);
  EXPECT_TRUE(local.all_armed());
  local.forget_answers();
  EXPECT_FALSE(local.all_answered());
  take(local, 1, R"({"ckpt_request": "saved", "ckpt_step": 57, "ckpt_reason": "termination", "ckpt_ranks": 8})", t);
  EXPECT_FALSE(local.all_answered());
  take(local, 0, R"({"ckpt_request": "saved", "ckpt_step": 57, "ckpt_reason": "termination", "ckpt_ranks": 8})", t);
  EXPECT_TRUE(local.all_answered());
  EXPECT_FALSE(local.any_failed());
  EXPECT_EQ(local.answered_step(), 57);
  EXPECT_EQ(local.summary().checkpoint->reason, "termination");
  local.forget_answers();
  take(local, 0, R"({"ckpt_request": "failed", "ckpt_step": 58, "ckpt_reason": "termination", "ckpt_ranks": 8})", t);
  take(local, 1, R"({"ckpt_request": "failed", "ckpt_step": 58, "ckpt_reason": "termination", "ckpt_ranks": 8})", t);
  EXPECT_TRUE(local.all_answered());
  EXPECT_TRUE(local.any_failed());
  EXPECT_FALSE(local.answered_step());
  EXPECT_EQ(local.summary().checkpoint->step, 57) << "the failed one is no checkpoint";
  local.start_round({4, 5});
  EXPECT_FALSE(local.all_armed()) << "new workers say it again";
}

NodeProgress ranks_at(std::vector<RankSummary> ranks) {
  NodeProgress p;
  p.ranks = std::move(ranks);
  return p;
}

TEST(JobProgress, TheJobsStepIsItsSlowestRanksAndItsRateTheRecentOne) {
  Clock::time_point t0{};
  JobProgress j({}, t0);
  EXPECT_EQ(j.status(t0), std::nullopt);
  j.start_round(0, t0);
  NodeProgress node0 = ranks_at({{0, 10, 0.1}, {1, 11, 0.1}});
  node0.total_steps = 100;
  node0.metrics = {{"loss", 0.5}};
  j.update(0, 0, node0, t0 + 1s);
  j.update(0, 1, ranks_at({{2, 9, 0.1}}), t0 + 1s);
  j.update(1, 1, ranks_at({{2, 50, 0.1}}), t0 + 1s);  // another round's: stale
  auto s = j.status(t0 + 1s);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, 9);
  EXPECT_EQ(s->total_steps, 100);
  EXPECT_EQ(s->metrics.at("loss"), 0.5);
  j.update(0, 0, ranks_at({{0, 30, 0.1}, {1, 30, 0.1}}), t0 + 3s);
  j.update(0, 1, ranks_at({{2, 29, 0.1}}), t0 + 3s);
  s = j.status(t0 + 3s);
  EXPECT_EQ(s->step, 29);
  EXPECT_NEAR(s->steps_per_second, 10, 1e-9);  // 20 steps in 2 s
  EXPECT_EQ(s->step_age_ms, 0);
  EXPECT_EQ(j.status(t0 + 5s)->step_age_ms, 2000);
  EXPECT_NEAR(j.status(t0 + 5s)->steps_per_second, 5, 1e-9);  // a stall lowers it
}

TEST(JobProgress, NamesARankPersistentlySlowerThanTheOthersAndForgetsItWhenItCatchesUp) {
  Clock::time_point t{};
  JobProgress j({0ms, 1.5, 5}, t);
  j.start_round(0, t);
  auto report = [&](std::int64_t step, double slow) {
    t += 1s;
    j.update(0, 0, ranks_at({{0, step, 0.1}, {1, step, 0.11}}), t);
    j.update(0, 1, ranks_at({{2, step, 0.1}, {3, step, slow}}), t);
  };
  report(1, 0.2);
  report(4, 0.2);
  EXPECT_EQ(j.status(t)->slow_rank, -1);  // 3 steps slow: not yet persistent
  report(6, 0.2);
  auto s = j.status(t);
  EXPECT_EQ(s->slow_rank, 3);
  EXPECT_EQ(s->slow_node_rank, 1);
  EXPECT_NEAR(s->slow_ratio, 2.0, 1e-9);  // over the median of the others (0.1, 0.1, 0.11)
  EXPECT_EQ(s->slow_step_seconds, 0.2);
  report(7, 0.12);
  EXPECT_EQ(j.status(t)->slow_rank, -1);
  // Two ranks: the median of the other is the other.
  JobProgress two({0ms, 1.5, 0}, t);
  two.start_round(0, t);
  two.update(0, 0, ranks_at({{0, 5, 1.0}, {1, 5, 1.6}}), t);
  EXPECT_EQ(two.status(t)->slow_rank, 1);
  // All alike: nobody.
  JobProgress clean({0ms, 1.5, 0}, t);
  clean.start_round(0, t);
  clean.update(0, 0, ranks_at({{0, 5, 1.0}, {1, 5, 1.2}, {2, 5, 0.9}}), t);
  EXPECT_EQ(clean.status(t)->slow_rank, -1);
}

TEST(JobProgress, AJobThatStopsAdvancingHangsAfterTheTimeoutAndOneThatNeverReportedNever) {
  Clock::time_point t{};
  JobProgress j({30s, 1.5, 20}, t);
  j.start_round(0, t);
  EXPECT_EQ(j.next_hang_check(), std::nullopt);  // no step reported: never judged
  EXPECT_FALSE(j.hang_due(t + 1h));
  j.update(0, 0, ranks_at({{0, 4, 0.1}, {1, 4, 0.1}}), t + 5s);
  j.update(0, 1, ranks_at({{2, 3, 0.1}}), t + 6s);
  EXPECT_EQ(j.next_hang_check(), t + 36s);
  EXPECT_FALSE(j.hang_due(t + 35s));
  EXPECT_TRUE(j.hang_due(t + 36s));
  const auto stuck = j.stuck_ranks(t + 36s);
  ASSERT_EQ(stuck.size(), 3u);
  EXPECT_EQ(stuck[0], (StuckRank{2, 1, 3, 30000ms}));  // furthest behind first
  EXPECT_EQ(stuck[1], (StuckRank{0, 0, 4, 31000ms}));
  j.hang_handling();
  EXPECT_FALSE(j.hang_due(t + 40s));  // being handled
  j.hang_detected("no step for 30 s", t + 38s);
  j.incident(t + 38s);
  j.start_round(1, t + 38s);
  EXPECT_EQ(j.next_hang_check(), std::nullopt);  // the new round waits for its own first step
  auto s = j.status(t + 40s);
  EXPECT_EQ(s->hang_message, "no step for 30 s");
  EXPECT_EQ(s->hang_age_ms, 2000);
  // Finished training (every rank at total_steps) makes no steps while it saves: no hang.
  JobProgress done({30s, 1.5, 20}, t);
  done.start_round(0, t);
  NodeProgress last = ranks_at({{0, 10, 0.1}});
  last.total_steps = 10;
  done.update(0, 0, last, t);
  EXPECT_EQ(done.next_hang_check(), std::nullopt);
}

TEST(JobProgress, CountsTimeFromAnIncidentToTheNextStepAsLostAndStepsAsBusy) {
  Clock::time_point t0{};
  JobProgress j({}, t0);
  j.start_round(0, t0);
  j.update(0, 0, ranks_at({{0, 1, 0}}), t0 + 10s);  // 10 s of start-up: neither busy nor lost
  j.update(0, 0, ranks_at({{0, 50, 0}}), t0 + 60s);
  j.incident(t0 + 60500ms);                          // a worker crashed after its last step
  auto s = j.status(t0 + 62s);
  EXPECT_EQ(s->busy_ms, 50000);
  EXPECT_EQ(s->lost_ms, 2000);  // and counting, from the last step
  j.start_round(1, t0 + 65s);
  j.incident(t0 + 66s);  // it fails again before a step: the same window goes on
  j.start_round(2, t0 + 67s);
  j.update(2, 0, ranks_at({{0, 45, 0}}), t0 + 70s);  // resumed from a checkpoint
  j.update(2, 0, ranks_at({{0, 55, 0}}), t0 + 80s);
  s = j.status(t0 + 90s);
  EXPECT_EQ(s->lost_ms, 10000);   // 60 s to 70 s
  EXPECT_EQ(s->busy_ms, 60000);   // 10-60 and 70-80
  EXPECT_EQ(s->up_ms, 90000);
  EXPECT_EQ(s->step, 55);
}

TEST(JobProgress, TheHangMessageNamesEachStuckRankAndStaysShort) {
  const std::vector<StuckRank> stuck{{1, 1, 4, 31000ms}, {0, 0, 5, 30400ms}, {2, 1, 5, 30000ms}};
  const std::map<int, StackSummary> stacks{
      {1, {"j-node-1", "in recv (train.py:40)", "recv distributed_c10d.py:1120 < main train.py:40"}},
      {0, {"j-node-0", "in all_reduce (train.py:45)", "all_reduce distributed_c10d.py:1536"}}};
  EXPECT_EQ(hang_message(stuck, stacks, 30400ms, 30000ms),
            "no step for 30 s (hang timeout 30 s): rank 1 on j-node-1 stuck 31 s at step 4 in recv (train.py:40) "
            "[recv distributed_c10d.py:1120 < main train.py:40]; rank 0 on j-node-0 stuck 30 s at step 5 in "
            "all_reduce (train.py:45) [all_reduce distributed_c10d.py:1536]; rank 2 on node rank 1 stuck 30 s at "
            "step 5 (no stack)");
  std::vector<StuckRank> many;
  for (int r = 0; r < 500; ++r) many.push_back({r, r / 8, 7, 30000ms});
  const std::string m = hang_message(many, stacks, 30000ms, 30000ms);
  EXPECT_LE(m.size(), contract::kMaxHangMessage);
  EXPECT_NE(m.find(" more"), std::string::npos) << m;
}

TEST(JobProgress, TheHangMessageNamesFirstTheRankWaitingWhereTheOthersDoNot) {
  // All at step 4: ranks 0, 2 and 3 wait in the step's all_reduce for rank 1, which waits in a recv of its own.
  const std::vector<StuckRank> stuck{{0, 0, 4, 9000ms}, {1, 0, 4, 9000ms}, {2, 1, 4, 9000ms}, {3, 1, 4, 9000ms}};
  const StackSummary waiting{"j-node-0", "in backward (train.py:81)", ""};
  const std::map<int, StackSummary> stacks{{0, waiting},
                                           {1, {"j-node-0", "in recv (train.py:79)", ""}},
                                           {2, {"j-node-1", "in backward (train.py:81)", ""}},
                                           {3, {"j-node-1", "in backward (train.py:81)", ""}}};
  const std::string m = hang_message(stuck, stacks, 9000ms, 8000ms);
  EXPECT_EQ(m.rfind("no step for 9 s (hang timeout 8 s): rank 1 on j-node-0 stuck 9 s at step 4 in recv", 0), 0u) << m;
  EXPECT_NE(m.find("; rank 0 on j-node-0 stuck 9 s at step 4 in backward"), std::string::npos) << m;
}

TEST(Stacks, SummarizesTheMainThreadWhereTheProgramCalledIn) {
  const std::string dump =
      "Thread 0x00007f3b2a7fc700 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n"
      "\n"
      "Current thread 0x00007f3b33f3a740 (most recent call first):\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1536 in all_reduce\n"
      "  File \"/work/job/train.py\", line 57 in step\n"
      "  File \"/work/job/train.py\", line 80 in <module>\n";
  const StackSummary s = summarize_stacks(dump);
  EXPECT_EQ(s.where, "in all_reduce (train.py:57)");
  EXPECT_EQ(s.trace, "all_reduce distributed_c10d.py:1536 < step train.py:57 < <module> train.py:80");
  // The main thread is the one at a module's top level, whichever thread took the signal.
  const std::string other =
      "Thread 0x1 (most recent call first):\n"
      "  File \"/x/train.py\", line 9 in <module>\n"
      "Current thread 0x2 (most recent call first):\n"
      "  File \"/x/helper.py\", line 3 in loop\n";
  EXPECT_EQ(summarize_stacks(other).where, "in <module> (train.py:9)");
  EXPECT_EQ(summarize_stacks("").where, "");
  EXPECT_EQ(summarize_stacks("garbage\nThread 0x1 (most recent call first):\n  nonsense\n").where, "");
}

TEST(ProgressEnv, ConnectsTheWorkerAndAppendsTheHelperToPythonPath) {
  Env env{{"PYTHONPATH", "/mine"}};
  add_progress_env(env, "@kubedist-progress-1-0", "/run/attempt_0/0/stacks.txt", "/run/python",
                   "/run/checkpoint-request");
  EXPECT_EQ(env.at("KUBEDIST_PROGRESS"), "@kubedist-progress-1-0");
  EXPECT_EQ(env.at("KUBEDIST_STACK_FILE"), "/run/attempt_0/0/stacks.txt");
  EXPECT_EQ(env.at("KUBEDIST_CHECKPOINT_REQUEST"), "/run/checkpoint-request");
  EXPECT_EQ(env.at("PYTHONPATH"), "/mine:/run/python");
  Env bare;
  add_progress_env(bare, "@a", "", "/run/python");
  EXPECT_EQ(bare, (Env{{"KUBEDIST_PROGRESS", "@a"}, {"PYTHONPATH", "/run/python"}}));
  Env off;
  add_progress_env(off, "", "/s", "/p");  // no socket: the helper stays a no-op
  EXPECT_TRUE(off.empty());
}

TEST(ProgressEnv, InstallsTheHelperPackage) {
  char tmpl[] = "/tmp/kubedist-helper-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  const std::string dir = std::string(tmpl) + "/python";
  auto installed = install_python_helper(dir);
  ASSERT_TRUE(installed.ok()) << installed.error();
  EXPECT_NE(read_file_prefix(dir + "/kubedist/progress.py", 1 << 20).find("def step("), std::string::npos);
  EXPECT_NE(read_file_prefix(dir + "/kubedist/__init__.py", 1 << 20).find("kubedist"), std::string::npos);
  EXPECT_NE(read_file_prefix(dir + "/kubedist/lightning.py", 1 << 20).find("class KubedistProgress"), std::string::npos);
  EXPECT_NE(read_file_prefix(dir + "/kubedist/transformers.py", 1 << 20).find("class KubedistProgress"),
            std::string::npos);
  EXPECT_NE(read_file_prefix(dir + "/sitecustomize.py", 1 << 20).find("_TrainerHook"), std::string::npos);
  // Lightning finds its external callbacks through this distribution's entry points on sys.path.
  EXPECT_NE(read_file_prefix(dir + "/kubedist_launcher_helper-0.1.0.dist-info/entry_points.txt", 1 << 20)
                .find("[lightning.pytorch.callbacks_factory]\nkubedist = kubedist.lightning:lightning_callbacks"),
            std::string::npos);
  EXPECT_FALSE(install_python_helper("/proc/no/such").ok());
  remove_tree(tmpl);
}

}  // namespace
}  // namespace kubedist::launcher
