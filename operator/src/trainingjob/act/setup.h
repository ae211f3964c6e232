// The TrainingJob controller's setup: what it watches, how a key is reconciled, its metrics; run by controller::Manager.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "controller/manager.h"
#include "trainingjob/gang/gang.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {

// The manager's defaults for the operator: 16 workers, "TrainingJobs" in its logs.
inline controller::ManagerOptions default_manager_options() {
  controller::ManagerOptions m;
  m.workers = 16;
  m.kind_plural = "TrainingJobs";
  return m;
}

// The operator's options (main.cc's flags): the manager's (probes, workers, resync), and the TrainingJob
// controller's own.
struct OperatorOptions {
  std::string kubeconfig;      // "" = $KUBECONFIG, in-cluster, ~/.kube/config
  std::string context;         // kubeconfig context, "" = current
  std::string ns;              // "" = all namespaces
  controller::ManagerOptions manager = default_manager_options();
  PodOptions pods;            // launcher image and metrics port
  bool leader_elect = false;   // take a Lease first, so that only one replica reconciles (manager.leader)
  std::string leader_election_namespace;  // "" = the kubeconfig's / pod's namespace
  std::string leader_election_id = "kubedist-operator";
  int leader_election_lease_seconds = 15;
  std::string keyring_secret;            // "NS/NAME": the namespace keys kept there too (act/keyring.h); "": memory
  std::optional<bool> watch_nodes;       // unset: watch nodes when watching all namespaces
  int64_t unschedulable_grace_s = 30;    // elastic jobs give up pods unschedulable this long
  int64_t node_lost_grace_s = 60;        // pods on a node NotReady this long are lost
  int avoid_node_after_failures = 2;     // a job's new pods avoid a node where this many failed (not its code's)
  bool taint_avoided_nodes = false;      // and the node is tainted for every pod (needs the node watch)
  int max_tainted_nodes = 3;             // while fewer nodes carry the taint
  int node_loss_limit = 100;             // a job stops after this many pods lost with their nodes; 0: never
  int64_t avoided_taint_ttl_s = 3600;    // the taint is taken off after this long
  int64_t launcher_poll_interval_ms = 10000;  // STATUS of each running job's node 0; 0 disables
  int64_t progress_write_interval_ms = 30000;  // a job's status writes for progress alone, at most this often
  GangMode gang_scheduling = GangMode::kPerJob;
  bool network_policy_per_job = false;  // each running job gets NetworkPolicy J letting in its own pods only
  nlohmann::json network_policy_ingress = nlohmann::json::array();  // and these peers (netpol/render.h)
};

// Runs until stop is requested; returns an error for a setup failure (bad config, port in use) or when
// leadership is lost (the process must exit so that it cannot act beside the new leader).
Result<void> run_manager(const OperatorOptions& options, std::stop_token stop);

}  // namespace kubedist::trainingjob
