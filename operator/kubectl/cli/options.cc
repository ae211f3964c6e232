#include "kubectl/cli/options.h"

#include <regex>
#include <sstream>

#include "contract/pod_env.h"
#include "trainingjob/api/names.h"

namespace kubedist::kubectl {

using trainingjob::is_label_key;
using trainingjob::is_label_value;
namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// Splits "--flag=value" into its parts; value is nullopt without '='.
std::pair<std::string, std::optional<std::string>> split_flag(const std::string& word) {
  const auto eq = word.find('=');
  if (!starts_with(word, "--") || eq == std::string::npos) return {word, std::nullopt};
  return {word.substr(0, eq), word.substr(eq + 1)};
}

struct Words {
  const std::vector<std::string>& args;
  size_t i = 0;

  // The value of the flag at args[i]: inline (--flag=v) or the next word.
  Result<std::string> value(const std::string& flag, const std::optional<std::string>& inline_value) {
    if (inline_value) return *inline_value;
    if (i + 1 >= args.size() || (starts_with(args[i + 1], "-") && args[i + 1] != "-")) {
      return Error::invalid(flag + " needs a value (" + flag + " VALUE)");
    }
    return args[++i];
  }
};

Result<int> positive_int(const std::string& flag, const std::string& v, int max) {
  static const std::regex re("[0-9]{1,6}");
  if (!std::regex_match(v, re) || std::stoi(v) > max) {
    return Error::invalid(flag + ": expected a whole number from 0 to " + std::to_string(max) + ", got '" + v + "'");
  }
  return std::stoi(v);
}

// Options every subcommand takes; true when args[w.i] was one of them.
Result<bool> cluster_option(Words& w, const std::string& flag, const std::optional<std::string>& v,
                            ClusterOptions& c) {
  std::string* field = nullptr;
  if (flag == "-n" || flag == "--namespace") field = &c.ns;
  else if (flag == "--kubeconfig") field = &c.kubeconfig;
  else if (flag == "--context") field = &c.context;
  if (!field) return false;
  auto value = w.value(flag, v);
  if (!value) return value.error();
  *field = *value;
  return true;
}

Result<void> parse_run(const std::vector<std::string>& args, size_t start, RunOptions& o) {
  Words w{args, start};
  for (; w.i < args.size(); ++w.i) {
    const std::string& word = args[w.i];
    if (word == "--") {
      o.command.assign(args.begin() + static_cast<long>(w.i) + 1, args.end());
      break;
    }
    if (!starts_with(word, "-")) {  // the command starts without `--`
      o.command.assign(args.begin() + static_cast<long>(w.i), args.end());
      break;
    }
    auto [flag, inline_value] = split_flag(word);
    auto common = cluster_option(w, flag, inline_value, o.cluster);
    if (!common) return common.error();
    if (*common) continue;
    auto take = [&](std::string& field) -> Result<void> {
      auto v = w.value(flag, inline_value);
      if (!v) return v.error();
      field = *v;
      return {};
    };
    auto boolean = [&](bool& field) -> Result<void> {
      if (inline_value) return Error::invalid(flag + " takes no value");
      field = true;
      return {};
    };
    Result<void> r;
    if (flag == "--image") r = take(o.image);
    else if (flag == "--name") r = take(o.name);
    else if (flag == "--queue") r = take(o.queue);
    else if (flag == "--topology-key") {
      r = take(o.topology_key);
      if (r && !is_label_key(o.topology_key)) {
        return Error::invalid(flag + ": expected a node label's key (e.g. topology.kubernetes.io/zone), got '" +
                              o.topology_key + "'");
      }
    }
    else if (flag == "--workdir") r = take(o.workdir);
    else if (flag == "--pip-index-url") r = take(o.pip_index_url);
    else if (flag == "--cpu") r = take(o.cpu);
    else if (flag == "--memory") r = take(o.memory);
    else if (flag == "-o" || flag == "--output") r = take(o.output);
    else if (flag == "--gang") r = boolean(o.gang);
    else if (flag == "--dry-run") r = boolean(o.dry_run);
    else if (flag == "--detach" || flag == "-d") r = boolean(o.detach);
    else if (flag == "--no-workdir") r = boolean(o.no_workdir);
    else if (flag == "--gpus-per-node") {
      std::string v;
      r = take(v);
      if (r) {
        auto n = positive_int(flag, v, 1024);
        if (!n) return n.error();
        o.gpus_per_node = *n;
      }
    } else if (flag == "--spares") {
      std::string v;
      r = take(v);
      if (r) {
        auto n = positive_int(flag, v, contract::kMaxSpares);
        if (!n) return n.error();
        o.spares = *n;
      }
    } else if (flag == "--pip") {
      std::string v;
      r = take(v);
      if (r) {  // --pip "a b", --pip a,b and repeated --pip all add packages
        std::string item;
        for (char c : v + " ") {
          if (c == ' ' || c == ',') {
            if (!item.empty()) o.pip.push_back(item);
            item.clear();
          } else {
            item += c;
          }
        }
      }
    } else if (flag == "--node-selector") {
      std::string v;
      r = take(v);
      if (r) {  // repeated, or comma-separated as kubectl's selectors: KEY=VALUE[,KEY=VALUE]
        std::string item;
        std::istringstream in(v);
        while (std::getline(in, item, ',')) {
          const auto eq = item.find('=');
          const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
          if (eq == std::string::npos || !is_label_key(key) || !is_label_value(value)) {
            return Error::invalid(flag + ": expected KEY=VALUE with a node label's key and value (e.g. "
                                  "kubernetes.io/hostname=node-a), got '" + item + "'");
          }
          o.node_selector.emplace_back(key, value);
        }
      }
    } else if (flag == "-e" || flag == "--env") {
      std::string v;
      r = take(v);
      if (r) {
        static const std::regex re("([A-Za-z_][A-Za-z0-9_]*)=(.*)");
        std::smatch m;
        if (!std::regex_match(v, m, re)) return Error::invalid(flag + ": expected NAME=VALUE, got '" + v + "'");
        o.env.emplace_back(m[1], m[2]);
      }
    } else {
      return Error::invalid("unknown option " + flag + " (kubectl kubedist run --help); torchrun's flags go after `--`");
    }
    if (!r) return r.error();
  }
  if (o.command.empty()) {
    return Error::invalid("no command: kubectl kubedist run [OPTIONS] -- torchrun --nproc-per-node=2 train.py");
  }
  if (!o.output.empty() && o.output != "yaml" && o.output != "json") {
    return Error::invalid("-o " + o.output + ": expected yaml or json");
  }
  if (!o.output.empty() && !o.dry_run) return Error::invalid("-o " + o.output + " goes with --dry-run");
  if (o.dry_run && o.output.empty()) o.output = "yaml";
  if (!o.cpu.empty() && !is_quantity(o.cpu)) return Error::invalid("--cpu " + o.cpu + ": expected a quantity like 500m or 2");
  if (!o.memory.empty() && !is_quantity(o.memory)) {
    return Error::invalid("--memory " + o.memory + ": expected a quantity like 512Mi or 4Gi");
  }
  if (!o.pip_index_url.empty() && !starts_with(o.pip_index_url, "http://") && !starts_with(o.pip_index_url, "https://")) {
    return Error::invalid("--pip-index-url " + o.pip_index_url + ": expected an http:// or https:// URL");
  }
  if (!o.pip_index_url.empty() && o.pip.empty()) return Error::invalid("--pip-index-url goes with --pip PACKAGE");
  if (o.no_workdir && !o.workdir.empty()) return Error::invalid("--no-workdir and --workdir: use one of them");
  if (o.no_workdir && o.image.empty()) {
    return Error::invalid("--no-workdir runs the code in the image: name the image with --image");
  }
  return {};
}

Result<void> parse_job(const std::vector<std::string>& args, size_t start, const std::string& sub, JobOptions& o) {
  Words w{args, start};
  for (; w.i < args.size(); ++w.i) {
    const std::string& word = args[w.i];
    auto [flag, inline_value] = split_flag(word);
    if (starts_with(word, "-") && word != "-") {
      auto common = cluster_option(w, flag, inline_value, o.cluster);
      if (!common) return common.error();
      if (*common) continue;
      if (sub == "logs" && (flag == "-f" || flag == "--follow")) {
        o.follow = true;
        continue;
      }
      if (sub == "logs" && flag == "--node") {
        auto v = w.value(flag, inline_value);
        if (!v) return v.error();
        auto n = positive_int(flag, *v, 9999);
        if (!n) return n.error();
        o.node = *n;
        continue;
      }
      return Error::invalid("unknown option " + flag + " for " + sub + " (kubectl kubedist --help)");
    }
    if (sub == "list" || !o.job.empty()) return Error::invalid(sub + ": unexpected argument '" + word + "'");
    o.job = word;
  }
  if (sub != "list" && o.job.empty()) return Error::invalid(sub + " needs a job name: kubectl kubedist " + sub + " JOB");
  return {};
}

}  // namespace

