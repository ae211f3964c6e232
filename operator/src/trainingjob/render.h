// Pure rendering of the objects the operator owns for a TrainingJob: its headless Service and node pods.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainingjob/types.h"

namespace kubedist::trainingjob {

inline constexpr const char* kDefaultLauncherImage = "ghcr.io/kubedist/launcher:0.1.0";
inline constexpr const char* kLauncherPath = "/kubedist/bin/kubedist-launcher";

std::string pod_name(const std::string& job, int rank);

// Service J: headless, publishes not-ready addresses (rendezvous starts before readiness), selects the job's pods.
nlohmann::json render_service(const TrainingJob& job);

// Pod J-node-<rank>: the user's template plus the launcher init container, the wrapped trainer command,
// the node env, hostname/subdomain for DNS, labels, the controller owner reference and restartPolicy Never.
// Requires a job without spec_error.
nlohmann::json render_pod(const TrainingJob& job, int rank, const std::string& launcher_image);

// The owner reference every object of the job carries (controller, blockOwnerDeletion).
nlohmann::json owner_reference(const TrainingJob& job);

}  // namespace kubedist::trainingjob
