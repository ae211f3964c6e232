// Local world size: how many workers this node runs for --nproc-per-node N|auto|gpu|cpu.
#pragma once

#include <string>
#include <vector>

#include "cli/launch_config.h"
#include "util/result.h"

namespace kubedist::launcher {

// GPUs this process may use: CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES (unless "all"), else the
// /dev/nvidiaN device nodes (dev_entries are the names in /dev). LOCAL_RANK 0..n-1 then indexes the devices
// CUDA sees, so CUDA_VISIBLE_DEVICES is passed to workers unchanged.
int count_visible_gpus(const Env& env, const std::vector<std::string>& dev_entries);

// auto: GPUs, else cpu_count as torchrun (in a TrainingJob's pod: else 1, the TrainingJob's nprocPerNode rule);
// gpu: GPUs, else an error; cpu: cpu_count; N: N.
Result<int> local_world_size(const std::string& nproc_per_node, const Env& env,
                             const std::vector<std::string>& dev_entries, int cpu_count, bool in_training_job);

std::vector<std::string> list_directory(const std::string& path);
int usable_cpu_count();

}  // namespace kubedist::launcher
