// Numbers from outside (node 0's STATUS line, a job's status as served) are bounded before any arithmetic: the
// status the operator writes from them is one the CRD accepts (issue 39 item 8).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "common/time.h"
#include "contract/status_line.h"
#include "test_jobs.h"
#include "trainingjob/act/launcher_poller.h"
#include "trainingjob/api/bounds.h"
#include "trainingjob/api/parse_spec.h"
#include "trainingjob/api/status_json.h"
#include "trainingjob/decide/decide_state.h"
#include "trainingjob/decide/launcher.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/decide/progress.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;
constexpr UnixSeconds kNow = 1'800'000'000;

// A time the CRD's date-time format takes: four digits of year, read back as written.
void expect_a_date_time(const std::string& t) {
  SCOPED_TRACE(t);
  ASSERT_EQ(t.size(), 20u);
  const auto parsed = parse_rfc3339(t);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(format_rfc3339(*parsed), t);
  EXPECT_GE(t.substr(0, 4), "1900");
}

TEST(TemplateBytes, ATemplateOverTheBoundIsASpecErrorAndIsNotKept) {
  // About its JSON size: within a few percent of the dump, and never counting past the limit + 1.
  json t = testing::example_job_json()["spec"]["template"];
  t["spec"]["containers"][0]["env"] = json::array({{{"name", "BLOB"}, {"value", std::string(100000, 'x')}}});
  const size_t dumped = t.dump().size();
  const size_t estimated = json_bytes_up_to(t, 1 << 30);
  EXPECT_GT(estimated, dumped * 95 / 100);
  EXPECT_LT(estimated, dumped * 105 / 100);
  EXPECT_EQ(json_bytes_up_to(t, 1000), 1001u);

  // A job of 1.3 MB, as a tenant could store (the API server takes 1.5 MB): refused naming the field, its template
  // not held.
  json big = testing::example_job_json();
  big["spec"]["template"]["spec"]["containers"][0]["env"] =
      json::array({{{"name", "BLOB"}, {"value", std::string(1300 * 1024, 'x')}}});
  auto job = parse_training_job(big, {});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->spec_error, "spec.template: over 262144 bytes; the operator keeps it for every pod it makes: keep large "
                             "data (environment values, files) in a ConfigMap or a volume");
  EXPECT_TRUE(job->spec.template_->is_null() || job->spec.template_->empty());
  // Just under the bound: taken, and held once: every copy of the job (the informer's, a reconcile's, the poller's)
  // shares the one parsed tree.
  big["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = std::string(200 * 1024, 'x');
  job = parse_training_job(big, {});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->spec_error, "");
  const TrainingJob copy = *job;
  EXPECT_TRUE(copy.spec.template_.same(job->spec.template_));
  EXPECT_EQ((*copy.spec.template_)["spec"]["containers"][0]["env"][0]["value"].get_ref<const std::string&>().size(),
            200u * 1024);
  EXPECT_FALSE(parse_training_job(big, {})->spec.template_.same(job->spec.template_));  // a parse is a new tree
}

TEST(Bounded, HoldsEachProgressFieldToItsRangeAndKeepsNotReported) {
  contract::StatusProgress p;
  p.step = 999'999'999'999'999'999;
  p.total_steps = -1;
  p.epoch = 999'999'999'999'999'999;
  p.samples = 7;
  p.step_age_ms = 999'999'999'999'999'999;
  p.hang_age_ms = 999'999'999'999'999'999;
  p.busy_ms = 5;
  p.steps_per_second = 1e300;
  p.slow_ratio = std::numeric_limits<double>::quiet_NaN();
  const contract::StatusProgress b = bounded(p);
  EXPECT_EQ(b.step, kMaxCount);
  EXPECT_EQ(b.total_steps, -1);  // not reported stays so
  EXPECT_EQ(b.epoch, kMaxCount);
  EXPECT_EQ(b.samples, 7);
  EXPECT_EQ(b.step_age_ms, kMaxDurationMs);
  EXPECT_EQ(b.hang_age_ms, kMaxDurationMs);
  EXPECT_EQ(b.busy_ms, 5);
  EXPECT_EQ(b.steps_per_second, kMaxRate);
  EXPECT_EQ(b.slow_ratio, 0);
  EXPECT_EQ(restart_count(std::nullopt), 0);
  EXPECT_EQ(restart_count(-3), 0);
  EXPECT_EQ(restart_count(int64_t{1} << 40), kMaxRestarts);
}

