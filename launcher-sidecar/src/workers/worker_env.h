// The worker contract: the argv and environment of one worker, exactly torchrun's names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/launch_config.h"

namespace kubedist::launcher {

// What one rendezvous round decided for this node.
struct Assignment {
  int round = 0;            // rendezvous round (generation), 0 for the first
  int restart_count = 0;    // TORCHELASTIC_RESTART_COUNT
  int group_rank = 0;       // dense rank of this node in the round
  int group_world_size = 1;  // nodes in the round
  int rank_offset = 0;      // global RANK of this node's LOCAL_RANK 0
  int world_size = 1;       // processes in the round, the same on every node
  // The workers' store the rendezvous host chose for this round; a launcher's own --master-addr/--master-port
  // (flag or env) win over it. Empty/0: none chosen (a single-node job given no
  // --rdzv-endpoint: torchrun's static default, 127.0.0.1:29500).
  std::string master_addr;
  int master_port = 0;
  // A spare standing in for a lost member: that member's slot (its node rank), which the spare names in its JOINs
  // from then on, so that a new node 0 gives it the same place. -1: not a stand-in.
  int stand_in_slot = -1;
};

struct WorkerSpec {
  std::vector<std::string> argv;
  Env env;
};

// Pure: argv and env for local_rank. base_env is the launcher's own environment, which workers inherit.
WorkerSpec render_worker(const LaunchConfig& config, const Assignment& assignment, int local_world_size,
                         int local_rank, const std::string& error_file, const Env& base_env);

std::vector<std::string> env_to_strings(const Env& env);

// With --virtual-local-rank, what is wrong when the node's device list (HIP_VISIBLE_DEVICES, else
// CUDA_VISIBLE_DEVICES, as torchrun reads them) names fewer devices than there are workers; nothing otherwise.
std::optional<std::string> check_virtual_local_rank(const LaunchConfig& config, int local_world_size, const Env& env);

}  // namespace kubedist::launcher
