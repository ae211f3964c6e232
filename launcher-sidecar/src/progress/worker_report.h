// WorkerReport: one progress report a worker sent its launcher (KUBEDIST_PROGRESS), and its parser (pure).
//
// The format (also in launcher-sidecar/python/kubedist/progress.py, the ready helper): one JSON object per
// datagram, at most kMaxReportBytes:
//   {"step": 120, "total_steps": 1000, "epoch": 1, "samples": 15360, "loss": 0.53, "lr": 0.001}
// step (required) is the number of steps done; total_steps, epoch and samples are optional counts; step_time is the
// worker's own seconds per step since its previous report (the helper's, from its compute() sections when used);
// pid and stack_signal say which process armed Python's faulthandler on which signal (the helper's first report).
// ckpt_step, ckpt_reason and ckpt_ranks (all three, or none) say a checkpoint of that step is complete (the helper's
// kubedist.checkpoint, from rank 0); such a report needs no step, and without one it says nothing of progress (a job
// that only checkpoints is never judged hung). Just in time (the launcher's request file, KUBEDIST_CHECKPOINT_REQUEST):
// {"ckpt_armed": 1} says the worker answers requests from now on; {"ckpt_request": "saved" or "failed", ckpt_step,
// ckpt_reason, ckpt_ranks} is its answer to one ("failed": the step is no checkpoint). With ckpt_age_ms (a checkpoint
// resumed from: rank 0's, at resume()), the checkpoint is that old. Any other key with a finite number is a metric;
// other values are ignored.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "contract/status_line.h"
#include "util/result.h"

namespace kubedist::launcher {

inline constexpr size_t kMaxReportBytes = 4096;
inline constexpr size_t kMaxReportMetrics = 8;  // the first ones by name; contract/status_line.h's bound too

struct WorkerReport {
  std::int64_t step = 0;
  bool has_step = true;  // false: a checkpoint's report alone
  std::optional<std::int64_t> total_steps;
  std::optional<std::int64_t> epoch;
  std::optional<std::int64_t> samples;
  std::optional<double> step_time;  // seconds, > 0
  std::map<std::string, double> metrics;
  int pid = 0;           // 0: not said
  int stack_signal = 0;  // 0: no stacks on request
  std::optional<contract::StatusCheckpoint> checkpoint{};  // a complete checkpoint (age_ms: ckpt_age_ms, or 0)
  bool armed = false;                                       // ckpt_armed: this worker answers requests
  enum class Answer { kNone, kSaved, kFailed };
  Answer answer = Answer::kNone;                            // ckpt_request: its answer to the launcher's request
  bool operator==(const WorkerReport&) const = default;
};

// The report in `datagram`, or why it is none (not JSON, not an object, no step that is a count, a count out of
// range). Metrics with names other than [A-Za-z0-9_]{1,32}, beyond kMaxReportMetrics, or not finite are dropped.
Result<WorkerReport> parse_worker_report(std::string_view datagram);

}  // namespace kubedist::launcher
