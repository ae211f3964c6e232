#include "kubectl/cli/training_command.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "contract/torchrun_vocabulary.h"

namespace kubedist::kubectl {
namespace {

// What the plugin does with one torchrun flag.
enum class Action {
  kNnodes,
  kNproc,
  kMaxRestarts,
  kModule,
  kNoPython,
  kStandalone,
  kRdzvConf,
  kStream,        // --redirects/--tee: PET_*, validated
  kPet,           // the value travels as PET_<NAME> (the launcher reads it like the flag)
  kSeconds,       // a number of seconds, as PET_<NAME>
  kRanks,         // --local-ranks-filter
  kStartMethod,
  kShutdown,      // --shutdown-timeout: whole seconds, as torchrun's (type=int), as PET_SHUTDOWN_TIMEOUT
  kSignals,       // --signals-to-handle: signal names the launcher can pass on, as PET_*
  kFilters,       // --duplicate-*-filters: words, none empty (",," a comma), as PET_*
  kNuma,          // --numa-binding: one of torchrun's modes, as PET_*
  kUseEnv,        // torch.distributed.launch only
  kAccepted,      // accepted, nothing to map (--run-path: the script runs as usual)
  kEventHandler,  // only torchrun's default "null"
  kDrop,          // the operator's business: dropped with one line
  kRefuse,        // refused on purpose, with the reason
};

struct FlagRule {
  const char* name;  // dash spelling without "--"; the underscore spelling is accepted too
  const char* short_name;
  bool boolean;
  Action action;
  const char* why = "";  // for kDrop and kRefuse: the one line the user sees
};

// torchrun 2.x's flags (torch/distributed/run.py get_args_parser), and torch.distributed.launch's --use-env.
const std::vector<FlagRule>& flag_rules() {
  static const std::vector<FlagRule> rules = {
      {"nnodes", nullptr, false, Action::kNnodes},
      {"nproc-per-node", nullptr, false, Action::kNproc},
      {"max-restarts", nullptr, false, Action::kMaxRestarts},
      {"module", "-m", true, Action::kModule},
      {"no-python", nullptr, true, Action::kNoPython},
      {"standalone", nullptr, true, Action::kStandalone},
      {"rdzv-conf", nullptr, false, Action::kRdzvConf},
      {"redirects", "-r", false, Action::kStream},
      {"tee", "-t", false, Action::kStream},
      {"log-dir", nullptr, false, Action::kPet},
      {"role", nullptr, false, Action::kPet},
      {"monitor-interval", nullptr, false, Action::kSeconds},
      {"local-ranks-filter", nullptr, false, Action::kRanks},
      {"start-method", nullptr, false, Action::kStartMethod},
      {"shutdown-timeout", nullptr, false, Action::kShutdown},
      {"signals-to-handle", nullptr, false, Action::kSignals},
      {"virtual-local-rank", nullptr, true, Action::kPet},
      {"numa-binding", nullptr, false, Action::kNuma},
      {"duplicate-stdout-filters", nullptr, false, Action::kFilters},
      {"duplicate-stderr-filters", nullptr, false, Action::kFilters},
      {"log-line-prefix-template", nullptr, false, Action::kPet},
      {"use-env", nullptr, true, Action::kUseEnv},
      {"run-path", nullptr, true, Action::kAccepted},
      {"event-log-handler", nullptr, false, Action::kEventHandler},
      {"master-addr", nullptr, false, Action::kDrop, "the operator gives node 0 its address (J-node-0.J.NS.svc)"},
      {"master-port", nullptr, false, Action::kDrop, "the operator picks the port (spec.masterPort, 29500)"},
      {"rdzv-endpoint", nullptr, false, Action::kDrop, "the launcher on node 0 hosts the rendezvous"},
      {"local-addr", nullptr, false, Action::kDrop, "each pod has its own address"},
      {"node-rank", nullptr, false, Action::kDrop, "the operator gives each pod its node rank"},
      {"rdzv-backend", nullptr, false, Action::kDrop, "the launcher on node 0 hosts the rendezvous"},
      {"rdzv-id", nullptr, false, Action::kDrop, "the job's name is the run id"},
      {"logs-specs", nullptr, false, Action::kDrop,
       "names a Python entry point, which the kubedist launcher does not load: worker logs go where --log-dir, "
       "--redirects and --tee say"},
      {"print-completion", nullptr, false, Action::kRefuse,
       "prints a completion script for the local shell; run `kubedist-launcher --print-completion SHELL` instead"},
      {"help", "-h", true, Action::kRefuse, "run `torchrun --help` locally; `kubectl kubedist run --help` for ours"},
  };
  return rules;
}

std::string pet(const std::string& flag) {
  std::string out = "PET_";
  for (char c : flag) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::optional<long> to_long(const std::string& s) {
  long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool is_seconds(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && v >= 0;
}

std::string basename(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_python(const std::string& word) {
  static const std::regex re("python(3(\\.[0-9]+)?)?");
  return std::regex_match(basename(word), re);
}

bool is_env_assignment(const std::string& word) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_]*=.*");
  return std::regex_match(word, re);
}

const FlagRule* find_rule(const std::string& word, std::string* shown) {
  if (word.rfind("--", 0) == 0) {
    std::string name = word.substr(2);
    std::replace(name.begin(), name.end(), '_', '-');
    for (const auto& r : flag_rules())
      if (name == r.name) {
        *shown = "--" + name;
        return &r;
      }
    return nullptr;
  }
  for (const auto& r : flag_rules())
    if (r.short_name && word == r.short_name) {
      *shown = word;
      return &r;
    }
  return nullptr;
}

Error refuse(const std::string& flag, const std::string& why) { return Error::invalid(flag + ": " + why); }

// The redirects/tee grammar the launcher reads: 0-3, or LOCAL_RANK:0-3[,...].
bool is_stream_spec(const std::string& v) {
  static const std::regex re("[0-3]|[0-9]+:[0-3](,[0-9]+:[0-3])*");
  return std::regex_match(v, re);
}

Result<std::pair<int, int>> parse_nnodes(const std::string& flag, const std::string& v) {
  const auto colon = v.find(':');
  auto lo = to_long(v.substr(0, colon));
  auto hi = colon == std::string::npos ? lo : to_long(v.substr(colon + 1));
  if (!lo || !hi || *lo < 1 || *hi < *lo || *hi > 10000) {
    return refuse(flag, "expected N or MIN:MAX with 1 <= MIN <= MAX <= 10000, got '" + v + "'");
  }
  return std::pair<int, int>{static_cast<int>(*lo), static_cast<int>(*hi)};
}

struct Parser {
  TrainingCommand cmd;
  const FileReader& read_file;
  std::map<std::string, std::string> seen;  // flag -> value, to refuse a flag given twice with different values
  bool standalone = false;
  bool use_env = false;

  void set_pet(const std::string& flag, const std::string& value) {
    const std::string name = pet(flag);
    for (auto& [k, v] : cmd.launcher_env)
      if (k == name) {
        v = value;
        return;
      }
    cmd.launcher_env.emplace_back(name, value);
  }

  Result<void> apply(const FlagRule& rule, const std::string& flag, const std::string& value) {
    if (auto it = seen.find(rule.name); it != seen.end() && it->second != value) {
      return refuse(flag, "given twice ('" + it->second + "' and '" + value + "'); keep one");
    }
    seen[rule.name] = value;
    switch (rule.action) {
      case Action::kNnodes: {
        auto n = parse_nnodes(flag, value);
        if (!n) return n.error();
        cmd.min_nodes = n->first;
        cmd.max_nodes = n->second;
        return {};
      }
      case Action::kNproc: {
        if (contract::is_nproc_mode(value)) {
          cmd.nproc_per_node = value;
          return {};
        }
        if (value == "xpu") return refuse(flag, "xpu is not supported on kubedist; use N, auto, gpu or cpu");
        auto n = to_long(value);
        if (!n || *n < 1 || *n > contract::kMaxNprocPerNode)
          return refuse(flag, "expected " + contract::nproc_per_node_expected() + ", got '" + value + "'");
        cmd.nproc_per_node = std::to_string(*n);
        return {};
      }
      case Action::kMaxRestarts: {
        auto n = to_long(value);
        if (!n || *n < 0 || *n > contract::kMaxRestartsUpperBound)
          return refuse(flag, "expected " + contract::max_restarts_expected() + ", got '" + value + "'");
        cmd.max_restarts = static_cast<int>(*n);
        return {};
      }
      case Action::kModule: cmd.module = true; return {};
      case Action::kNoPython: cmd.no_python = true; return {};
      case Action::kStandalone: standalone = true; return {};
      case Action::kUseEnv:
        if (cmd.form != TrainingCommand::Form::kLegacyLaunch) {
          return refuse(flag, "belongs to python -m torch.distributed.launch; torchrun always sets LOCAL_RANK");
        }
        use_env = true;
        set_pet("use-env", "1");
        return {};
      case Action::kRdzvConf: {
        auto conf = rdzv_conf_value(value, read_file);
        if (!conf) return refuse(flag, conf.error().message);
        set_pet(rule.name, *conf);
        return {};
      }
      case Action::kStream:
        if (!is_stream_spec(value)) return refuse(flag, "expected 0-3 or LOCAL_RANK:0-3[,...], got '" + value + "'");
        cmd.tee_or_redirects = true;
        set_pet(rule.name, value);
        return {};
      case Action::kPet:
        if (value.empty()) return refuse(flag, "needs a value");
        set_pet(rule.name, value);
        return {};
      case Action::kSeconds:
        if (!is_seconds(value)) return refuse(flag, "expected a number of seconds, got '" + value + "'");
        set_pet(rule.name, value);
        return {};
      case Action::kRanks: {
        static const std::regex re("[0-9]+(,[0-9]+)*");
        if (!std::regex_match(value, re)) return refuse(flag, "expected local ranks like 0,1, got '" + value + "'");
        set_pet(rule.name, value);
        return {};
      }
      case Action::kStartMethod:
        if (value != "spawn" && value != "fork" && value != "forkserver") {
          return refuse(flag, "expected spawn, fork or forkserver, got '" + value + "'");
        }
        set_pet(rule.name, value);
        return {};
      case Action::kShutdown: {
        auto n = to_long(value);
        if (!n || *n < 0) return refuse(flag, "expected a number of seconds, got '" + value + "'");
        set_pet(rule.name, value);
        return {};
      }
      case Action::kSignals: {
        // The names the launcher passes on (launcher-sidecar/src/cli/signal_names.cc): a typo fails here, not in
        // every pod.
        static const std::regex name(
            " *SIG(TERM|INT|HUP|QUIT|USR1|USR2|ALRM|PWR|XCPU|XFSZ|VTALRM|PROF|WINCH|URG|IO|SYS) *");
        std::stringstream items(value);
        int count = 0;
        for (std::string item; std::getline(items, item, ',');) {
          if (!std::regex_match(item, name)) {
            return refuse(flag, "expected signal names the launcher can pass on, like SIGTERM,SIGUSR1, got '" + value + "'");
          }
          ++count;
        }
        if (count == 0) return refuse(flag, "expected signal names like SIGTERM,SIGUSR1, got '" + value + "'");
        set_pet(rule.name, value);
        return {};
      }
      case Action::kFilters: {
        // ",," is a comma inside a word; an empty word would copy every line.
        std::string unescaped = std::regex_replace(value, std::regex(",,"), "");
        if (value.empty() || unescaped.front() == ',' || unescaped.back() == ',' ||
            unescaped.find(",,") != std::string::npos) {
          return refuse(flag, "expected words to match, comma-separated (,, for a comma), none empty, got '" + value + "'");
        }
        set_pet(rule.name, value);
        return {};
      }
      case Action::kNuma:
        if (value != "node" && value != "socket" && value != "exclusive" && value != "core-complex") {
          return refuse(flag, "expected node, socket, exclusive or core-complex, got '" + value + "'");
        }
        set_pet(rule.name, value);
        return {};
      case Action::kAccepted: return {};
      case Action::kEventHandler:
        if (value == "null") return {};
        cmd.notes.push_back("dropped " + flag + "=" + value + ": names a Python event handler, which the kubedist "
                            "launcher does not load: its events are the lines on its stderr and its /metrics");
        return {};
      case Action::kDrop:
        cmd.notes.push_back("dropped " + flag + (value == "1" && rule.boolean ? "" : "=" + value) + ": " + rule.why);
        return {};
      case Action::kRefuse: return refuse(flag, rule.why);
    }
    return {};
  }

  // The launcher's flags, up to the program; returns the index of the program word.
  Result<size_t> parse_flags(const std::vector<std::string>& w, size_t i) {
    for (; i < w.size(); ++i) {
      const std::string& word = w[i];
      if (word == "--") return i + 1;
      if (word.size() < 2 || word[0] != '-') return i;
      std::string name = word;
      std::optional<std::string> inline_value;
      if (auto eq = word.find('='); eq != std::string::npos && word.rfind("--", 0) == 0) {
        name = word.substr(0, eq);
        inline_value = word.substr(eq + 1);
      }
      std::string shown;
      const FlagRule* rule = find_rule(name, &shown);
      if (!rule && word.rfind("--", 0) != 0 && word.size() > 2) {  // -r3, -t3: argparse's attached short values
        rule = find_rule(word.substr(0, 2), &shown);
        if (rule && !rule->boolean) inline_value = word.substr(2);
        else rule = nullptr;
      }
      if (!rule) {
        return Error::invalid(name + ": not a torchrun flag" +
                              (cmd.form == TrainingCommand::Form::kLegacyLaunch ? " (torch.distributed.launch)" : "") +
                              "; check its spelling, or put the script before its own flags");
      }
      if (rule->boolean) {
        if (inline_value) return refuse(shown, "takes no value");
        if (auto r = apply(*rule, shown, "1"); !r) return r.error();
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= w.size()) return refuse(shown, "needs a value");
        inline_value = w[++i];
      }
      if (auto r = apply(*rule, shown, *inline_value); !r) return r.error();
    }
    return i;
  }

  Result<void> finish() {
    if (cmd.module && cmd.no_python) {
      return Error::invalid("--module and --no-python: use one of them, as torchrun refuses both");
    }
    if (standalone && cmd.max_nodes > 1) {
      return Error::invalid("--standalone and --nnodes=" + seen["nnodes"] + ": a standalone job has one node; drop one");
    }
    if (cmd.form == TrainingCommand::Form::kLegacyLaunch) set_pet("legacy-launch", "1");
    return {};
  }
};

}  // namespace

Result<std::string> rdzv_conf_value(const std::string& value, const FileReader& read_file) {
  const bool looks_like_file = value.find('=') == std::string::npos && !value.empty();
  if (!looks_like_file) return value;
  auto text = read_file(value);
  if (!text) return Error::invalid("expected KEY=VALUE[,...] or a JSON file, and there is no file '" + value + "'");
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::invalid(value + " is not a JSON object of rendezvous settings");
  std::string out;
  for (const auto& [k, v] : j.items()) {
    if (v.is_object() || v.is_array() || v.is_null()) {
      return Error::invalid(value + ": \"" + k + "\" must be a number, string or boolean");
    }
    if (!out.empty()) out += ",";
    out += k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

Result<std::optional<std::string>> check_user_env(const std::string& name) {
  static const std::vector<std::string> dropped = {"MASTER_ADDR",     "MASTER_PORT",     "NODE_RANK",
                                                   "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NODE_RANK",
                                                   "PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_RDZV_ID"};
  static const std::vector<std::string> refused = {"NNODES", "NPROC_PER_NODE", "PET_NNODES", "PET_NPROC_PER_NODE",
                                                   "PET_MAX_RESTARTS"};
  if (std::find(dropped.begin(), dropped.end(), name) != dropped.end()) {
    return std::optional<std::string>("dropped " + name + ": the operator sets it on every pod");
  }
  if (std::find(refused.begin(), refused.end(), name) != refused.end() || name.rfind("KUBEDIST_", 0) == 0) {
    return Error::invalid(name + ": set by the operator from the command line; use torchrun's flags (--nnodes, "
                                 "--nproc-per-node, --max-restarts) instead");
  }
  return std::optional<std::string>();
}

Result<TrainingCommand> parse_training_command(const std::vector<std::string>& words, const FileReader& read_file) {
  Parser p{TrainingCommand{}, read_file, {}, false, false};
  size_t i = 0;
  for (; i < words.size() && is_env_assignment(words[i]); ++i) {
    const auto eq = words[i].find('=');
    const std::string name = words[i].substr(0, eq);
    auto check = check_user_env(name);
    if (!check) return check.error();
    if (*check) p.cmd.notes.push_back(**check);
    else p.cmd.env.emplace_back(name, words[i].substr(eq + 1));
  }
  if (i == words.size()) {
    return Error::invalid("no command after `--`: give the torchrun command line, e.g. -- torchrun --nnodes=2 train.py");
  }
  const std::string& head = words[i];
  if (basename(head) == "torchrun") {
    p.cmd.form = TrainingCommand::Form::kTorchrun;
    ++i;
  } else if (is_python(head)) {
    ++i;
    // The interpreter's own options before -m or the script (-u, -O, -B; -W and -X take a value).
    while (i < words.size() && words[i].size() > 1 && words[i][0] == '-' && words[i] != "-m") {
      if (words[i] == "-c") return Error::invalid("python -c: put the code in a script and run the script");
      if (words[i] == "-W" || words[i] == "-X") ++i;
      ++i;
    }
    if (i < words.size() && words[i] == "-m") {
      if (i + 1 >= words.size()) return Error::invalid("python -m: needs a module");
      const std::string& mod = words[i + 1];
      if (mod == "torch.distributed.run") {
        p.cmd.form = TrainingCommand::Form::kRunModule;
        i += 2;
      } else if (mod == "torch.distributed.launch") {
        p.cmd.form = TrainingCommand::Form::kLegacyLaunch;
        i += 2;
      } else {  // python -m pkg.train args: one process of a module
        p.cmd.form = TrainingCommand::Form::kBareScript;
        p.cmd.module = true;
        p.cmd.program = mod;
        p.cmd.program_args.assign(words.begin() + static_cast<long>(i) + 2, words.end());
        return p.cmd;
      }
    } else {
      p.cmd.form = TrainingCommand::Form::kBareScript;
    }
  } else {
    p.cmd.form = TrainingCommand::Form::kBareScript;
    if (head.size() < 3 || head.substr(head.size() - 3) != ".py") p.cmd.no_python = true;
  }
  if (p.cmd.form != TrainingCommand::Form::kBareScript) {
    auto next = p.parse_flags(words, i);
    if (!next) return next.error();
    i = *next;
    if (auto r = p.finish(); !r) return r.error();
  }
  if (i >= words.size()) {
    return Error::invalid("no training script after the launcher's flags: add one, e.g. train.py");
  }
  p.cmd.program = words[i];
  p.cmd.program_args.assign(words.begin() + static_cast<long>(i) + 1, words.end());
  return p.cmd;
}

}  // namespace kubedist::kubectl
