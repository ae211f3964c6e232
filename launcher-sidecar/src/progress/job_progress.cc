#include "progress/job_progress.h"

#include <algorithm>

namespace kubedist::launcher {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

constexpr auto kRateWindow = std::chrono::seconds(60);

std::int64_t ms(std::chrono::nanoseconds d) { return std::max<std::int64_t>(0, duration_cast<milliseconds>(d).count()); }

std::string seconds_text(milliseconds d) { return std::to_string((d.count() + 500) / 1000) + " s"; }

}  // namespace

ProgressSettings progress_settings(const LaunchConfig& config) {
  return {std::chrono::milliseconds(static_cast<long>(config.hang_timeout * 1000)), config.straggler_factor,
          config.straggler_steps};
}

JobProgress::JobProgress(ProgressSettings settings, Clock::time_point started)
    : settings_(settings), started_(started), last_advance_(started), hang_at_(started) {}

void JobProgress::start_round(int round, Clock::time_point) {
  round_ = round;
  ranks_.clear();
  rate_.clear();
  round_first_step_.reset();
  slow_rank_ = -1;
  slow_ratio_ = 0;
  hang_handling_ = false;
}

void JobProgress::incident(Clock::time_point now) {
  if (round_first_step_) {
    busy_ += last_advance_ - *round_first_step_;
    // The time since the last step is lost with the step the group was making.
    if (!lost_since_) lost_since_ = last_advance_;
  } else if (!lost_since_) {
    lost_since_ = now;  // no step in this round (or none yet ever): lost from here; an open window goes on
  }
  round_first_step_.reset();
}

void JobProgress::update(int round, int node_rank, const NodeProgress& report, Clock::time_point now) {
  if (report.checkpoint && (!checkpoint_ || report.checkpoint->step != checkpoint_->step)) {
    checkpoint_ = report.checkpoint;  // whatever the round: a checkpoint stays one
    // Aged from when it was saved: a checkpoint resumed from is as old as its report says.
    checkpoint_at_ = now - std::chrono::milliseconds(report.checkpoint->age_ms);
    checkpoint_->age_ms = 0;
  }
  if (round != round_ || report.ranks.empty()) return;
  bool advanced = false;
  for (const RankSummary& r : report.ranks) {
    auto [it, fresh] = ranks_.try_emplace(r.rank);
    Rank& rank = it->second;
    if (fresh || r.step > rank.step) {
      advanced = true;
      rank.last_advance = now;
    }
    rank.node_rank = node_rank;
    rank.step = r.step;
    if (r.step_seconds > 0) rank.step_seconds = r.step_seconds;
  }
  if (!round_first_step_ && advanced) {
    round_first_step_ = now;
    if (lost_since_) lost_ += now - *lost_since_;
    lost_since_.reset();
  }
  // The counts and metrics are the lowest reporting rank's (rank 0's, usually, which is on node 0).
  const int lowest = std::min_element(report.ranks.begin(), report.ranks.end(), [](auto& a, auto& b) {
                       return a.rank < b.rank;
                     })->rank;
  if (lowest_rank_ < 0 || lowest <= lowest_rank_ || !ranks_.count(lowest_rank_)) {
    lowest_rank_ = lowest;
    total_steps_ = report.total_steps;
    epoch_ = report.epoch;
    samples_ = report.samples;
    metrics_ = report.metrics;
  }
  std::int64_t job_step = ranks_.begin()->second.step;
  for (const auto& [id, r] : ranks_) job_step = std::min(job_step, r.step);
  if (advanced) last_advance_ = now;
  if (!rate_.empty() && rate_.back().first == now) {
    rate_.back().second = job_step;  // several nodes' reports at one moment: the job's step after all of them
  } else if (rate_.empty() || job_step != rate_.back().second) {
    rate_.emplace_back(now, job_step);
    while (rate_.size() > 2 && rate_[1].first <= now - kRateWindow) rate_.pop_front();
  }
  reported_ = true;
  step_ = job_step;
  judge_stragglers();
}

void JobProgress::judge_stragglers() {
  std::vector<double> times;
  for (const auto& [id, r] : ranks_)
    if (r.step_seconds > 0) times.push_back(r.step_seconds);
  slow_rank_ = -1;
  slow_ratio_ = 0;
  if (times.size() < 2) {
    for (auto& [id, r] : ranks_) r.slow_since_step.reset();
    return;
  }
  std::sort(times.begin(), times.end());
  const size_t others = times.size() - 1;
  for (auto& [id, r] : ranks_) {
    if (r.step_seconds <= 0) continue;
    // The median of the other ranks' times: times without one copy of this rank's.
    const size_t self = static_cast<size_t>(std::lower_bound(times.begin(), times.end(), r.step_seconds) - times.begin());
    auto kth = [&](size_t k) { return times[k < self ? k : k + 1]; };
    const double median = others % 2 ? kth(others / 2) : (kth(others / 2 - 1) + kth(others / 2)) / 2;
    const double ratio = median > 0 ? r.step_seconds / median : 0;
    if (ratio < settings_.straggler_factor) {
      r.slow_since_step.reset();
      continue;
    }
    if (!r.slow_since_step) r.slow_since_step = step_;
    if (step_ - *r.slow_since_step >= settings_.straggler_steps && ratio > slow_ratio_) {
      slow_rank_ = id;
      slow_ratio_ = ratio;
    }
  }
}

