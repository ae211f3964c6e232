#include "cli/signal_names.h"

#include <signal.h>

#include <algorithm>
#include <utility>

namespace kubedist::launcher {
namespace {

// The catchable signals a launcher can sensibly pass on (Linux numbering). SIGCHLD, SIGKILL and SIGSTOP are left
// out on purpose (see the header); so are the job-control and fault signals, which stop or crash the launcher
// itself rather than ask it to stop its workers.
const std::vector<std::pair<const char*, int>>& known_signals() {
  static const std::vector<std::pair<const char*, int>> table = {
      {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT},
      {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGALRM", SIGALRM}, {"SIGPWR", SIGPWR},
      {"SIGXCPU", SIGXCPU}, {"SIGXFSZ", SIGXFSZ}, {"SIGVTALRM", SIGVTALRM}, {"SIGPROF", SIGPROF},
      {"SIGWINCH", SIGWINCH}, {"SIGURG", SIGURG}, {"SIGIO", SIGIO}, {"SIGSYS", SIGSYS},
  };
  return table;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

}  // namespace

Result<std::vector<int>> parse_signal_names(const std::string& list) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string name = trim(list.substr(start, comma - start));
    start = comma + 1;
    if (name.empty()) continue;
    if (name == "SIGKILL" || name == "SIGSTOP") return make_error(name + " cannot be caught");
    if (name == "SIGCHLD") return make_error("SIGCHLD is how the launcher sees its workers end; it cannot stop them");
    const auto& table = known_signals();
    auto it = std::find_if(table.begin(), table.end(), [&](const auto& kv) { return name == kv.first; });
    if (it == table.end()) return make_error("'" + name + "' is not a signal name like SIGTERM or SIGUSR1");
    if (std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
  }
  if (out.empty()) return make_error("no signal named");
  return out;
}

std::string signal_name(int signal) {
  for (const auto& [name, number] : known_signals())
    if (number == signal) return name;
  return "signal " + std::to_string(signal);
}

}  // namespace kubedist::launcher
