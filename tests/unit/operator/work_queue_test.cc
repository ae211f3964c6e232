#include "controller/work_queue.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace kubedist::controller {
namespace {

using namespace std::chrono_literals;

TEST(WorkQueue, DeduplicatesWaitingKeys) {
  WorkQueue q;
  q.add("a");
  q.add("b");
  q.add("a");
  EXPECT_EQ(q.depth(), 2u);
  EXPECT_EQ(q.get(), "a");
  EXPECT_EQ(q.get(), "b");
  EXPECT_EQ(q.depth(), 0u);
}

TEST(WorkQueue, NeverHandsAKeyInProgressToAnotherWorker) {
  WorkQueue q;
  q.add("a");
  ASSERT_EQ(q.get(), "a");
  q.add("a");  // changed while being processed
  q.add("b");
  EXPECT_EQ(q.get(), "b");  // "a" waits for done()
  std::atomic<bool> got{false};
  std::thread other([&] {
    auto k = q.get();
    got = k == std::optional<std::string>("a");
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(got);
  q.done("a");
  other.join();
  EXPECT_TRUE(got);
}

TEST(WorkQueue, AddAfterWaitsForTheDelay) {
  WorkQueue q;
  const auto start = WorkQueue::Clock::now();
  q.add_after("a", 80ms);
  EXPECT_EQ(q.get(), "a");
  EXPECT_GE(WorkQueue::Clock::now() - start, 80ms);
}

TEST(WorkQueue, BacksOffExponentiallyPerKeyUntilForgotten) {
  WorkQueue q(WorkQueue::Options{10ms, 40ms});
  auto timed = [&] {
    const auto start = WorkQueue::Clock::now();
    q.add_rate_limited("a");
    auto k = q.get();
    q.done(*k);
    return WorkQueue::Clock::now() - start;
  };
  EXPECT_GE(timed(), 10ms);
  EXPECT_GE(timed(), 20ms);
  EXPECT_GE(timed(), 40ms);
  EXPECT_EQ(q.failures("a"), 3);
  const auto capped = timed();
  EXPECT_GE(capped, 40ms);
  EXPECT_LT(capped, 75ms);
  q.forget("a");
  EXPECT_EQ(q.failures("a"), 0);
  EXPECT_LT(timed(), 40ms);
}

TEST(WorkQueue, ShutdownWakesBlockedWorkers) {
  WorkQueue q;
  std::thread worker([&] { EXPECT_EQ(q.get(), std::nullopt); });
  std::this_thread::sleep_for(20ms);
  q.shutdown();
  worker.join();
}

}  // namespace
}  // namespace kubedist::controller
