// Progress in the status: spec.hangTimeout, status.progress's JSON, the decision from node 0's report (rate, ETA,
// goodput, the straggler, a hang), and the bound on the writes progress alone causes.
#include <gtest/gtest.h>

#include "test_jobs.h"
#include "test_plans.h"
#include "trainingjob/act/progress_writes.h"
#include "trainingjob/api/status_json.h"
#include "trainingjob/decide/decide_state.h"
#include "trainingjob/decide/launcher.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/decide/progress.h"
#include "trainingjob/decide/status.h"
#include "trainingjob/render/env.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;
constexpr UnixSeconds kNow = 1'800'000'000;

PodFacts pod(int rank) {
  PodFacts p;
  p.name = "resnet-node-" + std::to_string(rank);
  p.uid = "pod-" + std::to_string(rank);
  p.owner_uid = "uid-1";
  p.rank = rank;
  p.phase = "Running";
  p.ready = true;
  p.node_name = "gpu-" + std::to_string(rank);
  p.start_time = format_rfc3339(kNow - 100 + rank);
  return p;
}

Observed reporting(contract::StatusProgress progress, std::map<std::string, int> restarts = {}) {
  Observed o;
  o.pods = {pod(0), pod(1)};
  o.service_exists = true;
  o.launcher = LauncherReport{"pod-0", 0, 0, std::move(restarts), 2, 16, "running", "resnet", std::move(progress),
                              kNow - 4, {}, std::nullopt, {}, {}};
  return o;
}

contract::StatusProgress at_step(int64_t step) {
  contract::StatusProgress p;
  p.step = step;
  p.total_steps = 1000;
  p.epoch = 2;
  p.steps_per_second = 2.5;
  p.step_age_ms = 1000;
  p.busy_ms = 80000;
  p.lost_ms = 6000;
  p.metrics = {{"loss", 0.25}};
  return p;
}

TEST(HangTimeout, IsADurationOfHoursMinutesAndSecondsAndReachesTheLauncher) {
  for (const auto& [text, seconds] : std::vector<std::pair<std::string, int64_t>>{
           {"90s", 90}, {"10m", 600}, {"1h30m", 5400}, {"1h0m1s", 3601}, {"720h", 2592000}}) {
    auto j = testing::example_job_json();
    j["spec"]["hangTimeout"] = text;
    const TrainingJob job = testing::job_from(j);
    ASSERT_TRUE(job.spec_error.empty()) << text << ": " << job.spec_error;
    EXPECT_EQ(job.spec.hang_timeout_s, seconds) << text;
    bool found = false;
    for (const auto& [k, v] : node_env(job, 0)) found = found || (k == "PET_HANG_TIMEOUT" && v == std::to_string(seconds));
    EXPECT_TRUE(found) << text;
  }
  const TrainingJob none = testing::example_job();
  EXPECT_FALSE(none.spec.hang_timeout_s);
  for (const auto& [k, v] : node_env(none, 0)) EXPECT_NE(k, "PET_HANG_TIMEOUT");
}

TEST(HangTimeout, RefusesWhatIsNoDurationInRange) {
  for (const json& bad : {json("0s"), json("10"), json("1.5h"), json("-1m"), json("10 m"), json("721h"), json(30),
                          json("1d"), json("")}) {
    auto j = testing::example_job_json();
    j["spec"]["hangTimeout"] = bad;
    const TrainingJob job = testing::job_from(j);
    EXPECT_NE(job.spec_error.find("spec.hangTimeout: must be a duration from 1s to 720h"), std::string::npos)
        << bad.dump() << ": " << job.spec_error;
  }
}

