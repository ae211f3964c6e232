// Clock: "now" and stoppable waits, injectable so that code which waits can be tested without waiting.
#pragma once

#include <chrono>
#include <stop_token>

namespace kubedist {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Waits for d, or less when stop is requested; returns false when it was (the caller should stop).
  virtual bool sleep_for(std::chrono::milliseconds d, std::stop_token stop) const = 0;
};

// The steady clock, waiting on a condition variable that a stop request wakes at once.
const Clock& steady_clock();

}  // namespace kubedist
