// LaunchConfig: everything the launcher was asked to do, decided from flags, PET_* env and operator env.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "util/result.h"

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
  // False when no flag or env named them: then a multi-node rendezvous host announces the workers' store in each
  // round (its own address and a free port), as torchrun's c10d rendezvous does, instead of 127.0.0.1:29500.
  bool master_addr_given = false;
  bool master_port_given = false;
  // Where node rank 0 hosts the rendezvous service: --rdzv-endpoint, else master_addr:master_port+1.
  std::string rdzv_host;
  int rdzv_port = 0;
  bool rdzv_endpoint_given = false;  // --rdzv-endpoint (or its env) named it: torchrun's c10d style
  std::string run_id = "none";
  bool standalone = false;
  bool spare = false;  // --spare: joins as a spare (rendezvous/coordinator.h); its node rank may be >= max nodes
  // --topology-domain-file: a file holding this node's topology domain (contract/pod_env.h), read at every JOIN.
  std::string topology_domain_file;
  int max_restarts = 0;
  bool permanent_exit_codes = false;  // --restart-policy=ExitCode: worker exit codes 1-127 are never restarted
  double monitor_interval = 0.1;  // accepted for torchrun compatibility; the launcher never polls
  std::string role = "default";
  bool no_python = false;
  // The interpreter for scripts and -m: PYTHON_EXEC (as torchrun honours it), else python3 from PATH. torchrun's
  // default is its own sys.executable; a C++ launcher has none, and python3 on PATH is what `python3 -m
  // torch.distributed.run` would most often have been.
  std::string python = "python3";
  std::string python_source;  // "PYTHON_EXEC" when it came from there (named in errors), else ""
  // In a TrainingJob's pod (the operator sets KUBEDIST_JOB): its plain env (NNODES...) applies, and
  // --nproc-per-node=auto without GPUs means 1 as the TrainingJob's nprocPerNode does.
  bool in_training_job = false;
  bool module = false;
  bool use_env = false;        // legacy launch: workers read LOCAL_RANK from the environment
  bool legacy_launch = false;  // torch.distributed.launch: pass --local-rank=N unless --use-env
  // --local-rank-style: "auto" (the default), "dash" or "underscore".
  std::string local_rank_style = "auto";
  // The argument --legacy-launch passes: torch >= 2.0's "--local-rank" (dash) or torch 1.x's "--local_rank"
  // (underscore). An argparse script accepts only the spelling it declares. Under "auto" the launcher sets it from
  // the torch the workers' interpreter would import (cli/local_rank_style.h); until then, 2.x's.
  std::string local_rank_arg = "--local-rank";
  // The major version of the torch the workers' interpreter would import (main.cc finds it without importing it):
  // 1 gets torchrun 1.x's worker environment, 2 and 0 (unknown: no interpreter, no torch found) torchrun 2.x's.
  int workers_torch_major = 0;
  StreamSpec redirects;
  StreamSpec tee;
  std::string log_dir;
  std::optional<std::set<int>> local_ranks_filter;
  double join_timeout = 600;      // --rdzv-conf join_timeout=S: how long to wait for MIN nodes
  double last_call_timeout = 1;   // --rdzv-conf last_call_timeout=S: wait for late joiners above MIN
  double idle_timeout = 15;       // --rdzv-conf idle_timeout=S: for a connection to node 0 to send a valid message
  std::string rdzv_secret_file;   // --rdzv-secret-file: the job's secret that signs every rendezvous line
  std::string rdzv_secret_fingerprint;  // --rdzv-secret-fingerprint: what that secret's must be (empty: any)
  // --shutdown-timeout (alias --stop-timeout): the grace from the stop signal to SIGKILL when stopping workers;
  // torchrun 2.15's default (30 s). In a pod the operator sets KUBEDIST_STOP_TIMEOUT from the pod's grace period.
  double stop_timeout = 30;
  // --signals-to-handle: the signals the launcher takes and passes on to its workers as a stop (their text as given,
  // which the workers also see as TORCHELASTIC_SIGNALS_TO_HANDLE, as under torchrun). Others keep their default
  // action: they end the launcher, and its workers are killed with it.
  std::vector<int> signals_to_handle;
  std::string signals_to_handle_text;
  // --virtual-local-rank: every worker gets LOCAL_RANK=0 and only its own device in CUDA_VISIBLE_DEVICES.
  bool virtual_local_rank = false;
  // --log-line-prefix-template (or TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE): the console prefix of relayed lines, with
  // ${role_name}, ${local_rank}, ${rank}, ${hostname}; "" for ours, "[rank N]: ".
  std::string log_line_prefix_template;
  // --duplicate-std{out,err}-filters: lines of the console-relayed (tee'd) streams containing any of these are
  // also copied to attempt_N/filtered_std{out,err}.log.
  std::vector<std::string> duplicate_stdout_filters;
  std::vector<std::string> duplicate_stderr_filters;
  std::string numa_binding;  // --numa-binding: "" (none), node, socket, exclusive or core-complex
  // What --numa-binding decided for this machine at start (main.cc): each local rank's CPUs; empty: unbound.
  std::vector<std::vector<int>> worker_cpus;
  // --local-addr: the address other nodes reach this one at; a rendezvous host names the workers' store there.
  std::string local_addr;
  std::string print_completion;  // --print-completion SHELL: print the completion script and exit
  // What the launcher does instead for torchrun flags that name Python entry points (--logs-specs...), one line each.
  std::vector<std::string> notes;
  // Progress (progress/job_progress.h): no step for this long after a first one is a hang (0: never judged); a rank
  // straggler_factor times slower than the others' median for straggler_steps of the job's steps is a straggler.
  double hang_timeout = 0;
  double straggler_factor = 1.5;
  int straggler_steps = 20;
  int metrics_port = -1;          // -1: no /metrics endpoint; 0: any free port (printed)
  std::string metrics_addr = "0.0.0.0";
  std::string rdzv_trace;         // --rdzv-trace: a benchmark's file of this node's rendezvous steps (io/trace.h)
  std::string termination_log;    // where a failed launcher writes its one-line summary ("" for nowhere)
  std::vector<std::string> command;  // script (or module, or program with --no-python) and its args
  // Settings taken from the environment, "--nnodes=2 (PET_NNODES)", and the operator's plain variables that were
  // set but ignored outside a TrainingJob's pod ("NNODES"): the launcher prints both, so nothing changes silently.
  std::vector<std::string> from_env;
  std::vector<std::string> ignored_env;

  bool elastic() const { return min_nodes != max_nodes; }
  bool multi_node() const { return max_nodes > 1; }
};

// Decides the configuration. Precedence: command-line flag > PET_* env > operator env > default; the operator's
// plain NNODES, NPROC_PER_NODE, NODE_RANK, MASTER_ADDR, MASTER_PORT count only when KUBEDIST_JOB is set.
// Errors are one line naming the flag (and the variable it came from).
Result<LaunchConfig> parse_launch_config(const std::vector<std::string>& args, const Env& env);

std::string usage_text();

// Every flag's canonical spelling ("--nnodes", "--stop-timeout", "-m") and whether it takes a value: for the shell
// completion scripts (cli/completion.h).
struct FlagName {
  std::string spelling;
  bool takes_value = false;
};
std::vector<FlagName> flag_names();

}  // namespace kubedist::launcher
