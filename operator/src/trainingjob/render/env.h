// A node pod's environment, decided here alone: every variable the operator sets on the trainer (the launcher's
// side of the names: contract/pod_env.h), and how they meet the user's own entries.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainingjob/api/names.h"
#include "trainingjob/render/render.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// MASTER_ADDR, MASTER_PORT, NODE_RANK, NNODES, NPROC_PER_NODE, KUBEDIST_JOB and torchrun's PET_* twins
// (PET_MAX_RESTARTS too), in a fixed order. These override user env entries of the same name.
std::vector<std::pair<std::string, std::string>> node_env(const TrainingJob& job, int rank);

// The trainer container's env list: the user's entries that none of ours replaces, then node_env(), the launcher's
// metrics address and port (with a metrics port), KUBEDIST_TERMINATION_LOG (the container's
// terminationMessagePath), KUBEDIST_STOP_TIMEOUT (launcher_stop_timeout) and, with options.rdzv_secret,
// KUBEDIST_RDZV_SECRET_FILE.
nlohmann::json trainer_env(const nlohmann::json& trainer, const TrainingJob& job, int rank, const PodOptions& options);

// KUBEDIST_STOP_TIMEOUT, the launcher's SIGTERM-to-SIGKILL grace for its workers: the pod's
// terminationGracePeriodSeconds (default 30) less 2 s for the launcher's own exit (its summary, the termination
// message) before the kubelet's SIGKILL, or half of it when it is under 4 s. In seconds ("28", "1.5").
std::string launcher_stop_timeout(const nlohmann::json& pod_spec);

// A pod spec's terminationGracePeriodSeconds, or Kubernetes' default (30).
long grace_seconds(const nlohmann::json& pod_spec);

// "N", or "MIN:MAX" when the job is elastic.
std::string nnodes_value(const Spec& spec);

}  // namespace kubedist::trainingjob
