#include "trainingjob/api/job_state.h"

#include <gtest/gtest.h>

#include "trainingjob/api/parse.h"
#include "trainingjob/gang/decide.h"
#include "trainingjob/kueue/decide.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

// The API spellings are the CRD's (crd/kubedist.io_trainingjobs.yaml): what kubectl, dashboards and
// `kubectl wait --for=condition=...` read, so they must never change with the C++ names.
TEST(JobState, PhasesKeepTheirApiSpellings) {
  const std::vector<std::pair<JobPhase, std::string>> cases{
      {JobPhase::kNone, ""},           {JobPhase::kPending, "Pending"},     {JobPhase::kRunning, "Running"},
      {JobPhase::kRestarting, "Restarting"}, {JobPhase::kScaling, "Scaling"}, {JobPhase::kSucceeded, "Succeeded"},
      {JobPhase::kFailed, "Failed"},   {JobPhase::kSuspended, "Suspended"}};
  for (const auto& [phase, api] : cases) {
    EXPECT_EQ(to_string(phase), api);
    EXPECT_EQ(parse_job_phase(api), phase) << api;
  }
}

TEST(JobState, ConditionTypesKeepTheirApiSpellings) {
  const std::vector<std::pair<ConditionType, std::string>> cases{
      {ConditionType::kCreated, "Created"},     {ConditionType::kRunning, "Running"},
      {ConditionType::kRestarting, "Restarting"}, {ConditionType::kSucceeded, "Succeeded"},
      {ConditionType::kFailed, "Failed"},       {ConditionType::kSuspended, "Suspended"},
      {kGangScheduled, "GangScheduled"},          {kAdmitted, "Admitted"}};
  const std::vector<ConditionType> kept = {kGangScheduled, kAdmitted};
  for (const auto& [type, api] : cases) {
    EXPECT_EQ(to_string(type), api);
    EXPECT_EQ(parse_condition_type(api, is_core(type) ? core_condition_types() : kept), type) << api;
  }
}

TEST(JobState, AForeignPhaseReadsAsNoneAndAForeignConditionAsNoneOfOurs) {
  EXPECT_EQ(parse_job_phase("running"), JobPhase::kNone);  // case matters, as in the API
  EXPECT_EQ(parse_job_phase("Unknown"), JobPhase::kNone);
  EXPECT_FALSE(parse_condition_type("Ready", core_condition_types()).has_value());
  EXPECT_FALSE(parse_condition_type("", core_condition_types()).has_value());
  // An integration's type is kept only where the integration is in use.
  EXPECT_FALSE(parse_condition_type("GangScheduled", core_condition_types()).has_value());
}

TEST(JobState, StatusJsonCarriesTheApiStringsAndDropsForeignConditions) {
  const json in = json::parse(R"({"phase": "Restarting", "conditions": [
      {"type": "Restarting", "status": "True", "reason": "PodFailed", "message": "m", "lastTransitionTime": "t"},
      {"type": "SomeoneElses", "status": "True"},
      {"type": "GangScheduled", "status": "False", "reason": "Unschedulable", "message": "w", "lastTransitionTime": "u"}]})");
  std::vector<ConditionType> kept = core_condition_types();
  kept.push_back(kGangScheduled);
  const Status s = parse_status(in, kept);
  EXPECT_EQ(parse_status(in).conditions.size(), 1u);  // without gang scheduling in use, its condition is foreign
  EXPECT_EQ(s.phase, JobPhase::kRestarting);
  ASSERT_EQ(s.conditions.size(), 2u);
  EXPECT_EQ(s.conditions[0].type, ConditionType::kRestarting);
  EXPECT_EQ(s.conditions[1].type, kGangScheduled);
  const json out = status_to_json(s);
  EXPECT_EQ(out["phase"], "Restarting");
  EXPECT_EQ(out["conditions"][0]["type"], "Restarting");
  EXPECT_EQ(out["conditions"][1]["type"], "GangScheduled");
  EXPECT_EQ(status_to_json(Status{})["phase"], "");  // never written as anything else before the first decision
}

}  // namespace
}  // namespace kubedist::trainingjob
