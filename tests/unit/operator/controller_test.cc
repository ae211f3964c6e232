// The Controller: the one place a reconcile is timed and an exception in one becomes an error.
#include "controller/controller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "controller/work_queue.h"

namespace kubedist::controller {
namespace {

TEST(Controller, TellsOfEachResultAndTurnsAnExceptionIntoAnErrorThatIsRetried) {
  WorkQueue queue;
  std::mutex mu;
  std::condition_variable seen;
  std::vector<std::pair<std::string, ReconcileResult>> results;
  std::vector<std::string> keys;
  Controller workers(
      queue,
      [&](const std::string& key) -> ReconcileResult {
        {
          std::lock_guard<std::mutex> lock(mu);
          keys.push_back(key);
        }
        if (key == "ns/boom") throw std::runtime_error("boom");
        return ReconcileResult::done();
      },
      1,
      [&](const ReconcileResult& result, std::chrono::duration<double> took) {
        EXPECT_GE(took.count(), 0.0);
        std::lock_guard<std::mutex> lock(mu);
        results.push_back({keys.back(), result});
        seen.notify_all();
      });
  workers.start();
  queue.add("ns/ok");
  queue.add("ns/boom");
  std::unique_lock<std::mutex> lock(mu);
  // The thrown key comes back (rate-limited), so a third result arrives: the worker survived the exception.
  ASSERT_TRUE(seen.wait_for(lock, std::chrono::seconds(10), [&] { return results.size() >= 3; }));
  EXPECT_EQ(results[0].first, "ns/ok");
  EXPECT_EQ(results[0].second.kind, ReconcileResult::Kind::kDone);
  EXPECT_EQ(results[1].first, "ns/boom");
  EXPECT_EQ(results[1].second.kind, ReconcileResult::Kind::kError);
  EXPECT_EQ(results[1].second.error.message, "unexpected exception: boom");
  EXPECT_EQ(results[2].first, "ns/boom");
  lock.unlock();
  workers.stop();
  EXPECT_GE(workers.errors(), 2u);
}

}  // namespace
}  // namespace kubedist::controller
