// Reading a TrainingJob from API JSON: every spec rule the schema cannot enforce is checked here, and defaults set.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// Parses a TrainingJob object. Fails only when the object cannot be addressed (no name/namespace);
// an invalid spec yields a job whose spec_error says what is wrong, so it can be reported on the object.
// kept_conditions: the condition types its status keeps (the core's, and those of the integrations in use).
Result<TrainingJob> parse_training_job(const nlohmann::json& obj,
                                       const std::vector<ConditionType>& kept_conditions = core_condition_types());

// Validates and defaults a spec. Errors name the field: "spec.replicas: must be an integer >= 1, got \"x\"".
Result<Spec> parse_spec(const nlohmann::json& spec, const std::string& job_name);

}  // namespace kubedist::trainingjob
