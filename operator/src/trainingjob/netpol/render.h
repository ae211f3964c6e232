// What per-job network isolation writes: NetworkPolicy J, which lets the job's own pods reach each other.
#pragma once

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// NetworkPolicy J (owned by the job, labelled with its name): selects the job's pods (kubedist.io/job-name=J) and
// lets in, on every port, the pods carrying the same label: the store, the rendezvous and the ports NCCL or gloo
// pick. Ingress only; every other peer (the operator's STATUS polls, a metrics scraper) is let in by another policy
// (the chart's), since policies that select the same pod add up.
nlohmann::json render_job_network_policy(const TrainingJob& job);

}  // namespace kubedist::trainingjob