bool is_quantity(const std::string& s) {
  static const std::regex re("[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?");
  return std::regex_match(s, re);
}

Result<void> check_job_name(const std::string& name, int max_nodes) {
  static const std::regex re("[a-z]([-a-z0-9]*[a-z0-9])?");
  const std::string longest = trainingjob::pod_name(name, std::max(0, max_nodes - 1));
  if (!std::regex_match(name, re) || longest.size() > 63) {
    return Error::invalid("--name " + name + ": not a DNS label; use lower-case letters, digits and '-', starting with "
                          "a letter, short enough that pod " + longest + " fits in 63 characters");
  }
  return {};
}

Result<Invocation> parse_invocation(const std::vector<std::string>& args) {
  Invocation inv;
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    inv.subcommand = "help";
    return inv;
  }
  inv.subcommand = args[0];
  if (inv.subcommand == "run") {
    if (args.size() > 1 && (args[1] == "--help" || args[1] == "-h")) {
      inv.subcommand = "help";
      return inv;
    }
    if (auto r = parse_run(args, 1, inv.run); !r) return r.error();
    return inv;
  }
  if (inv.subcommand == "logs" || inv.subcommand == "status" || inv.subcommand == "list" ||
      inv.subcommand == "delete") {
    if (auto r = parse_job(args, 1, inv.subcommand, inv.job); !r) return r.error();
    return inv;
  }
  return Error::invalid("unknown subcommand '" + inv.subcommand + "': use run, logs, status, list or delete");
}

