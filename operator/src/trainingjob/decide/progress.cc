#include "trainingjob/decide/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "trainingjob/api/names.h"
#include "trainingjob/decide/checkpoint.h"

namespace kubedist::trainingjob {
namespace {

// Figures as a user reads them: no write for a change in the fifth digit.
double rounded(double v, double unit) { return std::round(v / unit) * unit; }

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::string progress_summary(int64_t step, std::optional<int64_t> total) {
  if (!total || *total <= 0) return "step " + std::to_string(step);
  const int64_t percent = std::min<int64_t>(100, step * 100 / *total);
  return std::to_string(percent) + "% (" + std::to_string(step) + "/" + std::to_string(*total) + ")";
}

void decide_progress(DecideState& s, const PodFacts* node0) {
  note_checkpoint(s, node0);
  const auto& report = s.obs.launcher;
  if (!report || node0 == nullptr || report->pod_uid != node0->uid || !report->progress) return;
  const contract::StatusProgress& p = *report->progress;
  const std::optional<ProgressStatus> before = s.plan.status.progress;
  ProgressStatus out = before.value_or(ProgressStatus{});
  LauncherSeen& seen = s.plan.status.launcher;
  if (before && !seen.pod_uid.empty() && seen.pod_uid != report->pod_uid) {
    // A new node-0 pod: its launcher's counters start at zero; what the earlier ones measured stays.
    seen.busy_before_ms = std::llround(before->productive_seconds * 1000);
    seen.lost_before_ms = std::llround(before->lost_seconds * 1000);
  }
  out.step = p.step;
  out.total_steps = p.total_steps >= 0 ? std::optional<int64_t>(p.total_steps) : std::nullopt;
  out.percent.reset();
  if (out.total_steps && *out.total_steps > 0)
    out.percent = static_cast<int>(std::min<int64_t>(100, p.step * 100 / *out.total_steps));
  out.epoch = p.epoch >= 0 ? std::optional<int64_t>(p.epoch) : std::nullopt;
  out.samples = p.samples >= 0 ? std::optional<int64_t>(p.samples) : std::nullopt;
  out.steps_per_second = rounded(p.steps_per_second, p.steps_per_second >= 10 ? 0.1 : 0.001);
  out.metrics = p.metrics;
  out.summary = progress_summary(p.step, out.total_steps);
  const UnixSeconds polled = report->polled_at > 0 ? report->polled_at : s.now;
  const UnixSeconds last_step = polled - p.step_age_ms / 1000;
  out.last_step_time = format_rfc3339(last_step);
  out.estimated_completion_time.clear();
  if (out.total_steps && p.step < *out.total_steps && p.steps_per_second > 0) {
    const double left = static_cast<double>(*out.total_steps - p.step) / p.steps_per_second;
    if (left < 1e9) out.estimated_completion_time = format_rfc3339(last_step + static_cast<int64_t>(std::ceil(left)));
  }
  if (out.started_at.empty()) {
    // Goodput's wall time starts with the job's first pod.
    UnixSeconds first = s.now;
    for (const auto& pod : s.live)
      if (const auto t = parse_rfc3339(pod.start_time)) first = std::min(first, *t);
    out.started_at = format_rfc3339(first);
  }
  out.productive_seconds = rounded(static_cast<double>(seen.busy_before_ms + p.busy_ms) / 1000, 0.1);
  out.lost_seconds = rounded(static_cast<double>(seen.lost_before_ms + p.lost_ms) / 1000, 0.1);
  const UnixSeconds wall = s.now - parse_rfc3339(out.started_at).value_or(s.now);
  out.goodput.reset();
  if (wall > 0) out.goodput = rounded(std::clamp(out.productive_seconds / static_cast<double>(wall), 0.0, 1.0), 0.001);

  out.slowest_rank.reset();
  if (p.slow_rank >= 0) {
    SlowestRank slow{p.slow_rank, pod_name(s.job.name, p.slow_node_rank), "", rounded(p.slow_step_seconds, 0.001),
                     rounded(p.slow_ratio, 0.01)};
    for (const auto& pod : s.live)
      if (pod.name == slow.pod) slow.node = pod.node_name;
    if (!before || !before->slowest_rank || before->slowest_rank->rank != slow.rank) {
      s.emit("Warning", "Straggler",
             "rank " + std::to_string(slow.rank) + " (pod " + slow.pod + " on node " +
                 (slow.node.empty() ? std::string("unknown") : slow.node) + ") takes " + fixed(p.slow_step_seconds, 3) +
                 " s per step, " + fixed(p.slow_ratio, 2) + "x the median of the other ranks");
    }
    out.slowest_rank = slow;
  }
  s.plan.status.progress = out;
}

}  // namespace kubedist::trainingjob
