// LaunchConfig: everything the launcher was asked to do, decided from flags, PET_* env and operator env.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "result.h"

namespace kubedist::launcher {

using Env = std::map<std::string, std::string>;

// Which of a worker's streams go to a log file: 0 none, 1 stdout, 2 stderr, 3 both (torchrun's Std).
struct StreamSpec {
  int all = 0;                       // for every local rank not listed below
  std::map<int, int> per_local_rank;  // "0:1,1:2" form
  int for_local_rank(int local_rank) const;
  bool any() const;
};

struct LaunchConfig {
  bool help = false;
  int min_nodes = 1;
  int max_nodes = 1;
  std::string nproc_per_node = "1";  // N | auto | gpu | cpu; resolved by local_world_size()
  int node_rank = 0;
  // False when no flag or env named the node rank (torchrun's c10d style: the same command on every node). Then
  // the node whose address the rendezvous endpoint names hosts the rendezvous; the others join it.
  bool node_rank_given = false;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Where node rank 0 hosts the rendezvous service: --rdzv-endpoint, else master_addr:master_port+1.
  std::string rdzv_host;
  int rdzv_port = 0;
  std::string run_id = "none";
  bool standalone = false;
  int max_restarts = 0;
  bool permanent_exit_codes = false;  // --restart-policy=ExitCode: worker exit codes 1-127 are never restarted
  double monitor_interval = 0.1;  // accepted for torchrun compatibility; the launcher never polls
  std::string role = "default";
  bool no_python = false;
  bool module = false;
  bool use_env = false;        // legacy launch: workers read LOCAL_RANK from the environment
  bool legacy_launch = false;  // torch.distributed.launch: pass --local-rank=N unless --use-env
  StreamSpec redirects;
  StreamSpec tee;
  std::string log_dir;
  std::optional<std::set<int>> local_ranks_filter;
  double join_timeout = 600;      // --rdzv-conf join_timeout=S: how long to wait for MIN nodes
  double last_call_timeout = 1;   // --rdzv-conf last_call_timeout=S: wait for late joiners above MIN
  double idle_timeout = 15;       // --rdzv-conf idle_timeout=S: for a connection to node 0 to send a valid message
  std::string rdzv_secret_file;   // --rdzv-secret-file: the job's secret that signs every rendezvous line
  double stop_timeout = 10;       // SIGTERM -> SIGKILL grace period for stopping workers
  int metrics_port = -1;          // -1: no /metrics endpoint; 0: any free port (printed)
  std::string metrics_addr = "0.0.0.0";
  std::vector<std::string> command;  // script (or module, or program with --no-python) and its args

  bool elastic() const { return min_nodes != max_nodes; }
  bool multi_node() const { return max_nodes > 1; }
};

// Decides the configuration. Precedence: command-line flag > PET_* env > operator env > default.
// Errors are one line naming the flag (and the variable it came from).
Result<LaunchConfig> parse_launch_config(const std::vector<std::string>& args, const Env& env);

std::string usage_text();

}  // namespace kubedist::launcher
