#include "cli/numa_binding.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace kubedist::launcher {
namespace {

const std::string kNodes = "/sys/devices/system/node";
const std::string kCpus = "/sys/devices/system/cpu";
const std::string kPci = "/sys/bus/pci/devices";

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\n");
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(" \t\n") - first + 1);
}

std::optional<long> to_long(const std::string& s) {
  const std::string t = trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(t.c_str(), &end, 0);  // base 0: "0x10de" as well as "1"
  if (*end != '\0') return std::nullopt;
  return v;
}

Result<std::set<int>> read_cpus(const Sysfs& fs, const std::string& path) {
  const auto text = fs.read(path);
  if (!text) return make_error("cannot read " + path);
  auto cpus = parse_cpu_list(*text);
  if (!cpus) return make_error(path + " is not a CPU list: '" + trim(*text) + "'");
  return *cpus;
}

// NVIDIA's display and 3D controllers (class 0x0300xx, 0x0302xx) in PCI address order.
std::vector<std::string> gpu_addresses(const Sysfs& fs) {
  std::vector<std::string> out;
  for (const auto& dev : fs.list(kPci)) {
    const auto vendor = fs.read(kPci + "/" + dev + "/vendor");
    const auto cls = fs.read(kPci + "/" + dev + "/class");
    if (!vendor || !cls || to_long(*vendor).value_or(0) != 0x10de) continue;
    const long c = to_long(*cls).value_or(0) >> 8;
    if (c == 0x0300 || c == 0x0302) out.push_back(dev);
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Topology {
  const Sysfs& fs;
  const std::set<int>& allowed;
  std::vector<std::string> gpus;  // in device-index order (after CUDA_VISIBLE_DEVICES)

  Result<int> node_of(int device) const {
    const auto text = fs.read(kPci + "/" + gpus[static_cast<size_t>(device)] + "/numa_node");
    if (!text || !to_long(*text)) return make_error("cannot read the NUMA node of GPU " + gpus[static_cast<size_t>(device)]);
    return static_cast<int>(std::max(*to_long(*text), 0L));  // -1 on machines that do not say: node 0
  }

  Result<std::set<int>> allowed_cpus_of_node(int node) const {
    auto cpus = read_cpus(fs, kNodes + "/node" + std::to_string(node) + "/cpulist");
    if (!cpus) return cpus;
    std::set<int> out;
    for (int cpu : *cpus)
      if (allowed.count(cpu)) out.insert(cpu);
    if (out.empty()) return make_error("none of NUMA node " + std::to_string(node) + "'s CPUs is allowed to the launcher");
    return out;
  }

  Result<std::vector<int>> devices_on_node(int node) const {
    std::vector<int> out;
    for (int d = 0; d < static_cast<int>(gpus.size()); ++d) {
      auto n = node_of(d);
      if (!n) return make_error(n.error());
      if (*n == node) out.push_back(d);
    }
    return out;
  }

  Result<int> socket_of_node(int node) const {
    auto cpus = allowed_cpus_of_node(node);
    if (!cpus) return make_error(cpus.error());
    const std::string path = kCpus + "/cpu" + std::to_string(*cpus->begin()) + "/topology/physical_package_id";
    const auto text = fs.read(path);
    if (!text || !to_long(*text)) return make_error("cannot read " + path);
    return static_cast<int>(*to_long(*text));
  }

  // The CPUs sharing the largest unified or data cache with `cpu` (its core complex).
  Result<std::set<int>> max_cache_sharers(int cpu) const {
    const std::string dir = kCpus + "/cpu" + std::to_string(cpu) + "/cache";
    long best = -1;
    std::set<int> sharers;
    for (const auto& entry : fs.list(dir)) {
      if (entry.rfind("index", 0) != 0) continue;
      const auto type = fs.read(dir + "/" + entry + "/type");
      const auto level = fs.read(dir + "/" + entry + "/level");
      if (!type || !level || (trim(*type) != "Unified" && trim(*type) != "Data")) continue;
      const long l = to_long(*level).value_or(-1);
      if (l <= best) continue;
      auto shared = read_cpus(fs, dir + "/" + entry + "/shared_cpu_list");
      if (!shared) return shared;
      best = l;
      sharers = *shared;
    }
    if (best < 0) return make_error("cannot read the caches of CPU " + std::to_string(cpu));
    return sharers;
  }

  Result<std::set<int>> cpus_for(const std::string& mode, int device) const {
    auto node = node_of(device);
    if (!node) return make_error(node.error());
    if (mode == "node") return allowed_cpus_of_node(*node);
    if (mode == "socket") return socket_cpus(*node);
    auto cpus = allowed_cpus_of_node(*node);
    if (!cpus) return cpus;
    auto devices = devices_on_node(*node);
    if (!devices) return make_error(devices.error());
    const size_t index = static_cast<size_t>(std::find(devices->begin(), devices->end(), device) - devices->begin());
    // Groups of the node's allowed CPUs, each named by its lowest member: physical cores (exclusive) or core
    // complexes (core-complex).
    std::map<int, std::set<int>> groups;
    for (int cpu : *cpus) {
      Result<std::set<int>> mates = mode == "exclusive"
                                        ? read_cpus(fs, kCpus + "/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list")
                                        : max_cache_sharers(cpu);
      if (!mates) return mates;
      groups[mates->empty() ? cpu : *mates->begin()].insert(cpu);
    }
    if (mode == "exclusive") return exclusive_share(groups, devices->size(), index, *node);
    // Largest complexes first, then by lowest CPU; devices take them in turn.
    std::vector<std::pair<int, std::set<int>>> ordered(groups.begin(), groups.end());
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    return ordered[index % ordered.size()].second;
  }

  Result<std::set<int>> socket_cpus(int node) const {
    auto socket = socket_of_node(node);
    if (!socket) return make_error(socket.error());
    const auto online = fs.read(kNodes + "/online");
    const auto nodes = online ? parse_cpu_list(*online) : std::nullopt;
    if (!nodes) return make_error("cannot read " + kNodes + "/online");
    std::set<int> out;
    for (int n : *nodes) {
      auto s = socket_of_node(n);
      if (!s || *s != *socket) continue;
      auto cpus = allowed_cpus_of_node(n);
      if (cpus) out.insert(cpus->begin(), cpus->end());
    }
    return out;
  }

  // The node's physical cores divided evenly among its devices, the first ones taking one more when they do not
  // divide.
  static Result<std::set<int>> exclusive_share(const std::map<int, std::set<int>>& cores, size_t devices, size_t index,
                                               int node) {
    const size_t per = cores.size() / devices, extra = cores.size() % devices;
    if (per < 1)
      return make_error("NUMA node " + std::to_string(node) + " has " + std::to_string(cores.size()) +
                        " physical core(s) for " + std::to_string(devices) + " GPUs");
    const size_t start = index * per + std::min(index, extra);
    const size_t end = start + per + (index < extra ? 1 : 0);
    std::set<int> out;
    size_t i = 0;
    for (const auto& [core, cpus] : cores) {
      if (i >= start && i < end) out.insert(cpus.begin(), cpus.end());
      ++i;
    }
    return out;
  }
};

}  // namespace

std::optional<std::set<int>> parse_cpu_list(const std::string& text) {
  std::set<int> out;
  const std::string t = trim(text);
  size_t start = 0;
  while (start < t.size()) {
    size_t comma = t.find(',', start);
    if (comma == std::string::npos) comma = t.size();
    const std::string item = t.substr(start, comma - start);
    start = comma + 1;
    const auto dash = item.find('-');
    const auto lo = to_long(item.substr(0, dash));
    const auto hi = dash == std::string::npos ? lo : to_long(item.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi > 1 << 16) return std::nullopt;
    for (long c = *lo; c <= *hi; ++c) out.insert(static_cast<int>(c));
  }
  return out;
}

std::string cpu_list_text(const std::set<int>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    const int first = *it;
    int last = first;
    while (++it != cpus.end() && *it == last + 1) last = *it;
    // Appends only: GCC 12's Release build warns falsely (-Wrestrict) about "literal" + std::string.
    if (!out.empty()) out += ',';
    out += std::to_string(first);
    if (last > first) {
      out += '-';
      out += std::to_string(last);
    }
  }
  return out;
}

