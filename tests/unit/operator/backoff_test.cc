#include "common/backoff.h"

#include <stop_token>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace kubedist {
namespace {

using std::chrono::milliseconds;

// A clock whose waits return at once, advancing its time and remembering how long each was.
class FakeClock : public Clock {
 public:
  TimePoint now() const override { return now_; }
  bool sleep_for(milliseconds d, std::stop_token stop) const override {
    if (stop.stop_requested()) return false;
    sleeps.push_back(d);
    now_ += d;
    return true;
  }
  mutable std::vector<milliseconds> sleeps;

 private:
  mutable TimePoint now_{};
};

TEST(BackoffPolicy, DoublesFromInitialAndStopsAtMax) {
  const BackoffPolicy policy{milliseconds(200), milliseconds(5000)};
  const std::vector<std::pair<int, long>> cases = {{0, 200}, {1, 400}, {2, 800}, {4, 3200}, {5, 5000}, {6, 5000},
                                                   {1000, 5000}};
  for (const auto& [failures, want] : cases) {
    EXPECT_EQ(policy.delay(failures), milliseconds(want)) << failures << " failures";
  }
}

TEST(BackoffPolicy, CapsAnInitialDelayAboveMax) {
  EXPECT_EQ((BackoffPolicy{milliseconds(900), milliseconds(500)}.delay(0)), milliseconds(500));
}

TEST(Backoff, WaitsLongerAfterEachFailureUntilReset) {
  FakeClock clock;
  Backoff backoff({milliseconds(100), milliseconds(300)}, clock);
  std::stop_source stop;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(backoff.wait(stop.get_token()));
  backoff.reset();
  EXPECT_TRUE(backoff.wait(stop.get_token()));
  EXPECT_EQ(clock.sleeps, (std::vector<milliseconds>{milliseconds(100), milliseconds(200), milliseconds(300),
                                                     milliseconds(300), milliseconds(100)}));
}

TEST(Backoff, WaitReportsAStopRequest) {
  FakeClock clock;
  Backoff backoff({milliseconds(100), milliseconds(300)}, clock);
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(backoff.wait(stop.get_token()));
  EXPECT_TRUE(clock.sleeps.empty());
}

TEST(SteadyClock, AStopRequestEndsAWaitAtOnce) {
  std::stop_source stop;
  const auto started = steady_clock().now();
  std::jthread stopper([&] {
    std::this_thread::sleep_for(milliseconds(50));
    stop.request_stop();
  });
  EXPECT_FALSE(steady_clock().sleep_for(std::chrono::seconds(60), stop.get_token()));
  EXPECT_LT(steady_clock().now() - started, std::chrono::seconds(30));
}

TEST(SteadyClock, AWaitWithoutStopLastsItsDuration) {
  std::stop_source stop;
  const auto started = steady_clock().now();
  EXPECT_TRUE(steady_clock().sleep_for(milliseconds(30), stop.get_token()));
  EXPECT_GE(steady_clock().now() - started, milliseconds(30));
}

}  // namespace
}  // namespace kubedist
