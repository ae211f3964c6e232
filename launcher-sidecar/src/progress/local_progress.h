// LocalProgress: what this node's workers reported this round, per local rank, and what the node tells node 0
// (pure; the sockets are progress_channel.h's). Bad reports are ignored and floods cut, each with one warning.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "progress/worker_report.h"

namespace kubedist::launcher {

// One rank's progress as node 0 needs it.
struct RankSummary {
  int rank = 0;
  std::int64_t step = 0;
  double step_seconds = 0;  // its time per step (0: not known yet)
  bool operator==(const RankSummary&) const = default;
};

// What a node tells node 0 (rendezvous PROGRESS): its ranks, and the lowest one's counts and metrics.
struct NodeProgress {
  std::vector<RankSummary> ranks;
  std::optional<std::int64_t> total_steps, epoch, samples;
  std::map<std::string, double> metrics;
  // The newest complete checkpoint a worker of this node reported (rank 0's, on node 0), for this launcher's life;
  // its age_ms is how old it was when heard (0, or a resumed checkpoint's age; node 0 counts on from when it
  // heard). Not sent on the wire: rank 0 is on node 0.
  std::optional<contract::StatusCheckpoint> checkpoint{};
  bool operator==(const NodeProgress&) const = default;
};

class LocalProgress {
 public:
  using Clock = std::chrono::steady_clock;
  // max_per_second: reports taken from one rank in one second; the rest of that second's are dropped.
  explicit LocalProgress(int max_per_second = 200) : max_per_second_(max_per_second) {}

  // A new round: ranks[local rank] is each worker's global rank; what earlier workers reported is forgotten.
  void start_round(const std::vector<int>& ranks);
  // One datagram from local_rank's socket; `size` is its real length (the datagram may have been cut to fit).
  // Returns a warning to log, at most once per kind for the launcher's life, else "".
  std::string take(int local_rank, std::string_view datagram, size_t size, Clock::time_point now);

  // Whether anything changed since the last summary(), and the summary (empty ranks: nothing reported yet).
  bool changed() const { return changed_; }
  NodeProgress summary();
  // The worker that armed stacks on local_rank (pid, signal), if it said so.
  struct StackTarget {
    int local_rank = 0;
    int rank = 0;
    int pid = 0;
    int signal = 0;
    std::int64_t step = 0;
  };
  std::vector<StackTarget> stack_targets() const;
  // Each reporting rank's step time (kubedist_rank_step_seconds), by global rank.
  std::map<int, double> step_seconds() const;
  // Just in time: whether every worker of this round said it answers the launcher's checkpoint requests; the
  // answers since the last forget_answers() (every worker's; whether one failed; the newest step saved).
  bool all_armed() const;
  void forget_answers();
  bool all_answered() const;
  bool any_failed() const;
  std::optional<std::int64_t> answered_step() const;
  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t malformed() const { return malformed_; }

 private:
  struct Rank {
    int rank = 0;
    bool reported = false;
    WorkerReport last;
    Clock::time_point last_advance;
    double step_seconds = 0;
    Clock::time_point window;  // the start of the current one-second rate window
    int in_window = 0;
    bool armed = false;
    WorkerReport::Answer answer = WorkerReport::Answer::kNone;
    std::int64_t answer_step = 0;
  };
  int max_per_second_;
  std::vector<Rank> ranks_;
  std::optional<contract::StatusCheckpoint> checkpoint_;  // the newest reported, kept across rounds
  bool changed_ = false;
  bool warned_malformed_ = false, warned_flood_ = false;
  std::uint64_t dropped_ = 0, malformed_ = 0;
};

}  // namespace kubedist::launcher
