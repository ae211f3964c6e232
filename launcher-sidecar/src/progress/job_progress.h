// JobProgress: node 0's view of the whole job's progress, from every node's reports (pure; the rendezvous host
// feeds it and answers STATUS with it). It decides the job's step, steps per second, stragglers, whether the job
// hangs, and where its time went (goodput).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/launch_config.h"
#include "contract/status_line.h"
#include "progress/local_progress.h"
#include "progress/stacks.h"

namespace kubedist::launcher {

struct ProgressSettings {
  std::chrono::milliseconds hang_timeout{0};  // no step for this long: a hang; 0: never judged
  double straggler_factor = 1.5;              // a rank this many times slower than the others' median...
  int straggler_steps = 20;                   // ...for this many of the job's steps is a straggler
};

// The settings this launcher's flags give node 0's JobProgress (--hang-timeout, --straggler-factor/-steps).
ProgressSettings progress_settings(const LaunchConfig& config);

// A rank when the job stopped advancing, for the hang's message.
struct StuckRank {
  int rank = 0;
  int node_rank = 0;
  std::int64_t step = 0;
  std::chrono::milliseconds stalled{0};  // since its step last advanced
  bool operator==(const StuckRank&) const = default;
};

class JobProgress {
 public:
  using Clock = std::chrono::steady_clock;
  JobProgress(ProgressSettings settings, Clock::time_point started);

  const ProgressSettings& settings() const { return settings_; }
  // Workers of round `round` start: what the earlier ones reported is kept for the status, but the hang clock and
  // the stragglers wait for this round's own reports.
  void start_round(int round, Clock::time_point now);
  // The group stops to restart (a failure, a hang, a node lost or joining): time is lost until its next step.
  void incident(Clock::time_point now);
  // A node's report for `round` (other rounds' are stale and ignored).
  void update(int round, int node_rank, const NodeProgress& report, Clock::time_point now);

  // Whether the job has stopped advancing for hang_timeout (and a hang is not being handled already), and when to
  // ask again (nullopt: no hang can come before the next update or round).
  bool hang_due(Clock::time_point now) const;
  std::optional<Clock::time_point> next_hang_check() const;
  // The ranks of this round, those furthest behind first (then by rank).
  std::vector<StuckRank> stuck_ranks(Clock::time_point now) const;
  // The hang is being handled (stacks asked for); then `message`, the restart's reason, for STATUS.
  void hang_handling() { hang_handling_ = true; }
  void hang_detected(const std::string& message, Clock::time_point now);
  std::chrono::milliseconds since_last_step(Clock::time_point now) const;

  // The STATUS fields; nullopt until some worker reported a step.
  std::optional<contract::StatusProgress> status(Clock::time_point now) const;
  // The newest complete checkpoint a node reported (rank 0's, through the helper), aged from when it was heard.
  std::optional<contract::StatusCheckpoint> checkpoint(Clock::time_point now) const;

 private:
  struct Rank {
    int node_rank = 0;
    std::int64_t step = 0;
    double step_seconds = 0;
    Clock::time_point last_advance;
    std::optional<std::int64_t> slow_since_step;  // the job's step when this rank became slower than the factor
  };
  void judge_stragglers();

  ProgressSettings settings_;
  Clock::time_point started_;
  std::optional<contract::StatusCheckpoint> checkpoint_;
  Clock::time_point checkpoint_at_;
  int round_ = -1;
  std::map<int, Rank> ranks_;  // this round's, by global rank
  // What the status shows, kept across rounds until new reports replace it.
  bool reported_ = false;
  std::int64_t step_ = 0;
  std::optional<std::int64_t> total_steps_, epoch_, samples_;
  std::map<std::string, double> metrics_;
  int lowest_rank_ = -1;  // whose counts and metrics those are
  Clock::time_point last_advance_;  // the job's step or any rank's
  std::deque<std::pair<Clock::time_point, std::int64_t>> rate_;  // (when, job step), about the last minute
  // Goodput: busy from a round's first step to its last; lost from an incident to the next step.
  std::chrono::nanoseconds busy_{0}, lost_{0};
  std::optional<Clock::time_point> round_first_step_;
  std::optional<Clock::time_point> lost_since_;
  // Stragglers.
  int slow_rank_ = -1;
  double slow_ratio_ = 0;
  // Hangs.
  bool hang_handling_ = false;
  std::string hang_message_;
  Clock::time_point hang_at_;
};

// "no step for 31 s (hang timeout 30 s): rank 1 on j-node-1 stuck 31 s at step 4 in recv (train.py:40) [...];
// rank 0 ...", at most contract::kMaxHangMessage bytes. stacks: the ranks whose stacks were taken. The ranks
// furthest behind come first, and among them those waiting where the fewest others wait (the likely culprit).
std::string hang_message(std::vector<StuckRank> stuck, const std::map<int, StackSummary>& stacks,
                         std::chrono::milliseconds stalled, std::chrono::milliseconds timeout);

}  // namespace kubedist::launcher
