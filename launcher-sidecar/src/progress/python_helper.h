// The Python helper the launcher ships (launcher-sidecar/python, built into the binary): written into a directory
// that every worker's PYTHONPATH ends with, so that `from kubedist import progress` works in any image without
// installing anything, and Lightning's and transformers' trainers report progress without a change to the script.
#pragma once

#include <string>

#include "util/result.h"
#include "cli/launch_config.h"

namespace kubedist::launcher {

// Writes the helper's files below DIR (kubedist/progress.py, sitecustomize.py...; DIR created if missing); DIR on
// success.
Result<std::string> install_python_helper(const std::string& dir);

// The environment that connects a worker to the progress channel (pure): KUBEDIST_PROGRESS (address), and when
// given, KUBEDIST_STACK_FILE (where its faulthandler writes stacks), KUBEDIST_CHECKPOINT_REQUEST (the file the
// launcher writes to ask kubedist.checkpoint for a checkpoint just in time) and python_dir appended to PYTHONPATH.
void add_progress_env(Env& env, const std::string& address, const std::string& stack_file,
                      const std::string& python_dir, const std::string& request_file = "");

}  // namespace kubedist::launcher
