#include "common/clock.h"

#include <condition_variable>
#include <mutex>

namespace kubedist {
namespace {

class SteadyClock : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  bool sleep_for(std::chrono::milliseconds d, std::stop_token stop) const override {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, stop, d, [] { return false; });  // nothing but a stop request ends it early
    return !stop.stop_requested();
  }
};

}  // namespace

const Clock& steady_clock() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace kubedist
