// --numa-binding: what the launcher can do with torchrun's NUMA binding modes on this machine (pure; the caller
// reads sysfs).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace kubedist::launcher {

// The number of NUMA nodes /sys/devices/system/node/online lists ("0-1" is 2), or 0 when it cannot be read.
int numa_node_count(const std::function<std::optional<std::string>(const std::string&)>& read_file);

// The line the launcher prints for --numa-binding=MODE. With one NUMA node (or none readable) there is nothing to
// bind to, as torchrun's binding to the only node changes nothing: a no-op that says so. On a machine with several,
// the launcher does not bind (yet): it says so rather than pretend.
std::string numa_note(const std::string& mode,
                      const std::function<std::optional<std::string>(const std::string&)>& read_file);

}  // namespace kubedist::launcher
