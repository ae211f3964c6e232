// --numa-binding: the CPUs each worker is bound to, as torchrun 2.15's modes choose them from the machine's topology
// (pure; the caller reads sysfs). torchrun asks torch for the GPU's PCI address; the launcher imports no torch, so
// it lists the NVIDIA devices on the PCI bus in address order (CUDA's order on the machines NUMA binding is for)
// and maps the local rank through a numeric CUDA_VISIBLE_DEVICES as CUDA does.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "util/result.h"

namespace kubedist::launcher {

struct Sysfs {
  std::function<std::optional<std::string>(const std::string&)> read;  // a file's text, nullopt when unreadable
  std::function<std::vector<std::string>(const std::string&)> list;    // a directory's entries
};

// The number of NUMA nodes /sys/devices/system/node/online lists ("0-1" is 2), or 0 when it cannot be read.
int numa_node_count(const Sysfs& fs);

// "0-2,4" -> {0, 1, 2, 4}; nullopt when malformed.
std::optional<std::set<int>> parse_cpu_list(const std::string& text);
// {0, 1, 2, 4} -> "0-2,4"
std::string cpu_list_text(const std::set<int>& cpus);

struct NumaPlan {
  std::vector<std::set<int>> cpus;  // per local rank; empty when nothing is bound
  std::string line;                 // what the launcher says about it, once
};

// The plan for `workers` workers under `mode` (node, socket, exclusive, core-complex). With one NUMA node (or none
// readable) nothing is bound: every CPU is as near every GPU (a no-op that says so). Otherwise each worker's CPUs
// are those torchrun's mode picks for device `local rank` (through `cuda_visible_devices` when it is a list of
// numbers), within `allowed` (the launcher's own affinity); an error says why a worker cannot be bound.
Result<NumaPlan> plan_numa_binding(const std::string& mode, int workers, const Sysfs& fs, const std::set<int>& allowed,
                                   const std::optional<std::string>& cuda_visible_devices);

}  // namespace kubedist::launcher
