// Reading TrainingJobs and pods from API JSON; every spec rule the schema cannot enforce is checked here.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "trainingjob/types.h"

namespace kubedist::trainingjob {

// Parses a TrainingJob object. Fails only when the object cannot be addressed (no name/namespace);
// an invalid spec yields a job whose spec_error says what is wrong, so it can be reported on the object.
Result<TrainingJob> parse_training_job(const nlohmann::json& obj);

// Validates and defaults a spec. Errors name the field: "spec.replicas: must be an integer >= 1, got \"x\"".
Result<Spec> parse_spec(const nlohmann::json& spec, const std::string& job_name);

Status parse_status(const nlohmann::json& status);
nlohmann::json status_to_json(const Status& status);

// Extracts the facts the reconciler uses from a core/v1 Pod; trainer_name picks the container whose
// exit code counts (the container named "trainer", else the only one).
PodFacts parse_pod_facts(const nlohmann::json& pod);
ServiceFacts parse_service_facts(const nlohmann::json& service);
SecretFacts parse_secret_facts(const nlohmann::json& secret);
NodeFacts parse_node_facts(const nlohmann::json& node);
PodGroupFacts parse_pod_group_facts(const nlohmann::json& pod_group);

// The uid of an object's controller owner reference, "" if none.
std::string controller_uid(const nlohmann::json& obj);

}  // namespace kubedist::trainingjob
