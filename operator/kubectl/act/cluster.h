// The cluster as the plugin reaches it: a client from the kubeconfig, the namespace, and the checks that give a
// missing kubeconfig, an unreachable API server, a missing namespace or a missing CRD one line each.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "kube/client.h"
#include "kubectl/cli/options.h"

namespace kubedist::kubectl {

struct Cluster {
  std::unique_ptr<kube::Client> client;
  std::string server;
  std::string ns;

  std::string jobs_path() const;                       // /apis/kubedist.io/v1alpha1/namespaces/NS/trainingjobs
  std::string job_path(const std::string& job) const;  // .../trainingjobs/J
  std::string pods_path(const std::string& query = "") const;
  std::string config_maps_path(const std::string& query = "") const;
};

// Loads the kubeconfig (--kubeconfig, else $KUBECONFIG, else ~/.kube/config) and makes a client; no request yet.
Result<Cluster> connect(const ClusterOptions& options);

// One request that tells whether the cluster answers and serves TrainingJobs, and whether the namespace exists.
Result<void> preflight(Cluster& cluster);

// An API error in the words of this plugin: unreachable names the server and the fix.
Error explain(const Cluster& cluster, const Error& e, const std::string& doing);

// Reads a TrainingJob; NotFound says how to list the jobs.
Result<nlohmann::json> get_job(Cluster& cluster, const std::string& job);

}  // namespace kubedist::kubectl