std::string usage() {
  return R"(kubectl kubedist: run a torchrun command line on Kubernetes as a TrainingJob.

  kubectl kubedist run [OPTIONS] -- torchrun [TORCHRUN FLAGS] train.py [ARGS]
  kubectl kubedist run [OPTIONS] -- python -m torch.distributed.run|launch [FLAGS] train.py [ARGS]
  kubectl kubedist run [OPTIONS] -- train.py [ARGS]
  kubectl kubedist logs JOB [--node K] [-f]
  kubectl kubedist status JOB
  kubectl kubedist list
  kubectl kubedist delete JOB

run options:
  --image IMAGE          the trainer image (default: $KUBEDIST_IMAGE, else the local cluster's CPU example image)
  --gpus-per-node N      nvidia.com/gpu per pod           --cpu Q / --memory Q   requests (memory also the limit)
  --queue NAME           a Kueue LocalQueue               --gang                 gang-schedule the pods
  --node-selector KEY=VALUE  the pods' nodes carry this label (repeatable, or KEY=VALUE,KEY=VALUE)
  --spares N             N spare pods that take a lost node's place (spec.spares; 2 or more nodes)
  --topology-key KEY     the pods prefer one domain of this node label, a rack or zone (spec.placement)
  --name NAME            the job's name (default: the script's name and a random suffix)
  --workdir DIR          the directory shipped as the workers' working directory (default: the script's);
                         .kubedistignore and .gitignore are respected; at most 6 MiB (else build an image, --image)
  --no-workdir           ship nothing: the program is in the image
  --pip PKG              install packages before the launcher starts (repeatable); --pip-index-url URL
  -e NAME=VALUE          an environment variable of the workers (repeatable)
  --dry-run [-o yaml|json]  print the TrainingJob and its ConfigMaps instead of creating them
  --detach               create the job and return; else follow its logs and exit with its result
common options: -n/--namespace NS, --kubeconfig FILE, --context NAME
)";
}

}  // namespace kubedist::kubectl
