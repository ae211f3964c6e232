#include "cli/local_rank_style.h"

#include <cctype>
#include <sstream>

namespace kubedist::launcher {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string fallback(const std::string& why) {
  return "--local-rank-style=auto: " + why +
         ": passing --local-rank=N, torch 2.x's spelling (--local-rank-style=underscore for a torch 1.x script)";
}

}  // namespace

std::optional<std::string> torch_version_declared(const std::string& version_py) {
  std::istringstream lines(version_py);
  std::string line;
  while (std::getline(lines, line)) {
    line = trim(line);
    if (line.rfind("__version__", 0) != 0) continue;
    std::string rest = trim(line.substr(11));
    if (rest.rfind(':', 0) == 0) {  // `__version__: str = '2.4.0'`
      auto eq = rest.find('=');
      if (eq == std::string::npos) continue;
      rest = trim(rest.substr(eq));
    }
    if (rest.empty() || rest[0] != '=') continue;
    rest = trim(rest.substr(1));
    if (rest.size() < 2 || (rest[0] != '\'' && rest[0] != '"')) continue;
    const size_t close = rest.find(rest[0], 1);
    if (close == std::string::npos || close == 1) continue;
    return rest.substr(1, close - 1);
  }
  return std::nullopt;
}

std::string local_rank_arg_for_torch(const std::string& version) {
  // torch.distributed.launch passed --local_rank from 0.4 through 1.13, --local-rank from 2.0 on.
  int major = 0;
  size_t digits = 0;
  while (digits < version.size() && digits < 4 && std::isdigit(static_cast<unsigned char>(version[digits])))
    major = major * 10 + (version[digits++] - '0');
  return digits > 0 && major < 2 ? "--local_rank" : "--local-rank";
}

int WorkersTorch::major() const {
  if (!version) return 0;
  return local_rank_arg_for_torch(*version) == "--local_rank" ? 1 : 2;
}

WorkersTorch find_workers_torch(const std::string& interpreter, const Result<std::vector<std::string>>& sys_path,
                                const std::function<std::optional<std::string>(const std::string&)>& read_file) {
  WorkersTorch t;
  if (interpreter.empty()) {
    t.unknown_because = "the workers' program is no Python interpreter";
    return t;
  }
  if (!sys_path) {
    t.unknown_because = "cannot read " + interpreter + "'s sys.path (" + sys_path.error() + ")";
    return t;
  }
  for (const auto& dir : *sys_path) {
    t.path = (dir.empty() ? "." : dir) + "/torch/version.py";
    auto text = read_file(t.path);
    if (!text) continue;
    t.version = torch_version_declared(*text);
    if (!t.version) t.unknown_because = t.path + " declares no __version__";
    return t;
  }
  t.path.clear();
  t.unknown_because = "no torch/version.py on " + interpreter + "'s sys.path";
  return t;
}

LocalRankChoice choose_local_rank_arg(const WorkersTorch& torch) {
  if (!torch.version) return {"--local-rank", fallback(torch.unknown_because)};
  const std::string arg = local_rank_arg_for_torch(*torch.version);
  return {arg, "--local-rank-style=auto: torch " + *torch.version + " (" + torch.path + "): passing " + arg + "=N"};
}

}  // namespace kubedist::launcher
