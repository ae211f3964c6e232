// The environment contract between the operator and the launcher: every variable a node's pod receives.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trainingjob/types.h"

namespace kubedist::trainingjob {

// MASTER_ADDR, MASTER_PORT, NODE_RANK, NNODES, NPROC_PER_NODE, KUBEDIST_JOB and torchrun's PET_* twins
// (PET_MAX_RESTARTS too), in a fixed order. These override user env entries of the same name.
std::vector<std::pair<std::string, std::string>> node_env(const TrainingJob& job, int rank);

// "N", or "MIN:MAX" when the job is elastic.
std::string nnodes_value(const Spec& spec);

// J-node-0.J.NS.svc: resolvable through the headless Service once node 0 has an IP.
std::string master_addr(const TrainingJob& job);

}  // namespace kubedist::trainingjob
