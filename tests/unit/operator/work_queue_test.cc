#include "controller/work_queue.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

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

TEST(WorkQueue, HandsAReadyKeyToTheWorkerWaitingForADelayedOne) {
  WorkQueue q;
  q.add_after("later", 10s);
  std::optional<std::string> got;
  std::thread worker([&] { got = q.get(); });  // the only idle worker: it waits for "later"'s time
  std::this_thread::sleep_for(20ms);
  const auto start = WorkQueue::Clock::now();
  q.add("now");
  worker.join();
  EXPECT_EQ(got, "now");
  EXPECT_LT(WorkQueue::Clock::now() - start, 2s);
}

TEST(WorkQueue, AnEarlierDelayedKeyShortensTheWait) {
  WorkQueue q;
  q.add_after("later", 10s);
  std::optional<std::string> got;
  std::thread worker([&] { got = q.get(); });
  std::this_thread::sleep_for(20ms);
  const auto start = WorkQueue::Clock::now();
  q.add_after("soon", 30ms);
  worker.join();
  EXPECT_EQ(got, "soon");
  EXPECT_GE(WorkQueue::Clock::now() - start, 30ms);
  EXPECT_LT(WorkQueue::Clock::now() - start, 2s);
}

TEST(WorkQueue, EveryDueKeyReachesAnIdleWorkerWhenOthersWaitToo) {
  WorkQueue q;
  std::atomic<int> taken{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 4; ++i) {
    workers.emplace_back([&] {
      while (auto k = q.get()) {
        ++taken;
        q.done(*k);
      }
    });
  }
  for (int i = 0; i < 20; ++i) q.add_after("k" + std::to_string(i), std::chrono::milliseconds(10 + 5 * i));
  const auto deadline = WorkQueue::Clock::now() + 5s;
  while (taken < 20 && WorkQueue::Clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(taken, 20);
  q.shutdown();
  for (auto& w : workers) w.join();
}

TEST(WorkQueue, ShutdownWakesBlockedWorkers) {
  WorkQueue q;
  std::thread worker([&] { EXPECT_EQ(q.get(), std::nullopt); });
  std::this_thread::sleep_for(20ms);
  q.shutdown();
  worker.join();
}

// Issue 39 item 2: a key that fails every reconcile (a body that cannot be sent) was retried at each STATUS poll
// that woke it, 32 times, whatever its backoff. A wake-up now leaves a backing-off key at its backoff time.
TEST(WorkQueue, AWakeUpKeepsTheBackoffOfAFailingKey) {
  WorkQueue q(WorkQueue::Options{200ms, 1000ms});
  q.add("a");
  ASSERT_EQ(q.get(), "a");
  q.add_rate_limited("a");  // the reconcile failed: back in 200 ms
  q.done("a");
  const auto start = WorkQueue::Clock::now();
  q.wake("a");  // the poller saw a new report
  q.wake("a");
  EXPECT_EQ(q.get(), "a");
  EXPECT_GE(WorkQueue::Clock::now() - start, 150ms);  // the backoff's time, not at once
  EXPECT_EQ(q.failures("a"), 1);
}

TEST(WorkQueue, AWakeUpQueuesAHealthyKeyAtOnce) {
  WorkQueue q(WorkQueue::Options{10s, 10s});
  q.add_after("a", 10s);  // a timer far away (a deadline), not a backoff
  const auto start = WorkQueue::Clock::now();
  q.wake("a");
  EXPECT_EQ(q.get(), "a");
  EXPECT_LT(WorkQueue::Clock::now() - start, 1s);
}

// A wake-up while a backing-off key is reconciled: queued again only if that reconcile succeeded (it may have read
// the state from before the wake-up); after another failure, the longer backoff holds.
TEST(WorkQueue, AWakeUpDuringTheReconcileOfAFailingKeyDependsOnItsOutcome) {
  struct Case {
    const char* name;
    bool succeeds;
    bool queued_at_once;
  };
  for (const Case& c : {Case{"the reconcile succeeds", true, true}, Case{"it fails again", false, false}}) {
    SCOPED_TRACE(c.name);
    WorkQueue q(WorkQueue::Options{300ms, 300ms});
    q.add_rate_limited("a");
    ASSERT_EQ(q.get(), "a");  // its backoff over: reconciled
    q.wake("a");              // the poller, meanwhile
    if (c.succeeds) {
      q.forget("a");
    } else {
      q.add_rate_limited("a");
    }
    const auto start = WorkQueue::Clock::now();
    q.done("a");
    EXPECT_EQ(q.get(), "a");
    const auto waited = WorkQueue::Clock::now() - start;
    if (c.queued_at_once) {
      EXPECT_LT(waited, 200ms);
    } else {
      EXPECT_GE(waited, 250ms);
    }
    q.done("a");
    EXPECT_EQ(q.depth(), 0u);  // once, not twice
  }
}

}  // namespace
}  // namespace kubedist::controller
