#include "trainingjob/act/pending_writes.h"

#include <gtest/gtest.h>

#include "trainingjob/gang/decide.h"

namespace kubedist::trainingjob {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Status pending(int replicas, int ready) {
  Status s;
  s.phase = JobPhase::kPending;
  s.replicas = replicas;
  s.ready_replicas = ready;
  return s;
}

const PendingWrites::Clock::time_point t0{};

TEST(PendingWrites, HoldsThePendingWriteOfAJobWhosePodsAreStarting) {
  PendingWrites w(seconds(30));
  EXPECT_EQ(w.hold("ns/j", Status{}, pending(8, 0), t0), milliseconds(30000));
}

TEST(PendingWrites, KeepsHoldingWhileThePodsMakeTheirWayButNeverLongerThanTheCap) {
  PendingWrites w(seconds(30));
  w.hold("ns/j", Status{}, pending(8, 0), t0);
  EXPECT_EQ(w.hold("ns/j", Status{}, pending(8, 3), t0 + seconds(4)), milliseconds(26000));
  // No pod moved for 20 s (a busy scheduler or kubelet): still held, up to the cap from the first hold.
  EXPECT_EQ(w.hold("ns/j", Status{}, pending(8, 3), t0 + seconds(24)), milliseconds(6000));
  EXPECT_EQ(w.hold("ns/j", Status{}, pending(8, 6), t0 + seconds(30)), milliseconds(0));
  // Written: the next change starts a new hold.
  EXPECT_EQ(w.hold("ns/j", pending(8, 6), pending(8, 7), t0 + seconds(31)), milliseconds(30000));
}

TEST(PendingWrites, WritesAtOnceWhenThePodsCannotBePlaced) {
  PendingWrites w(seconds(30));
  EXPECT_GT(w.hold("ns/j", Status{}, pending(8, 0), t0).count(), 0);
  EXPECT_EQ(w.hold("ns/j", Status{}, pending(8, 0), t0 + seconds(2), /*unschedulable=*/true), milliseconds(0));
}

TEST(PendingWrites, WritesEveryOtherChangeAtOnce) {
  PendingWrites w(seconds(30));
  Status running = pending(8, 8);
  running.phase = JobPhase::kRunning;
  EXPECT_EQ(w.hold("ns/j", Status{}, running, t0), milliseconds(0));
  Status restarted = pending(8, 0);
  restarted.restarts = 1;
  EXPECT_EQ(w.hold("ns/j", pending(8, 0), restarted, t0), milliseconds(0));
  Status failed = pending(8, 0);
  failed.phase = JobPhase::kFailed;
  EXPECT_EQ(w.hold("ns/j", Status{}, failed, t0), milliseconds(0));
}

TEST(PendingWrites, WritesTheSchedulersVerdictOnAGangAtOnce) {
  PendingWrites w(seconds(30));
  Status waiting = pending(2, 0);
  waiting.conditions.push_back({kGangScheduled, "False", "Unschedulable", "waits", ""});
  EXPECT_EQ(w.hold("ns/j", pending(2, 0), waiting, t0), milliseconds(0));
  Status placed = pending(2, 1);
  placed.conditions.push_back({kGangScheduled, "True", "Scheduled", "placed", ""});
  EXPECT_EQ(w.hold("ns/j", waiting, placed, t0 + seconds(1)), milliseconds(0));
  // The same verdict with moving pod counts is progress again.
  Status more = placed;
  more.ready_replicas = 2;
  EXPECT_GT(w.hold("ns/j", placed, more, t0 + seconds(2)).count(), 0);
}

TEST(PendingWrites, WritesTheApiServersRefusalOfThePodsAndItsEndAtOnce) {
  PendingWrites w(seconds(30));
  Status refused = pending(0, 0);
  refused.conditions.push_back({ConditionType::kPodsRefused, "True", "PodSecurity", "forbidden", ""});
  EXPECT_EQ(w.hold("ns/j", pending(0, 0), refused, t0), milliseconds(0));
  Status taken = pending(2, 0);
  taken.conditions.push_back({ConditionType::kPodsRefused, "False", "PodsCreated", "taken", ""});
  EXPECT_EQ(w.hold("ns/j", refused, taken, t0 + seconds(1)), milliseconds(0));
}

TEST(PendingWrites, ForgetsADeletedJob) {
  PendingWrites w(seconds(30));
  w.hold("ns/j", Status{}, pending(8, 0), t0);
  w.forget("ns/j");
  EXPECT_EQ(w.hold("ns/j", Status{}, pending(8, 0), t0 + seconds(40)), milliseconds(30000));
}

TEST(PendingWrites, KeepsJobsApart) {
  PendingWrites w(seconds(30));
  w.hold("ns/a", Status{}, pending(2, 0), t0);
  EXPECT_EQ(w.hold("ns/b", Status{}, pending(2, 0), t0 + seconds(4)), milliseconds(30000));
  EXPECT_EQ(w.hold("ns/a", Status{}, pending(2, 0), t0 + seconds(30)), milliseconds(0));
}

}  // namespace
}  // namespace kubedist::trainingjob
