#include "cli/local_world_size.h"

#include <dirent.h>
#include <sched.h>

#include <cctype>
#include <charconv>

namespace kubedist::launcher {
namespace {

// Counts the entries of a comma-separated device list; "", "-1", "none", "void", "NoDevFiles" mean none.
int count_list(const std::string& value) {
  if (value.empty() || value == "none" || value == "void" || value == "NoDevFiles") return 0;
  int n = 0;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    std::string item = value.substr(start, end - start);
    if (item == "-1") break;  // CUDA stops at the first invalid index
    if (!item.empty()) ++n;
    start = end + 1;
  }
  return n;
}

bool is_gpu_device_node(const std::string& name) {
  if (name.size() <= 6 || name.rfind("nvidia", 0) != 0) return false;
  for (size_t i = 6; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

}  // namespace

int count_visible_gpus(const Env& env, const std::vector<std::string>& dev_entries) {
  if (auto it = env.find("CUDA_VISIBLE_DEVICES"); it != env.end()) return count_list(it->second);
  if (auto it = env.find("NVIDIA_VISIBLE_DEVICES"); it != env.end() && it->second != "all")
    return count_list(it->second);
  int n = 0;
  for (const auto& name : dev_entries) n += is_gpu_device_node(name) ? 1 : 0;
  return n;
}

Result<int> local_world_size(const std::string& nproc_per_node, const Env& env,
                             const std::vector<std::string>& dev_entries, int cpu_count, bool in_training_job) {
  if (cpu_count < 1) cpu_count = 1;
  if (nproc_per_node == "cpu") return cpu_count;
  if (nproc_per_node == "auto" || nproc_per_node == "gpu") {
    int gpus = count_visible_gpus(env, dev_entries);
    if (gpus > 0) return gpus;
    if (nproc_per_node == "gpu")
      return make_error("--nproc-per-node=gpu: no GPU visible (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, /dev/nvidiaN)");
    return in_training_job ? 1 : cpu_count;
  }
  int n = 0;
  auto [p, ec] = std::from_chars(nproc_per_node.data(), nproc_per_node.data() + nproc_per_node.size(), n);
  if (ec != std::errc() || p != nproc_per_node.data() + nproc_per_node.size() || n < 1)
    return make_error("--nproc-per-node: expected a positive integer, auto, gpu or cpu, got '" + nproc_per_node + "'");
  return n;
}

std::vector<std::string> list_directory(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) names.emplace_back(e->d_name);
    closedir(d);
  }
  return names;
}

int usable_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set);
}

}  // namespace kubedist::launcher
