#include "progress/local_progress.h"

#include <algorithm>

namespace kubedist::launcher {

void LocalProgress::start_round(const std::vector<int>& ranks) {
  ranks_.assign(ranks.size(), Rank{});
  for (size_t i = 0; i < ranks.size(); ++i) ranks_[i].rank = ranks[i];
  changed_ = false;
}

std::string LocalProgress::take(int local_rank, std::string_view datagram, size_t size, Clock::time_point now) {
  if (local_rank < 0 || static_cast<size_t>(local_rank) >= ranks_.size()) return "";
  Rank& r = ranks_[static_cast<size_t>(local_rank)];
  // Cut floods before parsing: a worker reporting in a tight loop costs the launcher a read, not a parse.
  if (now - r.window >= std::chrono::seconds(1)) r.window = now, r.in_window = 0;
  if (++r.in_window > max_per_second_) {
    ++dropped_;
    if (warned_flood_) return "";
    warned_flood_ = true;
    return "rank " + std::to_string(r.rank) + " sends more than " + std::to_string(max_per_second_) +
           " progress reports a second: the rest of each second's are dropped (said once)";
  }
  auto report = size > datagram.size() ? Result<WorkerReport>(make_error("a report of " + std::to_string(size) +
                                                                          " bytes (at most " +
                                                                          std::to_string(kMaxReportBytes) + ")"))
                                       : parse_worker_report(datagram);
  if (!report) {
    ++malformed_;
    if (warned_malformed_) return "";
    warned_malformed_ = true;
    return "ignoring a progress report from rank " + std::to_string(r.rank) + ": " + report.error() +
           " (further bad reports are ignored without a word)";
  }
  WorkerReport w = std::move(report).value();
  r.armed = r.armed || w.armed;
  if (w.answer != WorkerReport::Answer::kNone) {
    r.answer = w.answer;
    r.answer_step = w.checkpoint ? w.checkpoint->step : 0;
  }
  if (w.checkpoint && (!checkpoint_ || w.checkpoint->step != checkpoint_->step)) {
    checkpoint_ = w.checkpoint;
    changed_ = true;
  }
  if (!w.has_step) return "";  // a checkpoint's report alone: no progress
  if (w.pid == 0) w.pid = r.last.pid, w.stack_signal = r.last.stack_signal;  // said once, in the first report
  const bool advanced = !r.reported || w.step > r.last.step;
  if (r.reported && w.step > r.last.step) {
    const double sample = w.step_time ? *w.step_time
                                      : std::chrono::duration<double>(now - r.last_advance).count() /
                                            static_cast<double>(w.step - r.last.step);
    r.step_seconds = r.step_seconds == 0 ? sample : 0.7 * r.step_seconds + 0.3 * sample;
  }
  if (advanced) r.last_advance = now;
  changed_ = changed_ || advanced || w.metrics != r.last.metrics;
  r.reported = true;
  r.last = std::move(w);
  return "";
}

NodeProgress LocalProgress::summary() {
  changed_ = false;
  NodeProgress p;
  const Rank* lowest = nullptr;
  for (const Rank& r : ranks_) {
    if (!r.reported) continue;
    p.ranks.push_back({r.rank, r.last.step, r.step_seconds});
    if (lowest == nullptr || r.rank < lowest->rank) lowest = &r;
  }
  if (lowest != nullptr) {
    p.total_steps = lowest->last.total_steps;
    p.epoch = lowest->last.epoch;
    p.samples = lowest->last.samples;
    p.metrics = lowest->last.metrics;
  }
  p.checkpoint = checkpoint_;
  return p;
}

std::vector<LocalProgress::StackTarget> LocalProgress::stack_targets() const {
  std::vector<StackTarget> out;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const Rank& r = ranks_[i];
    if (r.reported) out.push_back({static_cast<int>(i), r.rank, r.last.pid, r.last.stack_signal, r.last.step});
  }
  return out;
}

std::map<int, double> LocalProgress::step_seconds() const {
  std::map<int, double> out;
  for (const Rank& r : ranks_)
    if (r.reported && r.step_seconds > 0) out[r.rank] = r.step_seconds;
  return out;
}

bool LocalProgress::all_armed() const {
  if (ranks_.empty()) return false;
  for (const Rank& r : ranks_)
    if (!r.armed) return false;
  return true;
}

void LocalProgress::forget_answers() {
  for (Rank& r : ranks_) r.answer = WorkerReport::Answer::kNone, r.answer_step = 0;
}

bool LocalProgress::all_answered() const {
  if (ranks_.empty()) return false;
  for (const Rank& r : ranks_)
    if (r.answer == WorkerReport::Answer::kNone) return false;
  return true;
}

bool LocalProgress::any_failed() const {
  for (const Rank& r : ranks_)
    if (r.answer == WorkerReport::Answer::kFailed) return true;
  return false;
}

std::optional<std::int64_t> LocalProgress::answered_step() const {
  std::optional<std::int64_t> step;
  for (const Rank& r : ranks_)
    if (r.answer == WorkerReport::Answer::kSaved) step = std::max(step.value_or(0), r.answer_step);
  return step;
}

}  // namespace kubedist::launcher