TEST(ProgressStatus, RoundTripsThroughJsonAndClearsWhatIsGone) {
  Status s;
  ProgressStatus p;
  p.step = 240;
  p.total_steps = 1000;
  p.percent = 24;
  p.epoch = 1;
  p.samples = 9999999999;
  p.steps_per_second = 2.5;
  p.metrics = {{"loss", 0.5}, {"lr", 0.001}};
  p.summary = "24% (240/1000)";
  p.last_step_time = "2027-01-15T08:00:00Z";
  p.estimated_completion_time = "2027-01-15T08:05:04Z";
  p.slowest_rank = SlowestRank{3, "resnet-node-1", "gpu-1", 0.21, 1.85};
  p.started_at = "2027-01-15T07:00:00Z";
  p.productive_seconds = 3000;
  p.lost_seconds = 12.5;
  p.goodput = 0.833;
  s.progress = p;
  s.launcher.busy_before_ms = 5;
  s.launcher.lost_before_ms = 6;
  EXPECT_EQ(parse_status(status_to_json(s)), s);
  const json j = status_to_json(s);
  EXPECT_EQ(j["progress"]["estimatedCompletionTime"], "2027-01-15T08:05:04Z");
  EXPECT_EQ(j["progress"]["slowestRank"]["pod"], "resnet-node-1");
  // A merge patch keeps what it does not mention: a metric no longer reported, a straggler gone, must be nulled.
  Status after = s;
  after.progress->metrics.erase("lr");
  after.progress->slowest_rank.reset();
  const json patch = status_patch(s, after);
  EXPECT_TRUE(patch["progress"]["metrics"]["lr"].is_null());
  EXPECT_EQ(patch["progress"]["metrics"]["loss"], 0.5);
  EXPECT_TRUE(patch["progress"]["slowestRank"].is_null());
  Status no_progress;
  EXPECT_TRUE(status_to_json(no_progress)["progress"].is_null());
  // Somebody else's garbage reads as no figure, never a crash.
  const Status garbage = parse_status(json::parse(
      R"({"progress": {"step": "x", "totalSteps": 1.5, "metrics": {"a": "b", "c": 1}, "goodput": "high"}})"));
  ASSERT_TRUE(garbage.progress);
  EXPECT_EQ(garbage.progress->step, 0);
  EXPECT_FALSE(garbage.progress->total_steps);
  EXPECT_EQ(garbage.progress->metrics, (std::map<std::string, double>{{"c", 1}}));
  EXPECT_FALSE(garbage.progress->goodput);
}

TEST(DecideProgress, ShowsStepPercentRateAndAnEtaFromTheLastStep) {
  const auto job = testing::example_job();
  const Observed o = reporting(at_step(240));
  DecideState s(job, o, kNow);
  decide_progress(s, &s.live[0]);
  ASSERT_TRUE(s.plan.status.progress);
  const ProgressStatus& p = *s.plan.status.progress;
  EXPECT_EQ(p.step, 240);
  EXPECT_EQ(p.total_steps, 1000);
  EXPECT_EQ(p.percent, 24);
  EXPECT_EQ(p.epoch, 2);
  EXPECT_FALSE(p.samples);
  EXPECT_EQ(p.steps_per_second, 2.5);
  EXPECT_EQ(p.metrics.at("loss"), 0.25);
  EXPECT_EQ(p.summary, "24% (240/1000)");
  EXPECT_EQ(p.last_step_time, format_rfc3339(kNow - 5));  // polled 4 s ago, its last step 1 s before
  EXPECT_EQ(p.estimated_completion_time, format_rfc3339(kNow - 5 + 304));  // 760 steps at 2.5 a second
  EXPECT_EQ(p.started_at, format_rfc3339(kNow - 100));  // the first pod's start
  EXPECT_EQ(p.productive_seconds, 80);
  EXPECT_EQ(p.lost_seconds, 6);
  EXPECT_EQ(p.goodput, 0.8);
  EXPECT_FALSE(p.slowest_rank);
  EXPECT_TRUE(s.plan.events.empty());
  // Without a total: no percent, no ETA.
  auto open_ended = at_step(7);
  open_ended.total_steps = -1;
  const Observed t_seen = reporting(open_ended);
  DecideState t(job, t_seen, kNow);
  decide_progress(t, &t.live[0]);
  EXPECT_EQ(t.plan.status.progress->summary, "step 7");
  EXPECT_FALSE(t.plan.status.progress->percent);
  EXPECT_EQ(t.plan.status.progress->estimated_completion_time, "");
  EXPECT_EQ(progress_summary(1200, 1000), "100% (1200/1000)");
}

TEST(DecideProgress, KeepsWhatItShowedWithoutAReportOfThisNodeZero) {
  auto job = testing::example_job();
  job.status.progress = ProgressStatus{};
  job.status.progress->step = 9;
  Observed o = reporting(at_step(240));
  o.launcher->pod_uid = "old-node-0";
  DecideState s(job, o, kNow);
  decide_progress(s, &s.live[0]);
  EXPECT_EQ(s.plan.status.progress->step, 9);
  o.launcher->pod_uid = "pod-0";
  o.launcher->progress.reset();  // nothing reported yet (a launcher restarted, an older launcher)
  DecideState none(job, o, kNow);
  decide_progress(none, &none.live[0]);
  EXPECT_EQ(none.plan.status.progress->step, 9);
}

