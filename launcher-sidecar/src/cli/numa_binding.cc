#include "cli/numa_binding.h"

#include <cstdlib>

namespace kubedist::launcher {

int numa_node_count(const std::function<std::optional<std::string>(const std::string&)>& read_file) {
  const auto text = read_file("/sys/devices/system/node/online");
  if (!text) return 0;
  int count = 0;
  size_t start = 0;
  while (start < text->size()) {
    size_t comma = text->find(',', start);
    if (comma == std::string::npos) comma = text->size();
    const std::string item = text->substr(start, comma - start);
    start = comma + 1;
    if (item.find_first_of("0123456789") == std::string::npos) continue;
    const auto dash = item.find('-');
    const long lo = std::strtol(item.c_str(), nullptr, 10);
    const long hi = dash == std::string::npos ? lo : std::strtol(item.c_str() + dash + 1, nullptr, 10);
    if (hi >= lo) count += static_cast<int>(hi - lo + 1);
  }
  return count;
}

std::string numa_note(const std::string& mode,
                      const std::function<std::optional<std::string>(const std::string&)>& read_file) {
  const int nodes = numa_node_count(read_file);
  if (nodes <= 1)
    return "--numa-binding=" + mode + ": this machine has " + (nodes == 1 ? "one NUMA node" : "no NUMA information") +
           ", so every CPU is near every GPU: workers run unbound (a no-op)";
  return "--numa-binding=" + mode + ": this machine has " + std::to_string(nodes) +
         " NUMA nodes, but the launcher does not bind workers yet: they run unbound (pin CPUs in the pod instead)";
}

}  // namespace kubedist::launcher
