// The termination message of a failed launcher: one line naming the rank, host, exit and the error.
#include "workers/failure_summary.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

WorkerExit exit_with(int code, int signal = 0) {
  WorkerExit e;
  e.rank = 5;
  e.local_rank = 1;
  e.pid = 42;
  e.exit_code = code;
  e.signal = signal;
  return e;
}

// What torch's @record writes (torch/distributed/elastic/multiprocessing/errors/error_handler.py).
const char* kRecorded =
    R"({"message": {"message": "ValueError: lr must be positive\nsecond line", "extraInfo": )"
    R"({"py_callstack": "Traceback (most recent call last):\n  File \"t.py\"\nValueError: lr", "timestamp": "1"}}})";

TEST(FailureSummary, NamesRankHostExitCodeAndTheErrorFilesFirstLine) {
  EXPECT_EQ(failure_summary(exit_with(3), "node-a", kRecorded),
            "rank 5 (local rank 1) on node-a exited with code 3: ValueError: lr must be positive");
}

TEST(FailureSummary, NamesTheSignalOfAKilledWorker) {
  EXPECT_EQ(failure_summary(exit_with(128 + SIGKILL, SIGKILL), "node-a", ""),
            "rank 5 (local rank 1) on node-a was killed by signal SIGKILL");
  EXPECT_EQ(failure_summary(exit_with(128 + SIGSEGV, SIGSEGV), "h", ""),
            "rank 5 (local rank 1) on h was killed by signal SIGSEGV");
}

TEST(FailureSummary, ReadsBothErrorFileShapesAndIgnoresAnythingElse) {
  EXPECT_EQ(error_file_message(R"({"message": "RuntimeError: plain"})"), "RuntimeError: plain");
  EXPECT_EQ(error_file_message(kRecorded), "ValueError: lr must be positive");
  EXPECT_EQ(error_file_message(""), "");
  EXPECT_EQ(error_file_message("{not json"), "");
  EXPECT_EQ(error_file_message(R"({"message": {"extraInfo": {}}})"), "");
  EXPECT_EQ(error_file_message(R"({"message": 7})"), "");
  EXPECT_EQ(error_file_message(R"(["message"])"), "");
  EXPECT_EQ(failure_summary(exit_with(1), "h", "{truncated"), "rank 5 (local rank 1) on h exited with code 1");
}

TEST(FailureSummary, IsOneLineOfAtMost4096BytesCutBetweenCharacters) {
  std::string huge = "x";
  for (int i = 0; i < 3000; ++i) huge += "\xC3\xA9";  // 'é', two bytes each
  const std::string json = R"({"message": {"message": "E: )" + huge + R"("}})";
  const std::string line = failure_summary(exit_with(1), "h", json);
  EXPECT_LE(line.size(), kTerminationMessageMax);
  EXPECT_GT(line.size(), kTerminationMessageMax - 2);
  EXPECT_NE(static_cast<unsigned char>(line.back()), 0xC3) << "a character cut in half";
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(one_line("a\nb\r\tc"), "a b  c");
  EXPECT_EQ(one_line("\xC3\xA9\xC3\xA9", 3), "\xC3\xA9");
}

// What node 0 leaves on success: its last STATUS line, which the operator parses back, without the hang's text, and
// without the metrics when the line would pass what the operator reads.
TEST(FinalStatusLine, IsTheLastStatusWithoutTheHangTextAndFitsWhatTheOperatorReads) {
  contract::StatusReport r;
  r.round = 2;
  r.restarts = 1;
  r.restarts_by_cause = {{"hang", 1}};
  r.nodes = 2;
  r.world_size = 4;
  r.phase = "over";
  r.run_id = "cpu-demo";
  contract::StatusProgress p;
  p.step = 80;
  p.total_steps = 80;
  p.metrics = {{"loss", 0.25}};
  p.hang_message = "rank 1 stuck in recv";
  p.hang_age_ms = 5000;
  r.progress = p;
  const std::string line = final_status_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_LE(line.size(), kFinalStatusMax);
  const auto parsed = contract::parse_status_line(line);
  ASSERT_TRUE(parsed.report) << parsed.error << ": " << line;
  ASSERT_TRUE(parsed.report->progress);
  EXPECT_EQ(parsed.report->progress->step, 80);
  EXPECT_EQ(parsed.report->progress->total_steps, 80);
  EXPECT_EQ(parsed.report->progress->metrics.at("loss"), 0.25);
  EXPECT_EQ(parsed.report->progress->hang_message, "");
  EXPECT_EQ(parsed.report->restarts_by_cause.at("hang"), 1);

  // Metrics that would make it too long go first; a line too long even without them is not left at all.
  for (size_t i = 0; i < contract::kMaxStatusMetrics; ++i) {
    r.progress->metrics[std::string(contract::kMaxMetricName - 2, static_cast<char>('a' + i)) + "_" +
                        std::to_string(i)] = 1e300;
  }
  r.run_id = std::string(700, 'r');
  const std::string trimmed = final_status_line(r);
  ASSERT_FALSE(trimmed.empty());
  EXPECT_LE(trimmed.size(), kFinalStatusMax);
  EXPECT_EQ(trimmed.find("m."), std::string::npos);
  r.run_id = std::string(2000, 'r');
  EXPECT_EQ(final_status_line(r), "");
}

}  // namespace
}  // namespace kubedist::launcher