int numa_node_count(const Sysfs& fs) {
  const auto text = fs.read(kNodes + "/online");
  const auto nodes = text ? parse_cpu_list(*text) : std::nullopt;
  return nodes ? static_cast<int>(nodes->size()) : 0;
}

Result<NumaPlan> plan_numa_binding(const std::string& mode, int workers, const Sysfs& fs, const std::set<int>& allowed,
                                   const std::optional<std::string>& cuda_visible_devices) {
  const std::string flag = "--numa-binding=" + mode;
  NumaPlan plan;
  const int nodes = numa_node_count(fs);
  if (nodes <= 1) {
    plan.line = flag + ": this machine has " + (nodes == 1 ? "one NUMA node" : "no NUMA information") +
                ", so every CPU is near every GPU: workers run unbound (a no-op)";
    return plan;
  }
  Topology topo{fs, allowed, gpu_addresses(fs)};
  if (topo.gpus.empty()) return make_error(flag + ": no NVIDIA GPU on the PCI bus to bind workers near");
  if (cuda_visible_devices) {
    // CUDA numbers the devices it sees in this order; names (GPU-uuid, MIG) cannot be mapped without CUDA.
    std::vector<std::string> seen;
    size_t start = 0;
    while (start <= cuda_visible_devices->size()) {
      size_t comma = cuda_visible_devices->find(',', start);
      if (comma == std::string::npos) comma = cuda_visible_devices->size();
      const auto index = to_long(cuda_visible_devices->substr(start, comma - start));
      start = comma + 1;
      if (!index)
        return make_error(flag + ": CUDA_VISIBLE_DEVICES=" + *cuda_visible_devices +
                          " names devices only CUDA can map; bind with device numbers there");
      if (*index < 0 || *index >= static_cast<long>(topo.gpus.size()))
        return make_error(flag + ": CUDA_VISIBLE_DEVICES=" + *cuda_visible_devices + " names a GPU this machine lacks");
      seen.push_back(topo.gpus[static_cast<size_t>(*index)]);
    }
    topo.gpus = seen;
  }
  if (workers > static_cast<int>(topo.gpus.size()))
    return make_error(flag + ": " + std::to_string(workers) + " workers but " + std::to_string(topo.gpus.size()) +
                      " GPU(s) to bind them near");
  std::string summary;
  for (int lr = 0; lr < workers; ++lr) {
    auto cpus = topo.cpus_for(mode, lr);
    if (!cpus) return make_error(flag + ": local rank " + std::to_string(lr) + ": " + cpus.error());
    summary += (lr ? ", " : "") + std::to_string(lr) + ": " + cpu_list_text(*cpus);
    plan.cpus.push_back(*cpus);
  }
  plan.line = flag + ": " + std::to_string(nodes) + " NUMA nodes; workers bound to CPUs (local rank: CPUs) " + summary;
  return plan;
}

}  // namespace kubedist::launcher