TEST(DecideProgress, TheNewestCheckpointReachesTheStatusWhenItsStepIsNewAndRoundTrips) {
  auto job = testing::example_job();
  Observed o = reporting(at_step(240));
  o.launcher->checkpoint = contract::StatusCheckpoint{200, "periodic", 16, 3000};
  DecideState s(job, o, kNow);
  decide_progress(s, &s.live[0]);
  const CheckpointStatus want{200, format_rfc3339(kNow - 7), "periodic", 16};  // polled 4 s ago, heard 3 s before
  EXPECT_EQ(s.plan.status.checkpoint, want);
  Status back;
  from_json(json(s.plan.status), back);
  EXPECT_EQ(back.checkpoint, want);
  job.status.checkpoint = want;
  o.launcher->checkpoint->age_ms = 9000;  // the same one, asked later: its time stays
  DecideState again(job, o, kNow + 10);
  decide_progress(again, &again.live[0]);
  EXPECT_EQ(again.plan.status.checkpoint, want);
  o.launcher->checkpoint.reset();  // a new node 0 has heard of none yet: the one written stays
  o.launcher->pod_uid = "pod-0";
  DecideState none(job, o, kNow + 20);
  decide_progress(none, &none.live[0]);
  EXPECT_EQ(none.plan.status.checkpoint, want);
  o.launcher->checkpoint = contract::StatusCheckpoint{400, "periodic", 16, 0};
  o.launcher->pod_uid = "an-earlier-node-0";  // not this node 0's word
  DecideState other(job, o, kNow + 20);
  decide_progress(other, &other.live[0]);
  EXPECT_EQ(other.plan.status.checkpoint, want);
  Status hostile;
  from_json(json{{"checkpoint", {{"step", -4}, {"ranks", 2}}}}, hostile);
  EXPECT_FALSE(hostile.checkpoint) << "a negative step written by someone else is no checkpoint";
}

TEST(DecideCheckpoint, APodWaitingForAMissingClaimIsAConditionAndOneEventNeverAFailure) {
  json j = testing::example_job_json();
  j["spec"]["checkpoint"] = {{"claimName", "ckpt"}};
  auto job = testing::job_from(j);
  ASSERT_EQ(job.spec_error, "");
  Observed o = reporting(at_step(1));
  o.pods[1].phase = "Pending";
  o.pods[1].unschedulable_since = format_rfc3339(kNow - 5);
  o.pods[1].unschedulable_message = "0/3 nodes are available: persistentvolumeclaim \"ckpt\" not found.";
  Plan p = decide(job, o, kNow);
  const Condition* c = find_condition(p.status, ConditionType::kCheckpointVolumeMissing);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "True");
  EXPECT_EQ(c->reason, "ClaimNotFound");
  EXPECT_EQ(c->message, "PersistentVolumeClaim ckpt (spec.checkpoint.claimName) does not exist in namespace team-a: the "
                        "job's pods wait for it (pod resnet-node-1: 0/3 nodes are available: persistentvolumeclaim "
                        "\"ckpt\" not found.)");
  EXPECT_TRUE(testing::has_event(p, "CheckpointVolumeMissing"));
  EXPECT_NE(p.status.phase, JobPhase::kFailed);
  job.status = p.status;
  p = decide(job, o, kNow + 5);
  EXPECT_FALSE(testing::has_event(p, "CheckpointVolumeMissing")) << "said once";
  o.pods[1].unschedulable_message = "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.";
  p = decide(job, o, kNow + 10);
  c = find_condition(p.status, ConditionType::kCheckpointVolumeMissing);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "ClaimFound");
  auto other = testing::example_job();  // another claim's message, or no spec.checkpoint: no condition
  EXPECT_EQ(find_condition(decide(other, o, kNow).status, ConditionType::kCheckpointVolumeMissing), nullptr);
}

