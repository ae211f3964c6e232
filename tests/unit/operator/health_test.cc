// /healthz's verdict: a watch loop stuck in one step, or a reconcile that never ends, is unhealthy; waiting as long
// as a step may take is not.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>

#include "common/watchdog.h"
#include "controller/controller.h"
#include "controller/health.h"
#include "controller/work_queue.h"

namespace kubedist::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(Watchdog, IsOverdueOnlyOnceAStepOutlastsItsBoundAndTheGrace) {
  Watchdog dog;
  const Clock::TimePoint t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(dog.overdue(t0 + minutes(60)), std::nullopt) << "a loop that has not started is never overdue";
  dog.expect_within(seconds(5), t0);
  EXPECT_EQ(dog.overdue(t0 + seconds(5) + Watchdog::kGrace), std::nullopt);
  EXPECT_EQ(dog.overdue(t0 + seconds(6) + Watchdog::kGrace), milliseconds(1000));
  dog.expect_within(seconds(5), t0 + minutes(10));  // the loop came back and started its next step
  EXPECT_EQ(dog.overdue(t0 + minutes(10) + seconds(30)), std::nullopt);
  dog.idle();
  EXPECT_EQ(dog.overdue(t0 + minutes(60)), std::nullopt) << "a loop that has ended is never overdue";
}

class FakeInformer : public kube::InformerBase {
 public:
  void start(std::function<void()>) override {}
  void stop() override {}
  bool synced() const override { return true; }
  std::optional<milliseconds> overdue(Clock::TimePoint) const override { return late; }
  const std::string& path() const override { return path_; }
  std::optional<milliseconds> late;

 private:
  std::string path_ = "/api/v1/pods";
};

TEST(StuckReason, NamesAWatchLoopThatIsOverdue) {
  FakeInformer pods;
  const auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(stuck_reason({&pods}, nullptr, now, minutes(10)), "");
  pods.late = seconds(90);
  EXPECT_EQ(stuck_reason({&pods}, nullptr, now, minutes(10)), "the watch loop of /api/v1/pods is stuck: 90 s overdue");
}

TEST(StuckReason, NamesAReconcileThatRunsLongerThanTheLimit) {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  WorkQueue queue;
  Controller workers(queue, [&](const std::string&) {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });  // a worker stuck until the test lets it go
    return ReconcileResult::done();
  }, 2);
  workers.start();
  queue.add("team-a/stuck");
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  const auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(stuck_reason({}, &workers, now, minutes(10)), "") << "a reconcile within the limit is healthy";
  const std::string why = stuck_reason({}, &workers, now + minutes(11), minutes(10));
  EXPECT_NE(why.find("the reconcile of team-a/stuck has run 660 s (limit 600 s)"), std::string::npos) << why;
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  workers.stop();
  EXPECT_EQ(workers.longest_in_flight(now + minutes(11)), std::nullopt) << "a finished reconcile is not in flight";
}

}  // namespace
}  // namespace kubedist::controller