bool JobProgress::hang_due(Clock::time_point now) const {
  const auto at = next_hang_check();
  return at && now >= *at;
}

std::optional<JobProgress::Clock::time_point> JobProgress::next_hang_check() const {
  if (settings_.hang_timeout.count() <= 0 || hang_handling_ || !round_first_step_) return std::nullopt;
  // Every reporting rank at its total: training is over, and what follows (saving, evaluating) makes no steps.
  bool finished = !ranks_.empty() && total_steps_.has_value();
  for (const auto& [id, r] : ranks_) finished = finished && r.step >= *total_steps_;
  if (finished) return std::nullopt;
  return last_advance_ + settings_.hang_timeout;
}

std::vector<StuckRank> JobProgress::stuck_ranks(Clock::time_point now) const {
  std::vector<StuckRank> out;
  for (const auto& [id, r] : ranks_)
    out.push_back({id, r.node_rank, r.step, duration_cast<milliseconds>(now - r.last_advance)});
  std::sort(out.begin(), out.end(), [](const StuckRank& a, const StuckRank& b) {
    return a.step != b.step ? a.step < b.step : a.rank < b.rank;
  });
  return out;
}

void JobProgress::hang_detected(const std::string& message, Clock::time_point now) {
  hang_message_ = contract::cut_hang_message(message);
  hang_at_ = now;
}

std::chrono::milliseconds JobProgress::since_last_step(Clock::time_point now) const {
  return duration_cast<milliseconds>(now - last_advance_);
}

std::optional<contract::StatusProgress> JobProgress::status(Clock::time_point now) const {
  if (!reported_) return std::nullopt;
  contract::StatusProgress p;
  p.step = step_;
  p.total_steps = total_steps_.value_or(-1);
  p.epoch = epoch_.value_or(-1);
  p.samples = samples_.value_or(-1);
  if (rate_.size() >= 2 && now > rate_.front().first) {
    const double secs = std::chrono::duration<double>(now - rate_.front().first).count();
    p.steps_per_second = static_cast<double>(rate_.back().second - rate_.front().second) / secs;
  }
  p.step_age_ms = ms(now - last_advance_);
  p.up_ms = ms(now - started_);
  p.busy_ms = ms(busy_ + (round_first_step_ ? last_advance_ - *round_first_step_ : std::chrono::nanoseconds(0)));
  p.lost_ms = ms(lost_ + (lost_since_ ? now - *lost_since_ : std::chrono::nanoseconds(0)));
  p.metrics = metrics_;
  if (slow_rank_ >= 0) {
    const Rank& r = ranks_.at(slow_rank_);
    p.slow_rank = slow_rank_;
    p.slow_node_rank = r.node_rank;
    p.slow_ratio = slow_ratio_;
    p.slow_step_seconds = r.step_seconds;
  }
  if (!hang_message_.empty()) {
    p.hang_message = hang_message_;
    p.hang_age_ms = ms(now - hang_at_);
  }
  return p;
}

std::string hang_message(std::vector<StuckRank> stuck, const std::map<int, StackSummary>& stacks,
                         std::chrono::milliseconds stalled, std::chrono::milliseconds timeout) {
  // The culprit first: of the ranks furthest behind, the one waiting where fewer others wait. In a hung collective
  // the ranks that arrived all wait in the same call, and the one that never came is somewhere else.
  std::map<std::string, int> waiting_at;
  for (const auto& [rank, s] : stacks)
    if (!s.where.empty()) ++waiting_at[s.where];
  auto company = [&](int rank) {
    const auto s = stacks.find(rank);
    return s == stacks.end() || s->second.where.empty() ? static_cast<int>(stacks.size()) + 1 : waiting_at[s->second.where];
  };
  std::stable_sort(stuck.begin(), stuck.end(), [&](const StuckRank& a, const StuckRank& b) {
    return a.step != b.step ? a.step < b.step : company(a.rank) < company(b.rank);
  });
  std::string out = "no step for " + seconds_text(stalled) + " (hang timeout " + seconds_text(timeout) + ")";
  const size_t max = contract::kMaxHangMessage;
  for (size_t i = 0; i < stuck.size(); ++i) {
    const StuckRank& r = stuck[i];
    const auto s = stacks.find(r.rank);
    const bool has = s != stacks.end() && !s->second.where.empty();
    std::string head = (i ? "; rank " : ": rank ") + std::to_string(r.rank) + " on " +
                       (s != stacks.end() && !s->second.host.empty() ? s->second.host
                                                                      : "node rank " + std::to_string(r.node_rank)) +
                       " stuck " + seconds_text(r.stalled) + " at step " + std::to_string(r.step);
    head += has ? " " + s->second.where : " (no stack)";
    const std::string full = has && !s->second.trace.empty() ? head + " [" + s->second.trace + "]" : head;
    const std::string more = "; and " + std::to_string(stuck.size() - i) + " more";
    if (out.size() + full.size() + more.size() <= max) {
      out += full;
    } else if (out.size() + head.size() + more.size() <= max) {
      out += head;
    } else {
      out += more.substr(0, max - out.size());
      break;
    }
  }
  return out.substr(0, max);
}

std::optional<contract::StatusCheckpoint> JobProgress::checkpoint(Clock::time_point now) const {
  if (!checkpoint_) return std::nullopt;
  contract::StatusCheckpoint c = *checkpoint_;
  c.age_ms = std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(now - checkpoint_at_).count());
  return c;
}

}  // namespace kubedist::launcher