TEST(DecideProgress, AJobFinishedByNodeZeroShowsItsLastReportNotTheLastProgressWrite) {
  auto job = testing::example_job();
  job.spec.replicas = 2;
  job.status.phase = JobPhase::kRunning;
  job.status.progress = ProgressStatus{};  // what the last write of progress alone showed
  job.status.progress->step = 840;
  job.status.progress->estimated_completion_time = format_rfc3339(kNow + 60);
  auto last = at_step(1000);
  last.steps_per_second = 0;
  Observed o = reporting(last);
  o.pods[0].phase = "Succeeded";  // node 0's launcher, the rendezvous host, exited 0
  o.pods[0].exit_code = 0;
  o.pods[1].ready = false;        // node 1 on its way out: no grace to wait for
  const Plan p = decide(job, o, kNow);
  ASSERT_EQ(p.status.phase, JobPhase::kSucceeded);
  EXPECT_EQ(find_condition(p.status, ConditionType::kSucceeded)->reason, "GroupFinished");
  ASSERT_TRUE(p.status.progress);
  EXPECT_EQ(p.status.progress->step, 1000);
  EXPECT_EQ(p.status.progress->summary, "100% (1000/1000)");
  EXPECT_EQ(p.status.progress->last_step_time, format_rfc3339(kNow - 5));
  EXPECT_EQ(p.status.progress->estimated_completion_time, "");  // nothing left to wait for
}

TEST(DecideProgress, NamesAStragglerOnceWithItsPodAndNode) {
  auto job = testing::example_job();
  auto slow = at_step(300);
  slow.slow_rank = 11;
  slow.slow_node_rank = 1;
  slow.slow_ratio = 1.854;
  slow.slow_step_seconds = 0.2123;
  const Observed s_seen = reporting(slow);
  DecideState s(job, s_seen, kNow);
  decide_progress(s, &s.live[0]);
  ASSERT_TRUE(s.plan.status.progress->slowest_rank);
  EXPECT_EQ(*s.plan.status.progress->slowest_rank, (SlowestRank{11, "resnet-node-1", "gpu-1", 0.212, 1.85}));
  ASSERT_EQ(s.plan.events.size(), 1u);
  EXPECT_EQ(s.plan.events[0].type, "Warning");
  EXPECT_EQ(s.plan.events[0].reason, "Straggler");
  EXPECT_EQ(s.plan.events[0].message,
            "rank 11 (pod resnet-node-1 on node gpu-1) takes 0.212 s per step, 1.85x the median of the other ranks");
  job.status = s.plan.status;
  const Observed again_seen = reporting(slow);
  DecideState again(job, again_seen, kNow + 10);
  decide_progress(again, &again.live[0]);
  EXPECT_TRUE(again.plan.events.empty());  // the same straggler: no second Event
  const Observed gone_seen = reporting(at_step(310));
  DecideState gone(job, gone_seen, kNow + 20);
  decide_progress(gone, &gone.live[0]);
  EXPECT_FALSE(gone.plan.status.progress->slowest_rank);
}

TEST(DecideProgress, GoodputKeepsEarlierNodeZeroPodsTime) {
  auto job = testing::example_job();
  const Observed first_seen = reporting(at_step(240));
  DecideState first(job, first_seen, kNow);
  decide_progress(first, &first.live[0]);
  fold_launcher(first, &first.live[0]);
  job.status = first.plan.status;
  // Node 0's pod was replaced: its launcher counts from zero.
  Observed o = reporting(at_step(250));
  o.pods[0].uid = "pod-0-new";
  o.launcher->pod_uid = "pod-0-new";
  o.launcher->progress->busy_ms = 5000;
  o.launcher->progress->lost_ms = 1000;
  DecideState s(job, o, kNow + 20);
  decide_progress(s, &s.live[0]);
  fold_launcher(s, &s.live[0]);
  EXPECT_EQ(s.plan.status.launcher.pod_uid, "pod-0-new");
  EXPECT_EQ(s.plan.status.launcher.busy_before_ms, 80000);
  EXPECT_EQ(s.plan.status.launcher.lost_before_ms, 6000);
  EXPECT_EQ(s.plan.status.progress->productive_seconds, 85);
  EXPECT_EQ(s.plan.status.progress->lost_seconds, 7);
  EXPECT_EQ(s.plan.status.progress->goodput, 0.708);  // 85 of 120 s
}

