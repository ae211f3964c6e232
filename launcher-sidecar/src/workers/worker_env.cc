#include "workers/worker_env.h"

#include "cli/python_invocation.h"

namespace kubedist::launcher {

WorkerSpec render_worker(const LaunchConfig& config, const Assignment& a, int local_world_size, int local_rank,
                         const std::string& error_file, const Env& base_env) {
  WorkerSpec w;
  w.env = base_env;
  const int rank = a.rank_offset + local_rank;
  auto set = [&](const char* name, const std::string& value) { w.env[name] = value; };
  set("LOCAL_RANK", std::to_string(local_rank));
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
  if (!w.env.count("NCCL_ASYNC_ERROR_HANDLING")) set("NCCL_ASYNC_ERROR_HANDLING", "1");
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
