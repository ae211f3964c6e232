#include "cli/launch_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "cli/log_line_prefix.h"
#include "cli/signal_names.h"
#include "contract/pod_env.h"
#include "contract/signed_line.h"
#include "contract/torchrun_vocabulary.h"

namespace kubedist::launcher {
namespace {

struct RawValue {
  std::string value;
  std::string source;  // "--nnodes", "PET_NNODES" or "NNODES": named in error messages
};

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

bool has_blank(const std::string& s) { return s.find_first_of(" \t\n") != std::string::npos; }

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

// Sets the configuration from one flag's value; returns what is wrong with the value, naming its source.
using Setter = std::function<std::optional<Error>(LaunchConfig&, const RawValue&)>;

Setter boolean(bool LaunchConfig::*field) {
  return [field](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    auto v = to_bool(r.value);
    if (!v) return bad(r, "1/0/true/false");
    c.*field = *v;
    return std::nullopt;
  };
}

// Any text; with `if_empty`, an empty value is refused with that expectation.
Setter text(std::string LaunchConfig::*field, std::string if_empty = "") {
  return [field, if_empty](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    if (!if_empty.empty() && r.value.empty()) return bad(r, if_empty);
    c.*field = r.value;
    return std::nullopt;
  };
}

// An integer in [lo, hi]; `given`, when named, records that the value was set rather than defaulted.
Setter integer(int LaunchConfig::*field, long lo, long hi, std::string expected, bool LaunchConfig::*given = nullptr) {
  return [=](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    auto v = to_long(r.value);
    if (!v || *v < lo || *v > hi) return bad(r, expected);
    c.*field = static_cast<int>(*v);
    if (given) c.*given = true;
    return std::nullopt;
  };
}

// Every duration the launcher takes, at most this many seconds: a grace or timeout beyond it would overflow the
// clock arithmetic it feeds (milliseconds in a long, nanoseconds since boot in an int64).
constexpr double kMaxSeconds = static_cast<double>(contract::kMaxDurationSeconds);
constexpr const char* kTooManySeconds = "at most 100000000 seconds (about 3 years)";

Setter seconds(double LaunchConfig::*field) {
  return [field](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    auto v = to_double(r.value);
    if (!v || *v < 0) return bad(r, "a number of seconds >= 0");
    if (*v > kMaxSeconds) return bad(r, kTooManySeconds);
    c.*field = *v;
    return std::nullopt;
  };
}

Setter streams(StreamSpec LaunchConfig::*field) {
  return [field](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    auto v = parse_stream_spec(r);
    if (!v) return make_error(v.error());
    c.*field = v.value();
    return std::nullopt;
  };
}

// One of a few words; `store` takes the chosen one.
Setter one_of(std::vector<std::string> words, std::string expected,
              std::function<void(LaunchConfig&, const std::string&)> store = nullptr) {
  return [=](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    if (std::find(words.begin(), words.end(), r.value) == words.end()) return bad(r, expected);
    if (store) store(c, r.value);
    return std::nullopt;
  };
}

Setter nnodes() {
  return [](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    const std::string expected = "N or MIN:MAX with 1 <= MIN <= MAX";
    auto parts = split(r.value, ':');
    if (parts.size() > 2) return bad(r, expected);
    auto lo = to_long(parts[0]);
    auto hi = parts.size() == 2 ? to_long(parts[1]) : lo;
    if (!lo || !hi || *lo < 1 || *hi < *lo || *hi > 100000) return bad(r, expected);
    c.min_nodes = static_cast<int>(*lo);
    c.max_nodes = static_cast<int>(*hi);
    return std::nullopt;
  };
}

Setter nproc_per_node() {
  return [](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    auto n = to_long(r.value);
    if (!(n && *n >= 1 && *n <= contract::kMaxNprocPerNode) && !contract::is_nproc_mode(r.value))
      return bad(r, contract::nproc_per_node_expected());
    c.nproc_per_node = r.value;
    return std::nullopt;
  };
}

Setter master_addr() {
  return [](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    if (r.value.find_first_of(" \t/") != std::string::npos) return bad(r, "a host name or IPv4 address");
    c.master_addr = r.value;
    c.master_addr_given = true;
    return std::nullopt;
  };
}

// A name without blanks (a run id, a role).
Setter word(std::string LaunchConfig::*field, std::string expected, bool allow_empty) {
  return [=](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    if ((!allow_empty && r.value.empty()) || has_blank(r.value)) return bad(r, expected);
    if (field) c.*field = r.value;
    return std::nullopt;
  };
}

Setter rdzv_backend() {
  return [](LaunchConfig&, const RawValue& r) -> std::optional<Error> {
    if (r.value == "c10d" || r.value == "static" || r.value == "kubedist") return std::nullopt;
    return make_error(r.source + ": backend '" + r.value +
                      "' is not supported; the launcher hosts its own rendezvous (use c10d, static or kubedist)");
  };
}

Setter rdzv_conf() {
  return [](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    for (const auto& item : split(r.value, ',')) {
      if (item.empty()) continue;
      auto eq = item.find('=');
      if (eq == std::string::npos) return bad(r, "KEY=VALUE[,KEY=VALUE...]");
      const std::string key = item.substr(0, eq);
      const RawValue value{item.substr(eq + 1), r.source + " " + key};
      if (key == "join_timeout" || key == "last_call_timeout") {
        if (auto err = seconds(key == "join_timeout" ? &LaunchConfig::join_timeout
                                                     : &LaunchConfig::last_call_timeout)(c, value))
          return err;
      } else if (key == "idle_timeout") {
        auto v = to_double(value.value);
        if (!v || *v < 0) return bad(value, "a number of seconds >= 0");
        if (*v <= 0) return bad(value, "a number of seconds above 0");
        if (*v > kMaxSeconds) return bad(value, kTooManySeconds);
        c.idle_timeout = *v;
      }
    }
    return std::nullopt;
  };
}

Setter local_ranks_filter() {
  return [](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    std::set<int> ranks;
    for (const auto& item : split(r.value, ',')) {
      auto v = to_long(item);
      if (!v || *v < 0) return bad(r, "a comma-separated list of local ranks");
      ranks.insert(static_cast<int>(*v));
    }
    c.local_ranks_filter = ranks;
    return std::nullopt;
  };
}

Setter signals_to_handle() {
  return [](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    auto signals = parse_signal_names(r.value);
    if (!signals) return make_error(r.source + ": " + signals.error() + " (expected names like SIGTERM,SIGUSR1)");
    c.signals_to_handle = signals.value();
    c.signals_to_handle_text = r.value;
    return std::nullopt;
  };
}

// torchrun's comma-separated filter list: ",," is a comma inside a filter. An empty filter would match every line.
Setter line_filters(std::vector<std::string> LaunchConfig::*field) {
  return [field](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    std::vector<std::string> filters(1);
    for (size_t i = 0; i < r.value.size(); ++i) {
      if (r.value[i] != ',') {
        filters.back() += r.value[i];
      } else if (i + 1 < r.value.size() && r.value[i + 1] == ',') {
        filters.back() += ',';
        ++i;
      } else {
        filters.emplace_back();
      }
    }
    for (const auto& f : filters)
      if (f.empty())
        return bad(r, "words to match, comma-separated (,, for a comma), none empty (an empty one matches every line)");
    c.*field = filters;
    return std::nullopt;
  };
}

Setter prefix_template() {
  return [](LaunchConfig& c, const RawValue& r) -> std::optional<Error> {
    if (auto problem = check_prefix_template(r.value))
      return make_error(r.source + ": " + *problem + ", in '" + r.value + "'");
    c.log_line_prefix_template = r.value;
    return std::nullopt;
  };
}

// One row per flag; every spelling comes from it: --name and --name_with_underscores, the short alias, PET_<NAME>
// (derived as torchrun does) and operator_env, the plain variable the kubedist operator sets on every pod. The
// KUBEDIST_* ones are ours and always read; the torch-like ones (NNODES, MASTER_PORT...) only in a TrainingJob's pod
// (KUBEDIST_JOB set): left in a user's shell they would silently turn a single-node command into a node of a job
// that never forms. Setters run in the table's order; what depends on several flags is decided after them
// (finish()).
struct FlagSpec {
  const char* name;               // canonical dash spelling (torchrun's where it has the flag), without "--"
  const char* value = nullptr;    // what the value looks like, in --help; nullptr: a boolean flag
  const char* short_alias = nullptr;  // e.g. "-m"
  const char* operator_env = nullptr;
  bool pod_only = false;          // operator_env is read only in a TrainingJob's pod
  Setter set;                     // nullptr: read by finish()
  const char* help = "";
  // Another long name for the same flag (--stop-timeout for --shutdown-timeout), with its PET_ twin.
  const char* long_alias = nullptr;
  // torchrun's own variable for the flag where it reads one (TORCH_ELASTIC_SHUTDOWN_TIMEOUT): below PET_*, above
  // the operator's variable, as torchrun reads it only when neither flag nor PET_ named a value.
  const char* torchrun_env = nullptr;
  bool boolean() const { return value == nullptr; }
};

const std::vector<FlagSpec>& flag_table() {
  using C = LaunchConfig;
  static const std::vector<FlagSpec> table = {
      {contract::kFlagNnodes, "N|MIN:MAX", nullptr, contract::kNnodes, true, nnodes(), "nodes (elastic: MIN:MAX; default 1)"},
      {contract::kFlagNprocPerNode, "N|auto|gpu|cpu", nullptr, contract::kNprocPerNode, true, nproc_per_node(),
       "workers on this node (default 1)"},
      {contract::kFlagNodeRank, "R", nullptr, contract::kNodeRank, true,
       integer(&C::node_rank, 0, 1000000, "a non-negative integer", &C::node_rank_given), "this node's rank (default: 0 on one node; on several, the rendezvous endpoint's host is 0)"},
      {contract::kFlagMasterAddr, "HOST", nullptr, contract::kMasterAddr, true, master_addr(),
       "the workers' store (node rank 0; default 127.0.0.1)"},
      {contract::kFlagMasterPort, "P", nullptr, contract::kMasterPort, true,
       integer(&C::master_port, 1, 65534, "a port number 1-65534", &C::master_port_given), "the workers' store port (default 29500)"},
      {"rdzv-endpoint", "HOST[:PORT]", nullptr, nullptr, false, nullptr,
       "the rendezvous (default MASTER_ADDR:MASTER_PORT+1; port 29400 when none)"},
      {"rdzv-id", "ID", nullptr, contract::kJob, false, word(&C::run_id, "an id without spaces", true), "the run id (default none)"},
      {"rdzv-backend", "c10d|static|kubedist", nullptr, nullptr, false, rdzv_backend(),
       "accepted; the launcher hosts its own rendezvous"},
      {"rdzv-conf", "K=V,...", nullptr, nullptr, false, rdzv_conf(),
       "join_timeout=S,last_call_timeout=S,idle_timeout=S (default 600, 1, 15)"},
      {"rdzv-secret-file", "PATH", nullptr, contract::kRdzvSecretFile, false,
       text(&C::rdzv_secret_file, "the path of a file holding the job's rendezvous secret"),
       "sign every rendezvous message with this secret"},
      {"rdzv-secret-fingerprint", "HEX", nullptr, contract::kRdzvSecretFingerprint, false,
       [](C& c, const RawValue& r) -> std::optional<Error> {
         if (r.value.size() != contract::kSecretFingerprintHexDigits || !contract::is_lower_hex(r.value))
           return bad(r, std::to_string(contract::kSecretFingerprintHexDigits) + " lower-case hex digits");
         c.rdzv_secret_fingerprint = r.value;
         return std::nullopt;
       },
       "refuse a --rdzv-secret-file of another fingerprint (the operator's, of the secret it wrote)"},
      {"rdzv-trace", "PATH", nullptr, nullptr, false, text(&C::rdzv_trace, "a file path"),
       "append when this node joins and gets its place (benchmarks)"},
      {"standalone", nullptr, nullptr, nullptr, false, boolean(&C::standalone), "one node, a free store port"},
      {"spare", nullptr, nullptr, contract::kSpare, false, boolean(&C::spare),
       "wait as a spare, with no workers, and take a lost node's place at the next round (spec.spares)"},
      {"topology-domain-file", "PATH", nullptr, contract::kTopologyDomainFile, false,
       text(&C::topology_domain_file, "a file path"),
       "a file holding this node's topology domain (spec.placement.topologyKey): one domain's nodes take "
       "consecutive group ranks"},
      {contract::kFlagMaxRestarts, "N", nullptr, nullptr, false,
       integer(&C::max_restarts, 0, contract::kMaxRestartsUpperBound, contract::max_restarts_expected()),
       "in-place restarts of the group (default 0)"},
      // The TrainingJob's restartPolicy: under ExitCode, codes 1-127 are the program's own verdict, so restarting in
      // place would only fail again; 128+ (signals, OOM kills) stay retryable.
      {"restart-policy", "P", nullptr, contract::kRestartPolicy, false,
       one_of({"OnFailure", "Never", "ExitCode"}, "OnFailure, Never or ExitCode",
              [](C& c, const std::string& v) { c.permanent_exit_codes = v == "ExitCode"; }),
       "OnFailure (default) | Never | ExitCode (exit codes 1-127: no restart)"},
      {"monitor-interval", "S", nullptr, nullptr, false, seconds(&C::monitor_interval), "accepted; never polls"},
      {"start-method", "M", nullptr, nullptr, false, one_of({"spawn", "fork", "forkserver"}, "spawn, fork or forkserver"),
       "accepted; workers are always separate processes"},
      {"role", "NAME", nullptr, nullptr, false, word(&C::role, "a role name", false), "the workers' ROLE_NAME (default default)"},
      {"no-python", nullptr, nullptr, nullptr, false, boolean(&C::no_python), "run the command as it is"},
      {"module", nullptr, "-m", nullptr, false, boolean(&C::module), "run a module as python -m does"},
      // Accepted: there is no Python agent to run the script in; it runs as usual.
      {"run-path", nullptr, nullptr, nullptr, false, nullptr, "accepted; the script runs as usual"},
      {"redirects", "0-3|RANK:0-3,...", "-r", nullptr, false, streams(&C::redirects), "worker streams to log files (default 0: none)"},
      {"tee", "0-3|RANK:0-3,...", "-t", nullptr, false, streams(&C::tee), "worker streams to log files and the console (default 0: none)"},
      {"log-dir", "DIR", nullptr, nullptr, false, text(&C::log_dir), "where worker logs go (default: a temporary directory, named when it holds logs)"},
      {"local-ranks-filter", "0,1,...", nullptr, nullptr, false, local_ranks_filter(),
       "show only these local ranks' output (default: all)"},
      {"log-line-prefix-template", "T", nullptr, nullptr, false, prefix_template(),
       "the console prefix of relayed lines: ${role_name} ${local_rank} ${rank} ${hostname} (default '[rank "
       "${rank}]: ')",
       nullptr, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"},
      {"duplicate-stdout-filters", "W,...", nullptr, nullptr, false, line_filters(&C::duplicate_stdout_filters),
       "also copy tee'd stdout lines containing any W to attempt_N/filtered_stdout.log (,, for a comma)"},
      {"duplicate-stderr-filters", "W,...", nullptr, nullptr, false, line_filters(&C::duplicate_stderr_filters),
       "also copy tee'd stderr lines containing any W to attempt_N/filtered_stderr.log"},
      {"use-env", nullptr, nullptr, contract::kUseEnv, false, boolean(&C::use_env),
       "with --legacy-launch: workers read LOCAL_RANK from the environment"},
      {"legacy-launch", nullptr, nullptr, contract::kLegacyLaunch, false, boolean(&C::legacy_launch),
       "torch.distributed.launch: pass the local rank as an argument"},
      {"local-rank-style", "auto|dash|underscore", nullptr, contract::kLocalRankStyle, false,
       one_of({"auto", "dash", "underscore"},
              "auto (the spelling of the workers' torch), dash (--local-rank=N, torch >= 2.0) or underscore "
              "(--local_rank=N, torch 1.x)",
              [](C& c, const std::string& v) {
                c.local_rank_style = v;
                if (v != "auto") c.local_rank_arg = v == "dash" ? "--local-rank" : "--local_rank";
              }),
       "with --legacy-launch: the spelling of the torch the workers import (default), --local-rank=N or "
       "--local_rank=N"},
      {"shutdown-timeout", "S", nullptr, contract::kStopTimeout, false, seconds(&C::stop_timeout),
       "stop signal to SIGKILL grace for workers; alias --stop-timeout (default 30, torchrun's; in a pod, the pod's "
       "grace period less 2 s)",
       "stop-timeout", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"},
      {"signals-to-handle", "SIG,...", nullptr, nullptr, false, signals_to_handle(),
       "signals passed on to the workers as a stop (default SIGTERM,SIGINT,SIGHUP,SIGQUIT); any other signal "
       "with a default action ends the launcher and kills its workers"},
      {"virtual-local-rank", nullptr, nullptr, nullptr, false, boolean(&C::virtual_local_rank),
       "each worker gets LOCAL_RANK=0 and only its own device in CUDA_VISIBLE_DEVICES"},
      {"numa-binding", "MODE", nullptr, nullptr, false,
       one_of({"node", "socket", "exclusive", "core-complex"}, "node, socket, exclusive or core-complex",
              [](C& c, const std::string& v) { c.numa_binding = v; }),
       "bind each worker to the CPUs near its GPU: node | socket | exclusive | core-complex (a no-op on a "
       "machine with one NUMA node)"},
      {"local-addr", "ADDR", nullptr, nullptr, false, word(&C::local_addr, "a host name or address", false),
       "the address other nodes reach this one at: a rendezvous host names the workers' store there"},
      {"logs-specs", "NAME", nullptr, nullptr, false, word(nullptr, "an entry point name", false),
       "accepted; a Python entry point: logs go as --log-dir, --redirects and --tee say"},
      {"event-log-handler", "NAME", nullptr, nullptr, false, word(nullptr, "a handler name", false),
       "accepted; a Python event handler: the launcher's events go to its stderr and /metrics"},
      {"print-completion", "SHELL", nullptr, nullptr, false, nullptr,
       "print a bash, zsh or tcsh completion script for kubedist-launcher and exit"},
      // The TrainingJob's spec.hangTimeout (the operator sets PET_HANG_TIMEOUT).
      {contract::kFlagHangTimeout, "S", nullptr, nullptr, false, seconds(&C::hang_timeout),
       "restart the group when the workers' reported step stops advancing this long (default 0: never)"},
      {"straggler-factor", "X", nullptr, nullptr, false,
       [](C& c, const RawValue& r) -> std::optional<Error> {
         auto v = to_double(r.value);
         if (!v || *v <= 1 || *v > 1000) return bad(r, "a number above 1 (and at most 1000)");
         c.straggler_factor = *v;
         return std::nullopt;
       },
       "a rank this many times slower than the others' median is a straggler (default 1.5)"},
      {"straggler-steps", "N", nullptr, nullptr, false,
       integer(&C::straggler_steps, 1, 1000000, "a positive integer"),
       "...for this many of the job's steps (default 20)"},
      {"metrics-port", "P", nullptr, contract::kMetricsPort, false,
       integer(&C::metrics_port, 0, 65535, "a port number (0: any free port)"), "serve Prometheus /metrics (default: none)"},
      {"metrics-addr", "A", nullptr, contract::kMetricsAddr, false, text(&C::metrics_addr), "/metrics address (default 0.0.0.0)"},
      {"termination-log", "PATH", nullptr, contract::kTerminationLog, false,
       text(&C::termination_log, "a file path (in Kubernetes, the container's terminationMessagePath)"),
       "on failure, one line: rank, host, exit code, error; on success, node 0's last STATUS (default: nowhere)"},
      {"help", nullptr, "-h", nullptr, false, boolean(&C::help), "this text"},
  };
  return table;
}

bool in_training_job(const Env& env) {
  auto it = env.find(contract::kJob);
  return it != env.end() && !it->second.empty();
}

const FlagSpec* find_flag(const std::string& long_name) {
  std::string normalized = long_name;
  std::replace(normalized.begin(), normalized.end(), '_', '-');
  for (const auto& f : flag_table())
    if (normalized == f.name || (f.long_alias && normalized == f.long_alias)) return &f;
  return nullptr;
}

const FlagSpec* find_short(const std::string& arg) {
  for (const auto& f : flag_table())
    if (f.short_alias && arg == f.short_alias) return &f;
  return nullptr;
}

using RawValues = std::map<std::string, RawValue>;

// The environment's values, lowest precedence first so that PET_* overwrites the operator's plain variable.
RawValues collect_env(const Env& env) {
  RawValues raw;
  const bool in_pod = in_training_job(env);
  for (const auto& f : flag_table()) {
    auto take = [&](const std::string& name) {
      if (auto it = env.find(name); it != env.end() && !it->second.empty()) raw[f.name] = {it->second, name};
    };
    if (f.operator_env && (in_pod || !f.pod_only)) take(f.operator_env);
    if (f.torchrun_env) take(f.torchrun_env);
    if (f.long_alias) take(contract::pet_name(f.long_alias));
    // torchrun reads no PET_ twin for --print-completion: one left in a shell would turn every launch into printing.
    if (std::string_view(f.name) != "print-completion") take(contract::pet_name(f.name));
  }
  return raw;
}

// The flag an argument names ("--nnodes", "--nproc_per_node", "-r", "-r3" as argparse allows) and its inline value;
// nullptr when it names none.
const FlagSpec* flag_of(std::string& name, std::optional<std::string>& inline_value) {
  if (auto eq = name.find('='); eq != std::string::npos) {
    inline_value = name.substr(eq + 1);
    name = name.substr(0, eq);
  }
  const FlagSpec* spec = name.rfind("--", 0) == 0 ? find_flag(name.substr(2)) : find_short(name);
  if (!spec && !inline_value && name.rfind("--", 0) != 0 && name.size() > 2) {
    spec = find_short(name.substr(0, 2));
    if (!spec || spec->boolean()) return nullptr;
    inline_value = name.substr(2);
    name = name.substr(0, 2);
  }
  return spec;
}

// The command line's flags over the environment's values, up to the command (the first argument that is not a
// flag, or what follows "--").
Result<RawValues> collect(const std::vector<std::string>& args, const Env& env, std::vector<std::string>& command) {
  RawValues raw = collect_env(env);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--" || arg.size() < 2 || arg[0] != '-') {
      command.assign(args.begin() + static_cast<long>(i) + (arg == "--" ? 1 : 0), args.end());
      return raw;
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    const FlagSpec* spec = flag_of(name, inline_value);
    if (!spec && name == "--install") return make_error("--install must come first: --install DIR [--rdzv-secret-from FILE --rdzv-job UID]");
    if (!spec) return make_error("unknown flag '" + name + "' (see --help)");
    // Named as typed (--stop-timeout stays --stop-timeout), in the dash spelling.
    std::string source = name;
    if (source.rfind("--", 0) == 0) std::replace(source.begin() + 2, source.end(), '_', '-');
    if (spec->boolean()) {
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

const RawValue* find_raw(const RawValues& raw, const char* name) {
  auto it = raw.find(name);
  return it == raw.end() ? nullptr : &it->second;
}

// Notes what the environment set ("--nnodes=2 (PET_NNODES)") and which of the operator's plain variables were set
// but ignored outside a TrainingJob's pod, and the interpreter PYTHON_EXEC names.
void note_environment(LaunchConfig& c, const RawValues& raw, const Env& env) {
  for (const auto& f : flag_table()) {
    const RawValue* r = find_raw(raw, f.name);
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
}

// torchrun --standalone: one node, everything on this host, a free port for the workers' store (master_port 0:
// the launcher picks it).
void apply_standalone(LaunchConfig& c) {
  c.min_nodes = c.max_nodes = 1;
  c.node_rank = 0;
  c.node_rank_given = true;
  c.master_addr = "127.0.0.1";
  c.master_port = 0;
}

// The rendezvous service runs on node rank 0 at MASTER_PORT+1 unless --rdzv-endpoint names another place.
std::optional<Error> locate_rendezvous(LaunchConfig& c, const RawValues& raw) {
  c.rdzv_host = c.master_addr;
  c.rdzv_port = c.master_port == 0 ? 0 : c.master_port + contract::kRendezvousPortOffset;
  const RawValue* r = find_raw(raw, "rdzv-endpoint");
  if (!r || c.standalone) return std::nullopt;
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
  c.rdzv_endpoint_given = true;
  return std::nullopt;
}

// What depends on several flags: --standalone over the node flags, where the rendezvous is, and what must come
// together.
// What torchrun flags that name Python entry points, and torchrun's own variables it ignores, amount to here.
void note_python_only(LaunchConfig& c, const RawValues& raw, const Env& env) {
  if (const RawValue* r = find_raw(raw, "logs-specs"))
    c.notes.push_back(r->source + "=" + r->value + " names a Python entry point (torchrun.logs_specs), which the "
                      "launcher does not load: worker logs go where --log-dir, --redirects and --tee say");
  if (const RawValue* r = find_raw(raw, "event-log-handler"); r && r->value != "null")
    c.notes.push_back(r->source + "=" + r->value + " names a Python event handler, which the launcher does not "
                      "load: its events are the lines on its stderr and its /metrics (--metrics-port)");
  // torchrun overwrites it from --signals-to-handle (whose default applies when neither names a list).
  if (auto it = env.find("TORCHELASTIC_SIGNALS_TO_HANDLE"); it != env.end() && !find_raw(raw, "signals-to-handle"))
    c.notes.push_back("ignoring TORCHELASTIC_SIGNALS_TO_HANDLE=" + it->second +
                      ", as torchrun does: --signals-to-handle (or PET_SIGNALS_TO_HANDLE) chooses the signals");
}

std::optional<Error> finish(LaunchConfig& c, const RawValues& raw) {
  if (c.signals_to_handle.empty()) {
    c.signals_to_handle = parse_signal_names(kDefaultSignalsToHandle).value();
    c.signals_to_handle_text = kDefaultSignalsToHandle;
  }
  if (c.standalone) apply_standalone(c);
  if (const RawValue* r = find_raw(raw, "spare"); r && c.spare) {
    if (c.standalone || !c.multi_node())
      return make_error(r->source + ": only for a multi-node job (a spare stands in for a lost node)");
    if (!c.node_rank_given || c.node_rank == 0)
      return make_error(r->source + ": needs a --node-rank other than 0 (node 0 hosts the rendezvous)");
  }
  // A spare's node rank only names it: the slot it may take is a lost member's.
  if (c.node_rank >= c.max_nodes && !c.spare)
    return make_error("--node-rank: " + std::to_string(c.node_rank) + " is not below the maximum number of nodes (" +
                      std::to_string(c.max_nodes) + ")");
  if (const RawValue* r = find_raw(raw, "local-rank-style"); r && !c.legacy_launch)
    return make_error(r->source + ": only applies with --legacy-launch (torch.distributed.launch's --local-rank=N)");
  if (auto err = locate_rendezvous(c, raw)) return err;
  if (const RawValue* r = find_raw(raw, "rdzv-secret-fingerprint"); r && c.rdzv_secret_file.empty())
    return make_error(r->source + ": only applies with --rdzv-secret-file (the secret it fingerprints)");
  if (c.command.empty())
    return make_error(c.module ? "-m needs a module name" : "missing the training script (or, with --no-python, the program) to run");
  if (c.module && c.no_python) return make_error("-m and --no-python cannot be combined");
  return std::nullopt;
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
  const RawValues& raw = collected.value();
  // --help wins over anything else on the line, also over values that would be refused.
  if (const RawValue* help = find_raw(raw, "help"); help && to_bool(help->value).value_or(false)) {
    c.help = true;
    return c;
  }
  // --print-completion prints and exits where argparse meets it, before the script is missing.
  if (const RawValue* shell = find_raw(raw, "print-completion")) {
    if (shell->value != "bash" && shell->value != "zsh" && shell->value != "tcsh") return bad(*shell, "bash, zsh or tcsh");
    c.print_completion = shell->value;
    return c;
  }
  c.in_training_job = in_training_job(env);
  for (const auto& f : flag_table())
    if (const RawValue* r = find_raw(raw, f.name); r && f.set)
      if (auto err = f.set(c, *r)) return *err;
  note_environment(c, raw, env);
  note_python_only(c, raw, env);
  if (auto err = finish(c, raw)) return *err;
  return c;
}

namespace {

constexpr size_t kHelpColumn = 37;  // where a flag's description starts
constexpr size_t kHelpWidth = 118;  // the repository's line length

// Whether text[0, end) ends with `suffix`.
bool ends_with(const std::string& text, size_t end, const std::string& suffix) {
  return end >= suffix.size() && text.compare(end - suffix.size(), suffix.size(), suffix) == 0;
}

// One --help entry, broken at spaces into lines of kHelpWidth, the continued ones indented to `indent`; "(env NAME"
// and "(default X" stay on one line.
std::string wrap(const std::string& line, size_t indent) {
  std::string out, rest = line;
  while (rest.size() > kHelpWidth) {
    size_t cut = rest.rfind(' ', kHelpWidth);
    while (cut != std::string::npos && cut > indent && (ends_with(rest, cut, "(env") || ends_with(rest, cut, "(default")))
      cut = rest.rfind(' ', cut - 1);
    if (cut == std::string::npos || cut <= indent) break;
    out += rest.substr(0, cut) + "\n";
    rest = std::string(indent, ' ') + rest.substr(cut + 1);
  }
  return out + rest + "\n";
}

}  // namespace

std::vector<FlagName> flag_names() {
  std::vector<FlagName> out;
  for (const auto& f : flag_table()) {
    out.push_back({std::string("--") + f.name, !f.boolean()});
    if (f.long_alias) out.push_back({std::string("--") + f.long_alias, !f.boolean()});
    if (f.short_alias) out.push_back({f.short_alias, !f.boolean()});
  }
  return out;
}

std::string usage_text() {
  std::string out = R"(usage: kubedist-launcher [flags] SCRIPT.py [ARGS...]
       kubedist-launcher [flags] -m MODULE [ARGS...]
       kubedist-launcher [flags] --no-python [--] PROGRAM [ARGS...]
       kubedist-launcher --install DIR [--rdzv-secret-from FILE --rdzv-job UID]
                          copy this executable to DIR/kubedist-launcher (mode 0755), derive the job's rendezvous
                          secret from the namespace's in FILE into DIR/rdzv-secret (mode 0444), and exit
A torchrun-compatible launcher. Every flag may be spelled with '-' or '_' and set as PET_<NAME> in the env.
In a TrainingJob's pod (KUBEDIST_JOB set), the operator's plain NNODES, NPROC_PER_NODE, NODE_RANK, MASTER_ADDR and
MASTER_PORT apply too (below PET_*); elsewhere they are ignored, as torchrun ignores them.
)";
  for (const auto& f : flag_table()) {
    std::string spelling = "  " + (f.short_alias ? std::string(f.short_alias) + ", " : "") + "--" + f.name;
    if (!f.boolean()) spelling += " " + std::string(f.value);
    if (spelling.size() < kHelpColumn) spelling.resize(kHelpColumn, ' ');
    else spelling += " ";
    std::string line = spelling + f.help;
    std::string envs;
    if (f.torchrun_env) envs = f.torchrun_env;
    if (f.operator_env) envs += (envs.empty() ? "" : ", ") + std::string(f.operator_env) + (f.pod_only ? " in a pod" : "");
    if (!envs.empty()) line += " (env " + envs + ")";
    out += wrap(line, kHelpColumn);
  }
  return out;
}

}  // namespace kubedist::launcher