TEST(DecideLauncher, AHangIsARestartWithItsStacksInLastFailureAndAnEvent) {
  auto job = testing::example_job();
  auto hung = at_step(5);
  hung.hang_message = "no step for 31 s (hang timeout 30 s): rank 3 on resnet-node-1 stuck 31 s at step 4 in recv "
                      "(train.py:40) [recv distributed_c10d.py:1120 < main train.py:40]";
  hung.hang_age_ms = 6000;
  const Observed s_seen = reporting(hung, {{kRestartHang, 1}, {kRestartWorkerCrash, 0}});
  DecideState s(job, s_seen, kNow);
  fold_launcher(s, &s.live[0]);
  EXPECT_EQ(s.plan.status.restarts_by_reason[kRestartHang], 1);
  EXPECT_EQ(s.plan.status.restarts, 1);
  ASSERT_TRUE(s.plan.status.last_failure);
  EXPECT_EQ(s.plan.status.last_failure->reason, "Hang");
  EXPECT_EQ(s.plan.status.last_failure->pod, "resnet-node-1");
  EXPECT_EQ(s.plan.status.last_failure->node, "gpu-1");
  EXPECT_EQ(s.plan.status.last_failure->time, format_rfc3339(kNow - 10));
  EXPECT_EQ(s.plan.status.last_failure->message, hung.hang_message);
  ASSERT_EQ(s.plan.events.size(), 1u);
  EXPECT_EQ(s.plan.events[0].reason, "HangDetected");
  EXPECT_NE(s.plan.events[0].message.find("rank 3 on resnet-node-1 stuck 31 s at step 4 in recv (train.py:40)"),
            std::string::npos);
  EXPECT_EQ(s.plan.status.launcher.absorb, 0);  // nothing the operator counted: never absorbed
  // The node of the rank the others wait for is the suspect: one failure there (decide/bad_nodes.h).
  EXPECT_EQ(s.plan.status.node_failures, (std::map<std::string, int>{{"gpu-1", 1}}));
  job.status = s.plan.status;
  const Observed again_seen = reporting(hung, {{kRestartHang, 1}});
  DecideState again(job, again_seen, kNow + 10);
  fold_launcher(again, &again.live[0]);
  EXPECT_TRUE(again.plan.events.empty());
  EXPECT_EQ(again.plan.status.restarts, 1);
  EXPECT_EQ(again.plan.status.node_failures, (std::map<std::string, int>{{"gpu-1", 1}}));  // the same hang
  // A second hang stuck on the same node: gpu-1 is avoided (the default limit of 2).
  const Observed twice_seen = reporting(hung, {{kRestartHang, 2}});
  DecideState twice(job, twice_seen, kNow + 60);
  fold_launcher(twice, &twice.live[0]);
  EXPECT_EQ(twice.plan.status.avoided_nodes, (std::vector<std::string>{"gpu-1"}));
  EXPECT_TRUE(testing::has_event(twice.plan, "NodeAvoided"));
}

TEST(ProgressWrites, HoldsAWriteOfProgressAloneUntilTheIntervalAfterTheLastWrite) {
  using Clock = ProgressWrites::Clock;
  using namespace std::chrono_literals;
  ProgressWrites w(30s);
  Status before;
  before.phase = JobPhase::kRunning;
  Status first = before;
  first.progress = ProgressStatus{};
  const Clock::time_point t{};
  EXPECT_EQ(w.hold("ns/j", before, first, t), 0ms);  // the first progress a job shows
  w.written("ns/j", t);
  Status next = first;
  next.progress->step = 10;
  EXPECT_EQ(w.hold("ns/j", first, next, t + 10s), 20000ms);
  EXPECT_EQ(w.hold("ns/j", first, next, t + 30s), 0ms);
  EXPECT_EQ(w.hold("other/j", first, next, t + 10s), 0ms);  // no write seen (an operator restarted)
  Status news = next;
  news.restarts = 1;  // anything else is news
  EXPECT_EQ(w.hold("ns/j", first, news, t + 10s), 0ms);
  Status straggler = next;
  straggler.progress->slowest_rank = SlowestRank{};
  EXPECT_EQ(w.hold("ns/j", first, straggler, t + 10s), 0ms);
  w.forget("ns/j");
  EXPECT_EQ(w.hold("ns/j", first, next, t + 10s), 0ms);
  ProgressWrites unbounded(0ms);
  unbounded.written("ns/j", t);
  EXPECT_EQ(unbounded.hold("ns/j", first, next, t + 1s), 0ms);
}

}  // namespace
}  // namespace kubedist::trainingjob
