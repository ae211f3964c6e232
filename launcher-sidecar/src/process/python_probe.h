// Asks the workers' Python interpreter for its sys.path, without importing anything but sys.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cli/launch_config.h"
#include "cli/python_invocation.h"
#include "util/result.h"

namespace kubedist::launcher {

// Runs `INTERPRETER OPTIONS -c ...` with env (the workers' PYTHONPATH and all) and returns its sys.path as the
// workers would see it: an empty first entry (the script's directory for a script, the current directory for -m)
// is replaced by that directory. The error says why not (not found, exited non-zero, no answer within timeout).
Result<std::vector<std::string>> python_sys_path(const PythonInvocation& python, const Env& env,
                                                 std::chrono::milliseconds timeout);

}  // namespace kubedist::launcher
