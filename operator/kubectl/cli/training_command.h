// A torchrun-style command line (torchrun, python -m torch.distributed.run, the legacy
// python -m torch.distributed.launch, or a bare script) read into what a TrainingJob needs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace kubedist::kubectl {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct TrainingCommand {
  enum class Form { kTorchrun, kRunModule, kLegacyLaunch, kBareScript };
  Form form = Form::kTorchrun;
  int min_nodes = 1;                 // --nnodes MIN:MAX (or N:N)
  int max_nodes = 1;
  std::string nproc_per_node = "1";  // torchrun's default; N, auto, gpu or cpu
  std::optional<int> max_restarts;   // unset: torchrun's default, 0
  bool module = false;               // -m: program is a module name
  bool no_python = false;            // --no-python: program is an executable
  std::string program;               // the script (as given), module or executable
  std::vector<std::string> program_args;
  EnvList launcher_env;  // launcher settings that travel as PET_* (the launcher reads them like flags)
  EnvList env;           // NAME=VALUE words before the launcher, for the trainer's environment
  std::vector<std::string> notes;  // one line per flag dropped on purpose (addresses, ports, ranks)
  bool tee_or_redirects = false;   // the user chose --tee/--redirects (else the plugin asks for [rank N] prefixes)
};

// Reads a file for --rdzv-conf FILE.json; nullopt when there is no such file.
using FileReader = std::function<std::optional<std::string>(const std::string&)>;

// Parses the words after `--`. Every torchrun 2.x flag is mapped, dropped with a note (addresses, ports, node
// rank: the operator's business) or refused with an error naming the flag and the fix.
Result<TrainingCommand> parse_training_command(const std::vector<std::string>& words, const FileReader& read_file);

// The variables the operator sets on every trainer: given with -e or NAME=VALUE they are dropped with a note
// (addresses, ports) or refused (sizes, which the command line says).
Result<std::optional<std::string>> check_user_env(const std::string& name);

// --rdzv-conf's value: KEY=VALUE[,...] as is, or a JSON file of an object turned into KEY=VALUE,...
Result<std::string> rdzv_conf_value(const std::string& value, const FileReader& read_file);

}  // namespace kubedist::kubectl
