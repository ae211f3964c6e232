#include "cli/python_invocation.h"

#include <algorithm>
#include <cctype>

namespace kubedist::launcher {
namespace {

// python, python3, python3.11, /usr/bin/python3: what torch.distributed.launch users put before the script.
bool names_an_interpreter(const std::string& program) {
  const std::string base = program.substr(program.rfind('/') == std::string::npos ? 0 : program.rfind('/') + 1);
  if (base.rfind("python", 0) != 0) return false;
  return std::all_of(base.begin() + 6, base.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

// CPython's options that take a value as the next argument (or attached: -Wignore).
bool takes_value(const std::string& option) { return option == "-W" || option == "-X"; }

}  // namespace

PythonInvocation python_invocation(const LaunchConfig& config) {
  PythonInvocation p;
  const auto& cmd = config.command;
  if (cmd.empty()) return p;
  if (!config.no_python) {
    p.interpreter = config.python;
    p.options = {"-u"};
    p.module = config.module;
    if (!config.module) p.script = cmd[0];
    return p;
  }
  if (!names_an_interpreter(cmd[0])) return p;
  p.interpreter = cmd[0];
  size_t i = 1;
  while (i < cmd.size()) {
    const std::string& a = cmd[i];
    if (a == "-m" || a == "-c") {
      p.module = a == "-m";
      p.args_at = std::min(i + 2, cmd.size());
      return p;
    }
    if (a.size() > 2 && (a.rfind("-m", 0) == 0 || a.rfind("-c", 0) == 0)) {  // -mpkg.train, -cCODE
      p.module = a[1] == 'm';
      p.args_at = i + 1;
      return p;
    }
    if (a == "-" || a.empty() || a[0] != '-') {
      if (a != "-") p.script = a;
      p.args_at = i + 1;
      return p;
    }
    const size_t next = std::min(i + (takes_value(a) ? 2 : 1), cmd.size());
    p.options.insert(p.options.end(), cmd.begin() + static_cast<long>(i), cmd.begin() + static_cast<long>(next));
    i = next;
  }
  p.args_at = cmd.size();
  return p;
}

}  // namespace kubedist::launcher
