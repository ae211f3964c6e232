// The --local-rank spelling that --legacy-launch passes under --local-rank-style=auto: the one of the torch that the
// workers' interpreter would import, read from its torch/version.py without importing torch (pure; the caller
// reads sys.path and files).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace kubedist::launcher {

// The version a torch/version.py declares (`__version__ = '1.13.0a0'`), or nullopt.
std::optional<std::string> torch_version_declared(const std::string& version_py);

// "--local_rank" for torch 1.x (what its torch.distributed.launch passed), else "--local-rank" (2.0 on).
std::string local_rank_arg_for_torch(const std::string& version);

// The torch the workers' interpreter would import: its version, where it was found, or why none is known.
struct WorkersTorch {
  std::optional<std::string> version;  // "2.15.0", "1.13.0a0+gitunknown"
  std::string path;                    // its torch/version.py
  std::string unknown_because;         // when version is nullopt
  // 1 for torch 1.x, 2 for 2.x and later, 0 when unknown (the launcher then gives torch 2.x's environment).
  int major() const;
};

// Looks for the first torch/version.py on `sys_path` (read_file gives a file's text, nullopt when it has none) of
// `interpreter`, as `import torch` would find it; sys_path is an error when the interpreter could not say (it names
// why), and `interpreter` is "" when the workers' program is none.
WorkersTorch find_workers_torch(const std::string& interpreter, const Result<std::vector<std::string>>& sys_path,
                                const std::function<std::optional<std::string>(const std::string&)>& read_file);

struct LocalRankChoice {
  std::string arg;   // "--local-rank" or "--local_rank"
  std::string line;  // what to tell the user: which torch decided it, or why the 2.x spelling is a fallback
};

// The spelling of the workers' torch (find_workers_torch); without one, the 2.x spelling.
LocalRankChoice choose_local_rank_arg(const WorkersTorch& torch);

}  // namespace kubedist::launcher
