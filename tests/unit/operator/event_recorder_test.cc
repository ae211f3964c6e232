// The Event recorder: one Event for a decision repeated on every pass, counted as client-go's recorder counts it
// (issue 39 item 8).
#include "kube/event_recorder.h"

#include <gtest/gtest.h>

#include "fake_api.h"

namespace kubedist::kube {
namespace {

using kubedist::testing::FakeApi;

const std::string kEvents = "/api/v1/namespaces/team-a/events";
const ObjectRef kJob{"kubedist.io/v1alpha1", "TrainingJob", "team-a", "resnet", "uid-1"};

TEST(EventRecorder, CountsARepeatedEventOnTheFirstInsteadOfMakingANewOne) {
  FakeApi api;
  EventRecorder recorder(api, "kubedist-operator");
  for (int i = 0; i < 3; ++i) recorder.record(kJob, "Warning", "HangDetected", "rank 1 stuck");
  const auto events = api.list(kEvents);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].value("count", 0), 3);
  EXPECT_EQ(events[0].value("message", ""), "rank 1 stuck");
  EXPECT_EQ(api.calls("create", kEvents).size(), 1u);
  EXPECT_EQ(api.calls("patch", kEvents).size(), 2u);
}

TEST(EventRecorder, AnEventThatDiffersInObjectTypeReasonOrMessageIsANewOne) {
  FakeApi api;
  EventRecorder recorder(api, "kubedist-operator");
  ObjectRef other = kJob;
  other.name = "bert";
  other.uid = "uid-2";
  ObjectRef recreated = kJob;  // the same name, a new job
  recreated.uid = "uid-3";
  recorder.record(kJob, "Warning", "PodFailed", "pod resnet-node-0 failed");
  recorder.record(other, "Warning", "PodFailed", "pod resnet-node-0 failed");
  recorder.record(recreated, "Warning", "PodFailed", "pod resnet-node-0 failed");
  recorder.record(kJob, "Normal", "PodFailed", "pod resnet-node-0 failed");
  recorder.record(kJob, "Warning", "Created", "pod resnet-node-0 failed");
  recorder.record(kJob, "Warning", "PodFailed", "pod resnet-node-1 failed");
  const auto events = api.list(kEvents);
  EXPECT_EQ(events.size(), 6u);
  for (const auto& e : events) EXPECT_EQ(e.value("count", 0), 1);
}

TEST(EventRecorder, TenDifferentMessagesOfOneReasonAreCombinedIntoOneEventAsClientGoDoes) {
  FakeApi api;
  EventRecorder recorder(api, "kubedist-operator");
  // Three jobs' worth of honest, different failures of one job: the first 9 are Events of their own...
  for (int i = 0; i < 12; ++i) {
    recorder.record(kJob, "Warning", "PodFailed", "pod resnet-node-" + std::to_string(i) + " failed (exit code 1)");
  }
  recorder.record(kJob, "Normal", "Created", "creating pods");  // another reason: its own Event, as always
  const auto events = api.list(kEvents);
  ASSERT_EQ(events.size(), 9u + 1u + 1u);
  int combined = 0;
  for (const auto& e : events) {
    const std::string message = e.value("message", "");
    if (message.rfind("(combined from similar events): ", 0) != 0) {
      EXPECT_EQ(e.value("count", 0), 1) << message;
      continue;
    }
    ++combined;
    // ...and the 10th, 11th and 12th are one, counted, saying the latest.
    EXPECT_EQ(message, "(combined from similar events): pod resnet-node-11 failed (exit code 1)");
    EXPECT_EQ(e.value("count", 0), 3);
    EXPECT_EQ(e.value("reason", ""), "PodFailed");
  }
  EXPECT_EQ(combined, 1);
  // A repeat of an early message now counts on the combined one too.
  recorder.record(kJob, "Warning", "PodFailed", "pod resnet-node-0 failed (exit code 1)");
  EXPECT_EQ(api.list(kEvents).size(), 11u);
}

TEST(EventRecorder, AnEventGoneFromTheApiServerIsMadeAgain) {
  FakeApi api;
  EventRecorder recorder(api, "kubedist-operator");
  recorder.record(kJob, "Warning", "PodFailed", "m");
  ASSERT_EQ(api.list(kEvents).size(), 1u);
  api.erase(kEvents + "/" + api.list(kEvents)[0]["metadata"]["name"].get<std::string>());  // its hour is over
  recorder.record(kJob, "Warning", "PodFailed", "m");
  const auto events = api.list(kEvents);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].value("count", 0), 1);
  recorder.record(kJob, "Warning", "PodFailed", "m");
  EXPECT_EQ(api.list(kEvents)[0].value("count", 0), 2);
}

TEST(EventRecorder, RemembersAtMostItsLimitTheLeastRecentlyUsedForgottenFirst) {
  FakeApi api;
  EventRecorder recorder(api, "kubedist-operator", 2);
  recorder.record(kJob, "Normal", "A", "a");
  recorder.record(kJob, "Normal", "B", "b");
  recorder.record(kJob, "Normal", "A", "a");  // A used last: B is the one forgotten next
  recorder.record(kJob, "Normal", "C", "c");
  recorder.record(kJob, "Normal", "A", "a");  // still remembered: counted
  recorder.record(kJob, "Normal", "B", "b");  // forgotten: a new Event
  std::map<std::string, std::vector<int>> counts;
  for (const auto& e : api.list(kEvents)) counts[e.value("reason", "")].push_back(e.value("count", 0));
  EXPECT_EQ(counts["A"], std::vector<int>{3});
  EXPECT_EQ(counts["B"].size(), 2u);
  EXPECT_EQ(counts["C"], std::vector<int>{1});
}

// A job whose spec is refused may have any name the API server takes (253 characters): its Events' names fit too.
TEST(EventRecorder, NamesAnEventOfAnObjectWithTheLongestNameWithinTheLimit) {
  FakeApi api;
  EventRecorder recorder(api, "kubedist-operator");
  ObjectRef job = kJob;
  // 253 characters; the suffix (".<nanoseconds in hex>") is 17 of them: the cut falls just after the '-'.
  job.name = std::string(235, 'a') + "-" + std::string(17, 'c');
  recorder.record(job, "Warning", "InvalidSpec", "m");
  const auto events = api.list(kEvents);
  ASSERT_EQ(events.size(), 1u);
  const std::string name = events[0]["metadata"]["name"].get<std::string>();
  EXPECT_LE(name.size(), 253u);
  EXPECT_EQ(name.rfind(std::string(235, 'a') + ".", 0), 0u) << name;  // no "-." in a name
  EXPECT_EQ(events[0]["involvedObject"]["name"], job.name);
}

TEST(EventRecorder, AFailedCreateIsNotRememberedSoTheNextRecordTriesAgain) {
  FakeApi api;
  EventRecorder recorder(api, "kubedist-operator");
  api.answer("create", kEvents, 500, "InternalError");
  recorder.record(kJob, "Warning", "PodFailed", "m");
  EXPECT_TRUE(api.list(kEvents).empty());
  recorder.record(kJob, "Warning", "PodFailed", "m");
  ASSERT_EQ(api.list(kEvents).size(), 1u);
  EXPECT_EQ(api.list(kEvents)[0].value("count", 0), 1);
}

}  // namespace
}  // namespace kubedist::kube
