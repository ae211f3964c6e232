// What the operator keeps of the objects it watches besides TrainingJobs: pods, Services, Secrets and nodes, read
// from API JSON into the small facts of types.h (thousands of pods fit in the cache). An integration's objects are
// read in its folder (gang/facts.h, kueue/facts.h).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// Extracts the facts the reconciler uses from a core/v1 Pod; the container whose exit code counts is the trainer
// (the container named "trainer", else the first one).
PodFacts parse_pod_facts(const nlohmann::json& pod);
ServiceFacts parse_service_facts(const nlohmann::json& service);
SecretFacts parse_secret_facts(const nlohmann::json& secret);
NodeFacts parse_node_facts(const nlohmann::json& node);

// A node-rank label's rank: "0" or a number of up to six digits without a leading zero; else -1.
int node_rank_from_label(std::string_view label);

// The uid of an object's controller owner reference, "" if none.
std::string controller_uid(const nlohmann::json& obj);

}  // namespace kubedist::trainingjob
