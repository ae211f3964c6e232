#include "workers/worker_env.h"

#include "cli/python_invocation.h"

namespace kubedist::launcher {
namespace {

// The variable that lists the node's devices: ROCm's HIP_VISIBLE_DEVICES wins over CUDA_VISIBLE_DEVICES there, so
// it is the one to narrow when set (as torchrun does); "" when neither is set.
std::string visible_devices_variable(const Env& env) {
  if (auto it = env.find("HIP_VISIBLE_DEVICES"); it != env.end() && !it->second.empty()) return it->first;
  if (env.count("CUDA_VISIBLE_DEVICES")) return "CUDA_VISIBLE_DEVICES";
  return "";
}

std::vector<std::string> split_devices(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto first = item.find_first_not_of(" \t");
    item = first == std::string::npos ? "" : item.substr(first, item.find_last_not_of(" \t") - first + 1);
    out.push_back(item);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// LOCAL_RANK, and with --virtual-local-rank the one device the worker sees as its device 0.
void set_local_rank(const LaunchConfig& config, int local_rank, const Env& base_env, Env& env) {
  auto set = [&env](const char* name, const std::string& value) { env[name] = value; };
  if (!config.virtual_local_rank) {
    set("LOCAL_RANK", std::to_string(local_rank));
    return;
  }
  set("LOCAL_RANK", "0");
  const std::string variable = visible_devices_variable(base_env);
  std::string device = std::to_string(local_rank);
  if (!variable.empty()) {
    const auto devices = split_devices(base_env.at(variable));
    // check_virtual_local_rank() refused a list this short before any worker started.
    if (static_cast<size_t>(local_rank) < devices.size()) device = devices[static_cast<size_t>(local_rank)];
  }
  set("CUDA_VISIBLE_DEVICES", device);
  if (variable == "HIP_VISIBLE_DEVICES") set("HIP_VISIBLE_DEVICES", device);
}

}  // namespace

std::optional<std::string> check_virtual_local_rank(const LaunchConfig& config, int local_world_size,
                                                    const Env& env) {
  if (!config.virtual_local_rank) return std::nullopt;
  const std::string variable = visible_devices_variable(env);
  if (variable.empty()) return std::nullopt;
  const auto devices = split_devices(env.at(variable));
  if (static_cast<int>(devices.size()) >= local_world_size) return std::nullopt;
  return "--virtual-local-rank: " + std::to_string(local_world_size) + " workers but " + variable + "=" +
         env.at(variable) + " lists " + std::to_string(devices.size()) + " device(s): each worker needs its own";
}

WorkerSpec render_worker(const LaunchConfig& config, const Assignment& a, int local_world_size, int local_rank,
                         const std::string& error_file, const Env& base_env) {
  WorkerSpec w;
  w.env = base_env;
  const int rank = a.rank_offset + local_rank;
  auto set = [&](const char* name, const std::string& value) { w.env[name] = value; };
  set_local_rank(config, local_rank, base_env, w.env);
  set("RANK", std::to_string(rank));
  set("GROUP_RANK", std::to_string(a.group_rank));
  set("ROLE_RANK", std::to_string(rank));  // one role per job: role ranks are global ranks
  set("ROLE_NAME", config.role);
  set("LOCAL_WORLD_SIZE", std::to_string(local_world_size));
  set("WORLD_SIZE", std::to_string(a.world_size));
  set("GROUP_WORLD_SIZE", std::to_string(a.group_world_size));
  set("ROLE_WORLD_SIZE", std::to_string(a.world_size));
  // The store the round names, unless this launcher was told where it is.
  const bool own_addr = config.master_addr_given || a.master_addr.empty();
  const bool own_port = config.master_port_given || a.master_port <= 0;
  set("MASTER_ADDR", own_addr ? config.master_addr : a.master_addr);
  set("MASTER_PORT", std::to_string(own_port ? config.master_port : a.master_port));
  set("TORCHELASTIC_RESTART_COUNT", std::to_string(a.restart_count));
  set("TORCHELASTIC_MAX_RESTARTS", std::to_string(config.max_restarts));
  set("TORCHELASTIC_RUN_ID", config.run_id);
  // Workers host their own store at MASTER_ADDR:MASTER_PORT; the launcher's rendezvous is not a c10d store.
  set("TORCHELASTIC_USE_AGENT_STORE", "False");
  set("TORCHELASTIC_ERROR_FILE", error_file);
  if (config.workers_torch_major == 1) {
    // torchrun 1.x's: torch 1.x reads only this name.
    if (!w.env.count("NCCL_ASYNC_ERROR_HANDLING")) set("NCCL_ASYNC_ERROR_HANDLING", "1");
  } else {
    // torch 2.x's name (the plain NCCL_ASYNC_ERROR_HANDLING is deprecated there and warns); inherited, else 1.
    if (!w.env.count("TORCH_NCCL_ASYNC_ERROR_HANDLING")) set("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
    // torchrun 2.x puts its --signals-to-handle in its own environment, which its workers inherit.
    set("TORCHELASTIC_SIGNALS_TO_HANDLE", config.signals_to_handle_text);
  }
  // As torchrun: one thread each when several workers share the node, unless the user chose.
  if (!w.env.count("OMP_NUM_THREADS") && local_world_size > 1) set("OMP_NUM_THREADS", "1");

  if (!config.no_python) {
    w.argv = {config.python, "-u"};
    if (config.module) w.argv.push_back("-m");
  }
  // As torch.distributed.launch: the local rank right after the script (also after `python SCRIPT` with --no-python).
  const auto args_at = config.command.begin() + static_cast<long>(python_invocation(config).args_at);
  w.argv.insert(w.argv.end(), config.command.begin(), args_at);
  if (config.legacy_launch && !config.use_env)
    w.argv.push_back(config.local_rank_arg + "=" + std::to_string(local_rank));
  w.argv.insert(w.argv.end(), args_at, config.command.end());
  return w;
}

std::vector<std::string> env_to_strings(const Env& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace kubedist::launcher
