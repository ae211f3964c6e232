// Watchdog: when a loop is due back, so that a loop stuck in one step (a deadlock, a call that never returns) can be
// told from one that waits as long as it should. The loop says before each step how long the step may take.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>

#include "common/clock.h"

namespace kubedist {

class Watchdog {
 public:
  // Slack on top of every step's own bound: a loop is overdue only once it is this late.
  static constexpr std::chrono::seconds kGrace{60};

  // The next step may take up to d from now.
  void expect_within(std::chrono::milliseconds d, Clock::TimePoint now) {
    due_ = (now + d + kGrace).time_since_epoch().count();
  }
  // The loop has ended (or not started): never overdue.
  void idle() { due_ = kIdle; }
  // How late the loop is at now, if it is.
  std::optional<std::chrono::milliseconds> overdue(Clock::TimePoint now) const {
    const auto due = due_.load();
    if (due == kIdle || now.time_since_epoch().count() <= due) return std::nullopt;
    const Clock::TimePoint::duration late(now.time_since_epoch().count() - due);
    return std::chrono::duration_cast<std::chrono::milliseconds>(late);
  }

 private:
  static constexpr Clock::TimePoint::rep kIdle = Clock::TimePoint::duration::max().count();
  std::atomic<Clock::TimePoint::rep> due_{kIdle};
};

}  // namespace kubedist
