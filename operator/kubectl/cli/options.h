// The plugin's own command line: subcommands and their options (what comes before `--` in `run`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kubectl/cli/training_command.h"

namespace kubedist::kubectl {

// Where to find the cluster: --kubeconfig, --context, -n/--namespace (empty: the kubeconfig's).
struct ClusterOptions {
  std::string kubeconfig;
  std::string context;
  std::string ns;
};

struct RunOptions {
  ClusterOptions cluster;
  std::string image;            // empty: the default image (KUBEDIST_IMAGE, else the local cluster's CPU example)
  int gpus_per_node = 0;        // nvidia.com/gpu limit per pod
  std::string cpu;              // a Kubernetes quantity: requests.cpu
  std::string memory;           // requests.memory and limits.memory
  std::string queue;            // Kueue LocalQueue (label kueue.x-k8s.io/queue-name)
  std::vector<std::pair<std::string, std::string>> node_selector;  // --node-selector KEY=VALUE, in order
  bool gang = false;            // spec.scheduling.gang
  int spares = 0;               // spec.spares: spare pods that take a lost node's place
  std::string topology_key;     // spec.placement.topologyKey: a node label whose domain the pods prefer to share
  std::string name;             // empty: from the script's name and a random suffix
  std::string workdir;          // empty: the script's directory (the current one for -m)
  bool no_workdir = false;      // ship nothing: the code is in the image
  std::vector<std::string> pip;
  std::string pip_index_url;
  bool dry_run = false;
  std::string output;           // with --dry-run: yaml (default) or json
  bool detach = false;
  EnvList env;                  // -e NAME=VALUE
  std::vector<std::string> command;  // the words after `--`
};

// `logs`, `status`, `delete`: a job; `list`: none.
struct JobOptions {
  ClusterOptions cluster;
  std::string job;
  std::optional<int> node;  // logs --node K
  bool follow = false;      // logs -f
};

struct Invocation {
  std::string subcommand;  // run, logs, status, list, delete, help
  RunOptions run;
  JobOptions job;
};

// Parses argv after the program name. Errors are one line naming the option and the fix.
Result<Invocation> parse_invocation(const std::vector<std::string>& args);

// A DNS-1035 label short enough for pod J-node-<max_nodes-1> (63 characters): the operator's rule, said early.
Result<void> check_job_name(const std::string& name, int max_nodes);

// A Kubernetes resource quantity (e.g. 500m, 2, 4Gi).
bool is_quantity(const std::string& s);

// The help text of the plugin.
std::string usage();

}  // namespace kubedist::kubectl
