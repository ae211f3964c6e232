// PythonInvocation: how the workers' command runs Python (the interpreter, the script or module), read from the
// configuration alone (pure). --legacy-launch puts --local-rank=N right after the script, as
// torch.distributed.launch did, also in the operator's form `--no-python -- python train.py ARGS`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cli/launch_config.h"

namespace kubedist::launcher {

struct PythonInvocation {
  std::string interpreter;  // "": the workers' program is no Python interpreter (--no-python PROGRAM)
  std::vector<std::string> options;  // the interpreter's own options before the script ("-u", "-X", "dev"...)
  std::string script;       // the script's path; "" with -m or -c
  bool module = false;      // -m MODULE
  // The index in config.command of the script's first argument (where --local-rank=N goes): 1 for SCRIPT ARGS
  // and for a program that is no interpreter; past the interpreter's options and the script (or -m MODULE) for
  // --no-python -- python [OPTIONS] SCRIPT ARGS.
  size_t args_at = 1;
};

PythonInvocation python_invocation(const LaunchConfig& config);

}  // namespace kubedist::launcher