// The probe's line: every count 18 digits, the largest the parser takes. step * 100 overflowed, and
// polled - age_ms / 1000 gave lastStepTime a year before 0000, which the CRD refused on every write of the job.
TEST(HostileNumbers, AStatusLineOfEighteenDigitCountsGivesAStatusTheCrdTakes) {
  const std::string nines = "999999999999999999";
  const auto parsed = contract::parse_status_line(
      "STATUS round=0 restarts=1 hang=1 nodes=2 world_size=16 phase=running run=resnet step=" + nines +
      " total=999999999999999998 epoch=" + nines + " samples=" + nines + " sps=1e300 age_ms=" + nines +
      " up_ms=" + nines + " busy_ms=" + nines + " lost_ms=" + nines + " slow=1,1,1e300,1e300 hang_age_ms=" + nines +
      " hang_msg=rank%201%20on%20resnet-node-1%20stuck");
  ASSERT_TRUE(parsed.report) << parsed.error;
  LauncherReport report = launcher_report(*parsed.report, "pod-0");
  report.polled_at = kNow;

  Observed o;
  o.pods = {testing::example_pod(0, "Running"), testing::example_pod(1, "Running")};
  for (auto& pod : o.pods) pod.start_time = format_rfc3339(kNow - 100);  // goodput's wall time: 100 s
  o.service_exists = true;
  o.launcher = report;
  TrainingJob job = testing::example_job();
  job.status.launcher.busy_before_ms = kMaxDurationMs;  // as read back from a status (bounded there too)
  DecideState s(job, o, kNow);
  decide_progress(s, &s.live[0]);
  fold_launcher(s, &s.live[0]);

  ASSERT_TRUE(s.plan.status.progress);
  const ProgressStatus& p = *s.plan.status.progress;
  ASSERT_TRUE(p.percent);
  EXPECT_GE(*p.percent, 0);
  EXPECT_LE(*p.percent, 100);
  expect_a_date_time(p.last_step_time);
  if (!p.estimated_completion_time.empty()) expect_a_date_time(p.estimated_completion_time);
  EXPECT_GE(p.productive_seconds, 0);
  EXPECT_LE(p.productive_seconds, 2.0 * kMaxDurationMs / 1000);
  ASSERT_TRUE(p.goodput);
  EXPECT_EQ(*p.goodput, 1.0);  // a busy time past the wall time reads as all of it
  ASSERT_TRUE(s.plan.status.last_failure);
  expect_a_date_time(s.plan.status.last_failure->time);
  // What is written reads back the same.
  const json written = status_to_json(s.plan.status);
  EXPECT_EQ(parse_status(written, {}).progress->last_step_time, p.last_step_time);
}

// Anyone with the status subresource can write any number there: the operator adds to the counts it reads back.
TEST(HostileNumbers, CountsReadBackFromAStatusAreBoundedBeforeTheyAreAddedTo) {
  const json status = json::parse(R"({
    "restarts": 9223372036854775807,
    "restartsByReason": {"pod_failure": 2147483647, "hang": -5},
    "launcher": {"podUID": "pod-0", "busyBeforeMs": 9223372036854775807, "lostBeforeMs": -1,
                 "absorb": 4294967297, "prepaid": 9223372036854775807},
    "progress": {"step": 9223372036854775807, "productiveSeconds": 1e308, "lostSeconds": -1e308}
  })");
  const Status s = parse_status(status, {});
  EXPECT_EQ(s.restarts, kMaxRestarts);
  EXPECT_EQ(s.restarts_by_reason.at("pod_failure"), kMaxRestarts);
  EXPECT_EQ(s.restarts_by_reason.at("hang"), 0);
  EXPECT_EQ(s.launcher.busy_before_ms, kMaxDurationMs);
  EXPECT_EQ(s.launcher.lost_before_ms, 0);
  EXPECT_EQ(s.launcher.absorb, kMaxRestarts);  // not 1, as 2^32 + 1 read as an int was
  EXPECT_EQ(s.launcher.prepaid, kMaxRestarts);
  ASSERT_TRUE(s.progress);
  EXPECT_EQ(s.progress->step, kMaxCount);
  EXPECT_EQ(s.progress->productive_seconds, kMaxDurationMs / 1000.0);
  EXPECT_EQ(s.progress->lost_seconds, 0);
}

TEST(FormatRfc3339, NeverWritesAYearOfOtherThanFourDigits) {
  EXPECT_EQ(format_rfc3339(-999'999'999'999'999), "1000-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(999'999'999'999'999), "9999-12-31T23:59:59Z");
  EXPECT_EQ(format_rfc3339(0), "1970-01-01T00:00:00Z");
}

}  // namespace
}  // namespace kubedist::trainingjob
