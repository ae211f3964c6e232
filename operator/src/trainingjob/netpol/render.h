// What per-job network isolation writes: NetworkPolicy J, which lets in the job's own pods and the peers the
// operator is told of.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// NetworkPolicy J (owned by the job, labelled with its name): selects the job's pods (kubedist.io/job-name=J) and
// lets in, on every port, the pods carrying the same label (the store, the rendezvous and the ports NCCL or gloo
// pick), then each rule of extra_ingress as given (the operator's STATUS polls, a metrics scraper: the chart's
// networkPolicy values). Ingress only.
nlohmann::json render_job_network_policy(const TrainingJob& job, const nlohmann::json& extra_ingress);

// Why rules is not a list of NetworkPolicy ingress rules as extra_ingress takes them (a JSON array of objects with
// at most "from" and "ports", each an array of objects); nullopt when it is. The API server checks the rest.
std::optional<std::string> check_ingress_rules(const nlohmann::json& rules);

}  // namespace kubedist::trainingjob
