// Exponential backoff: the delay after N failures (initial doubling up to max), and a counter that waits it out.
#pragma once

#include <chrono>
#include <stop_token>

#include "common/clock.h"

namespace kubedist {

struct BackoffPolicy {
  std::chrono::milliseconds initial{200};
  std::chrono::milliseconds max{5000};
  // initial * 2^failures, capped at max (failures 0: initial).
  std::chrono::milliseconds delay(int failures) const;
};

// Counts failures since the last reset and waits the policy's delay for each, on an injectable clock.
class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy, const Clock& clock = steady_clock()) : policy_(policy), clock_(clock) {}
  // The delay for the next failure (counting it).
  std::chrono::milliseconds next() { return policy_.delay(failures_++); }
  // Waits next(); false when stop was requested meanwhile.
  bool wait(std::stop_token stop) { return clock_.sleep_for(next(), stop); }
  // A success: the next failure waits `initial` again.
  void reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  const BackoffPolicy policy_;
  const Clock& clock_;
  int failures_ = 0;
};

}  // namespace kubedist
