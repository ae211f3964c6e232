// What `run` decides before touching the cluster: the script found, the working directory archived, the objects
// rendered. Reads the local files only.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "kubectl/cli/options.h"
#include "kubectl/render/job.h"

namespace kubedist::kubectl {

// What `run` decided before touching the cluster: the rendered objects and how the code travels.
struct RunPlan {
  JobInputs inputs;
  RenderedJob rendered;
  std::string workdir;   // the local directory shipped, "" when nothing is
  size_t files = 0;      // files shipped
  size_t bytes = 0;      // the archive's size
  std::vector<std::string> shipment;  // what is shipped and what is left home, to say before creating anything
  std::vector<std::string> notes;
};

// Reads the command line, finds the script, archives the working directory and renders the objects. cwd is the
// directory relative paths are read from; ns the namespace ("" leaves it to kubectl apply).
Result<RunPlan> plan_run(const RunOptions& options, const std::string& cwd, const std::string& ns);

// A job name from the program's name and a random suffix: "train-x7k2p" for train.py.
std::string default_job_name(const std::string& program, const std::string& suffix);

}  // namespace kubedist::kubectl
