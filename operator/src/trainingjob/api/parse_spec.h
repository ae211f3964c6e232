// Reading a TrainingJob from API JSON: every spec rule the schema cannot enforce is checked here, and defaults set.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// Parses a TrainingJob object. Fails only when the object cannot be addressed (no name/namespace);
// an invalid spec yields a job whose spec_error says what is wrong, so it can be reported on the object.
Result<TrainingJob> parse_training_job(const nlohmann::json& obj);

// Validates and defaults a spec. Errors name the field: "spec.replicas: must be an integer >= 1, got \"x\"".
Result<Spec> parse_spec(const nlohmann::json& spec, const std::string& job_name);

}  // namespace kubedist::trainingjob
