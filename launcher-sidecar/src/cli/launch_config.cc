#include "cli/launch_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "contract/pod_env.h"

namespace kubedist::launcher {
namespace {

// One row per flag. The PET_* name is derived from the flag (PET_ + upper-case, '-' -> '_'), as torchrun does.
// operator_env is the plain variable the kubedist operator sets on every pod. The KUBEDIST_* ones are ours and
// always read; the torch-like ones (NNODES, MASTER_PORT...) only in a TrainingJob's pod (KUBEDIST_JOB set): left
// in a user's shell they would silently turn a single-node command into a node of a job that never forms.
struct FlagSpec {
  const char* name;  // canonical dash spelling, without "--"
  bool boolean;
  const char* short_alias;  // e.g. "-m", or nullptr
  const char* operator_env = nullptr;
  bool pod_only = false;  // operator_env is read only in a TrainingJob's pod
};

const std::vector<FlagSpec>& flag_table() {
  static const std::vector<FlagSpec> table = {
      {contract::kFlagNnodes, false, nullptr, contract::kNnodes, true},
      {contract::kFlagNprocPerNode, false, nullptr, contract::kNprocPerNode, true},
      {contract::kFlagNodeRank, false, nullptr, contract::kNodeRank, true},
      {contract::kFlagMasterAddr, false, nullptr, contract::kMasterAddr, true},
      {contract::kFlagMasterPort, false, nullptr, contract::kMasterPort, true},
      {"rdzv-endpoint", false, nullptr},
      {"rdzv-id", false, nullptr, contract::kJob},
      {"rdzv-backend", false, nullptr},
      {"rdzv-conf", false, nullptr},
      {"rdzv-secret-file", false, nullptr, contract::kRdzvSecretFile},
      {"standalone", true, nullptr},
      {contract::kFlagMaxRestarts, false, nullptr},
      {"restart-policy", false, nullptr, contract::kRestartPolicy},
      {"monitor-interval", false, nullptr},
      {"start-method", false, nullptr},
      {"role", false, nullptr},
      {"no-python", true, nullptr},
      {"module", true, "-m"},
      {"run-path", true, nullptr},  // accepted: there is no Python agent to run the script in; it runs as usual
      {"redirects", false, "-r"},
      {"tee", false, "-t"},
      {"log-dir", false, nullptr},
      {"local-ranks-filter", false, nullptr},
      {"use-env", true, nullptr},
      {"legacy-launch", true, nullptr},
      {"local-rank-style", false, nullptr},
      {"stop-timeout", false, nullptr},
      {"metrics-port", false, nullptr, contract::kMetricsPort},
      {"metrics-addr", false, nullptr, contract::kMetricsAddr},
      {"termination-log", false, nullptr, contract::kTerminationLog},
      {"help", true, "-h"},
  };
  return table;
}

bool in_training_job(const Env& env) {
  auto it = env.find(contract::kJob);
  return it != env.end() && !it->second.empty();
}

struct RawValue {
  std::string value;
  std::string source;  // "--nnodes", "PET_NNODES" or "NNODES": named in error messages
};

const FlagSpec* find_flag(const std::string& long_name) {
  std::string normalized = long_name;
  std::replace(normalized.begin(), normalized.end(), '_', '-');
  for (const auto& f : flag_table())
    if (normalized == f.name) return &f;
  return nullptr;
}

const FlagSpec* find_short(const std::string& arg) {
  for (const auto& f : flag_table())
    if (f.short_alias && arg == f.short_alias) return &f;
  return nullptr;
}

std::optional<long> to_long(const std::string& s) {
  long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> to_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> to_bool(const std::string& s) {
  std::string l;
  for (char c : s) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "1" || l == "true" || l == "yes" || l == "on") return true;
  if (l == "0" || l == "false" || l == "no" || l == "off" || l.empty()) return false;
  return std::nullopt;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

Error bad(const RawValue& raw, const std::string& expected) {
  return make_error(raw.source + ": expected " + expected + ", got '" + raw.value + "'");
}

Result<StreamSpec> parse_stream_spec(const RawValue& raw) {
  StreamSpec spec;
  const std::string expected = "0-3 or LOCAL_RANK:0-3[,LOCAL_RANK:0-3...]";
  if (raw.value.find(':') == std::string::npos) {
    auto v = to_long(raw.value);
    if (!v || *v < 0 || *v > 3) return bad(raw, expected);
    spec.all = static_cast<int>(*v);
    return spec;
  }
  for (const auto& item : split(raw.value, ',')) {
    auto kv = split(item, ':');
    if (kv.size() != 2) return bad(raw, expected);
    auto rank = to_long(kv[0]);
    auto v = to_long(kv[1]);
    if (!rank || *rank < 0 || !v || *v < 0 || *v > 3) return bad(raw, expected);
    spec.per_local_rank[static_cast<int>(*rank)] = static_cast<int>(*v);
  }
  return spec;
}

Result<std::pair<int, int>> parse_nnodes(const RawValue& raw) {
  const std::string expected = "N or MIN:MAX with 1 <= MIN <= MAX";
  auto parts = split(raw.value, ':');
  if (parts.size() > 2) return bad(raw, expected);
  auto lo = to_long(parts[0]);
  auto hi = parts.size() == 2 ? to_long(parts[1]) : lo;
  if (!lo || !hi || *lo < 1 || *hi < *lo || *hi > 100000) return bad(raw, expected);
  return std::pair<int, int>{static_cast<int>(*lo), static_cast<int>(*hi)};
}

Result<int> parse_int_in(const RawValue& raw, long lo, long hi, const std::string& expected) {
  auto v = to_long(raw.value);
  if (!v || *v < lo || *v > hi) return bad(raw, expected);
  return static_cast<int>(*v);
}

Result<double> parse_seconds(const RawValue& raw, double lo) {
  auto v = to_double(raw.value);
  if (!v || *v < lo) return bad(raw, "a number of seconds >= " + std::to_string(static_cast<int>(lo)));
  return *v;
}

// Collects raw values, lowest precedence first, so that later sources overwrite earlier ones.
Result<std::map<std::string, RawValue>> collect(const std::vector<std::string>& args, const Env& env,
                                                std::vector<std::string>& command) {
  std::map<std::string, RawValue> raw;
  const bool in_pod = in_training_job(env);
  for (const auto& f : flag_table()) {
    if (f.operator_env && (in_pod || !f.pod_only))
      if (auto it = env.find(f.operator_env); it != env.end() && !it->second.empty())
        raw[f.name] = {it->second, f.operator_env};
    if (auto it = env.find(contract::pet_name(f.name)); it != env.end() && !it->second.empty())
      raw[f.name] = {it->second, contract::pet_name(f.name)};
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      return raw;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      command.assign(args.begin() + static_cast<long>(i), args.end());
      return raw;
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const FlagSpec* spec = name.rfind("--", 0) == 0 ? find_flag(name.substr(2)) : find_short(name);
    if (!spec && !inline_value && name.rfind("--", 0) != 0 && name.size() > 2) {  // "-r3", as argparse allows
      spec = find_short(name.substr(0, 2));
      if (spec && !spec->boolean) {
        inline_value = name.substr(2);
        name = name.substr(0, 2);
      } else {
        spec = nullptr;
      }
    }
    if (!spec && name == "--install") return make_error("--install must come first: --install DIR [--rdzv-secret-from FILE --rdzv-job UID]");
    if (!spec) return make_error("unknown flag '" + name + "' (see --help)");
    const std::string source = name.rfind("--", 0) == 0 ? "--" + std::string(spec->name) : name;
    if (spec->boolean) {
      if (inline_value) return make_error(source + " takes no value");
      raw[spec->name] = {"1", source};
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return make_error(source + " needs a value");
      inline_value = args[++i];
    }
    raw[spec->name] = {*inline_value, source};
  }
  return raw;
}

}  // namespace

int StreamSpec::for_local_rank(int local_rank) const {
  auto it = per_local_rank.find(local_rank);
  return it == per_local_rank.end() ? all : it->second;
}

bool StreamSpec::any() const {
  if (all != 0) return true;
  return std::any_of(per_local_rank.begin(), per_local_rank.end(), [](auto& kv) { return kv.second != 0; });
}

Result<LaunchConfig> parse_launch_config(const std::vector<std::string>& args, const Env& env) {
  LaunchConfig c;
  auto collected = collect(args, env, c.command);
  if (!collected) return make_error(collected.error());
  const auto& raw = collected.value();
  auto get = [&](const char* name) -> const RawValue* {
    auto it = raw.find(name);
    return it == raw.end() ? nullptr : &it->second;
  };
  auto flag_bool = [&](const char* name, bool& out) -> std::optional<Error> {
    if (const RawValue* r = get(name)) {
      auto v = to_bool(r->value);
      if (!v) return bad(*r, "1/0/true/false");
      out = *v;
    }
    return std::nullopt;
  };
  for (auto [name, field] : {std::pair{"help", &c.help}, {"standalone", &c.standalone}, {"no-python", &c.no_python},
                             {"module", &c.module}, {"use-env", &c.use_env}, {"legacy-launch", &c.legacy_launch}})
    if (auto err = flag_bool(name, *field)) return *err;
  if (c.help) return c;
  c.in_training_job = in_training_job(env);
  for (const auto& f : flag_table()) {
    const RawValue* r = get(f.name);
    const bool from_env = r && r->source[0] != '-';  // not "--flag" or "-m"
    if (from_env) c.from_env.push_back("--" + std::string(f.name) + "=" + r->value + " (" + r->source + ")");
    if (!r && f.pod_only && !c.in_training_job && env.count(f.operator_env) && !env.at(f.operator_env).empty())
      c.ignored_env.push_back(f.operator_env);
  }
  if (auto it = env.find("PYTHON_EXEC"); it != env.end() && !it->second.empty() && !c.no_python) {
    c.python = it->second;
    c.python_source = "PYTHON_EXEC";
    c.from_env.push_back("interpreter " + c.python + " (PYTHON_EXEC)");
  }

  if (const RawValue* r = get("nnodes")) {
    auto v = parse_nnodes(*r);
    if (!v) return make_error(v.error());
    std::tie(c.min_nodes, c.max_nodes) = v.value();
  }
  if (const RawValue* r = get("nproc-per-node")) {
    auto n = to_long(r->value);
    if (!(n && *n >= 1 && *n <= 4096) && r->value != "auto" && r->value != "gpu" && r->value != "cpu")
      return bad(*r, "a positive integer, auto, gpu or cpu");
    c.nproc_per_node = r->value;
  }
  if (const RawValue* r = get("node-rank")) {
    auto v = parse_int_in(*r, 0, 1000000, "a non-negative integer");
    if (!v) return make_error(v.error());
    c.node_rank = *v;
    c.node_rank_given = true;
  }
  if (const RawValue* r = get("master-addr")) {
    if (r->value.find_first_of(" \t/") != std::string::npos) return bad(*r, "a host name or IPv4 address");
    c.master_addr = r->value;
    c.master_addr_given = true;
  }
  if (const RawValue* r = get("master-port")) {
    auto v = parse_int_in(*r, 1, 65534, "a port number 1-65534");
    if (!v) return make_error(v.error());
    c.master_port = *v;
    c.master_port_given = true;
  }
  if (const RawValue* r = get("rdzv-id")) {
    if (r->value.find_first_of(" \t\n") != std::string::npos) return bad(*r, "an id without spaces");
    c.run_id = r->value;
  }
  if (const RawValue* r = get("rdzv-backend")) {
    if (r->value != "c10d" && r->value != "static" && r->value != "kubedist")
      return make_error(r->source + ": backend '" + r->value +
                        "' is not supported; the launcher hosts its own rendezvous (use c10d, static or kubedist)");
  }
  if (const RawValue* r = get("rdzv-conf")) {
    for (const auto& item : split(r->value, ',')) {
      if (item.empty()) continue;
      auto eq = item.find('=');
      if (eq == std::string::npos) return bad(*r, "KEY=VALUE[,KEY=VALUE...]");
      std::string key = item.substr(0, eq);
      RawValue value{item.substr(eq + 1), r->source + " " + key};
      if (key == "join_timeout" || key == "last_call_timeout") {
        auto v = parse_seconds(value, 0);
        if (!v) return make_error(v.error());
        (key == "join_timeout" ? c.join_timeout : c.last_call_timeout) = *v;
      } else if (key == "idle_timeout") {
        auto v = parse_seconds(value, 0);
        if (!v) return make_error(v.error());
        if (*v <= 0) return bad(value, "a number of seconds above 0");
        c.idle_timeout = *v;
      }
    }
  }
  if (const RawValue* r = get("rdzv-secret-file")) {
    if (r->value.empty()) return bad(*r, "the path of a file holding the job's rendezvous secret");
    c.rdzv_secret_file = r->value;
  }
  if (const RawValue* r = get("max-restarts")) {
    auto v = parse_int_in(*r, 0, 1000000, "a non-negative integer");
    if (!v) return make_error(v.error());
    c.max_restarts = *v;
  }
  if (const RawValue* r = get("restart-policy")) {
    // The TrainingJob's restartPolicy: under ExitCode, codes 1-127 are the program's own verdict, so restarting
    // in place would only fail again; 128+ (signals, OOM kills) stay retryable.
    if (r->value != "OnFailure" && r->value != "Never" && r->value != "ExitCode") {
      return bad(*r, "OnFailure, Never or ExitCode");
    }
    c.permanent_exit_codes = r->value == "ExitCode";
  }
  if (const RawValue* r = get("monitor-interval")) {
    auto v = parse_seconds(*r, 0);
    if (!v) return make_error(v.error());
    c.monitor_interval = *v;
  }
  if (const RawValue* r = get("start-method")) {
    if (r->value != "spawn" && r->value != "fork" && r->value != "forkserver")
      return bad(*r, "spawn, fork or forkserver");
  }
  if (const RawValue* r = get("role")) {
    if (r->value.empty() || r->value.find_first_of(" \t\n") != std::string::npos) return bad(*r, "a role name");
    c.role = r->value;
  }
  for (auto [name, field] : {std::pair{"redirects", &c.redirects}, {"tee", &c.tee}}) {
    if (const RawValue* r = get(name)) {
      auto v = parse_stream_spec(*r);
      if (!v) return make_error(v.error());
      *field = v.value();
    }
  }
  if (const RawValue* r = get("local-rank-style")) {
    if (r->value != "dash" && r->value != "underscore")
      return bad(*r, "dash (--local-rank=N, torch >= 2.0) or underscore (--local_rank=N, torch 1.x)");
    if (!c.legacy_launch)
      return make_error(r->source + ": only applies with --legacy-launch (torch.distributed.launch's --local-rank=N)");
    c.local_rank_arg = r->value == "dash" ? "--local-rank" : "--local_rank";
  }
  if (const RawValue* r = get("log-dir")) c.log_dir = r->value;
  if (const RawValue* r = get("local-ranks-filter")) {
    std::set<int> ranks;
    for (const auto& item : split(r->value, ',')) {
      auto v = to_long(item);
      if (!v || *v < 0) return bad(*r, "a comma-separated list of local ranks");
      ranks.insert(static_cast<int>(*v));
    }
    c.local_ranks_filter = ranks;
  }
  if (const RawValue* r = get("stop-timeout")) {
    auto v = parse_seconds(*r, 0);
    if (!v) return make_error(v.error());
    c.stop_timeout = *v;
  }
  if (const RawValue* r = get("metrics-port")) {
    auto v = parse_int_in(*r, 0, 65535, "a port number (0: any free port)");
    if (!v) return make_error(v.error());
    c.metrics_port = *v;
  }
  if (const RawValue* r = get("metrics-addr")) c.metrics_addr = r->value;
  if (const RawValue* r = get("termination-log")) {
    if (r->value.empty()) return bad(*r, "a file path (in Kubernetes, the container's terminationMessagePath)");
    c.termination_log = r->value;
  }

  if (c.standalone) {
    // torchrun --standalone: one node, everything on this host, a free port for the workers' store.
    c.min_nodes = c.max_nodes = 1;
    c.node_rank = 0;
    c.node_rank_given = true;
    c.master_addr = "127.0.0.1";
    c.master_port = 0;
  }
  if (c.node_rank >= c.max_nodes)
    return make_error("--node-rank: " + std::to_string(c.node_rank) + " is not below the maximum number of nodes (" +
                      std::to_string(c.max_nodes) + ")");
  // The rendezvous service runs on node rank 0 at MASTER_PORT+1 unless --rdzv-endpoint names another place.
  c.rdzv_host = c.master_addr;
  c.rdzv_port = c.master_port == 0 ? 0 : c.master_port + contract::kRendezvousPortOffset;
  if (const RawValue* r = get("rdzv-endpoint"); r && !c.standalone) {
    auto colon = r->value.rfind(':');
    std::string host = colon == std::string::npos ? r->value : r->value.substr(0, colon);
    int port = 29400;  // torchrun's default rendezvous port when the endpoint names none
    if (colon != std::string::npos) {
      auto p = to_long(r->value.substr(colon + 1));
      if (!p || *p < 1 || *p > 65535) return bad(*r, "HOST[:PORT]");
      port = static_cast<int>(*p);
    }
    if (host.empty()) return bad(*r, "HOST[:PORT]");
    c.rdzv_host = host;
    c.rdzv_port = port;
  }
  if (c.command.empty())
    return make_error(c.module ? "-m needs a module name" : "missing the training script (or, with --no-python, the program) to run");
  if (c.module && c.no_python) return make_error("-m and --no-python cannot be combined");
  return c;
}

std::string usage_text() {
  return R"(usage: kubedist-launcher [flags] SCRIPT.py [ARGS...]
       kubedist-launcher [flags] -m MODULE [ARGS...]
       kubedist-launcher [flags] --no-python [--] PROGRAM [ARGS...]
       kubedist-launcher --install DIR [--rdzv-secret-from FILE --rdzv-job UID]
                          copy this executable to DIR/kubedist-launcher (mode 0755), derive the job's rendezvous
                          secret from the namespace's in FILE into DIR/rdzv-secret (mode 0444), and exit
A torchrun-compatible launcher. Every flag may be spelled with '-' or '_' and set as PET_<NAME> in the env.
In a TrainingJob's pod (KUBEDIST_JOB set), the operator's plain NNODES, NPROC_PER_NODE, NODE_RANK, MASTER_ADDR and
MASTER_PORT apply too (below PET_*); elsewhere they are ignored, as torchrun ignores them.
  --nnodes N|MIN:MAX          nodes (pod env NNODES)      --nproc-per-node N|auto|gpu|cpu (pod env NPROC_PER_NODE)
  --node-rank R               (pod env NODE_RANK)         --master-addr HOST (pod env MASTER_ADDR)
  --master-port P             (pod env MASTER_PORT)       --rdzv-endpoint HOST:PORT (default MASTER_ADDR:MASTER_PORT+1)
  --rdzv-id ID                (env KUBEDIST_JOB)          --rdzv-conf join_timeout=S,last_call_timeout=S,idle_timeout=S
  --rdzv-secret-file PATH     (env KUBEDIST_RDZV_SECRET_FILE) sign every rendezvous message with this secret
  --standalone                one node, free port         --max-restarts N
  --restart-policy P          (env KUBEDIST_RESTART_POLICY) OnFailure | Never | ExitCode (1-127: no restart)
  --monitor-interval S        accepted; never polls       --role NAME
  --no-python  -m/--module    --redirects/-r  --tee/-t  0-3 or RANK:0-3,...   --log-dir DIR
  --local-ranks-filter 0,1    --use-env  --legacy-launch  (torch.distributed.launch: pass --local-rank=N)
  --local-rank-style S        with --legacy-launch: dash (--local-rank=N, torch >= 2.0, default) or
                              underscore (--local_rank=N, what torch 1.x passed)
  --stop-timeout S            SIGTERM->SIGKILL grace
  --metrics-port P (env KUBEDIST_METRICS_PORT)  --metrics-addr A (env KUBEDIST_METRICS_ADDR)  Prometheus /metrics
  --termination-log PATH      (env KUBEDIST_TERMINATION_LOG) on failure, one line: rank, host, exit code, error
)";
}

}  // namespace kubedist::launcher
