// Following a job: every pod's log lines as they come (one stream per container), its phase, restarts and
// progress as they change, until it ends or the user interrupts.
#pragma once

#include <atomic>
#include <iosfwd>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "kubectl/act/cluster.h"

namespace kubedist::kubectl {

struct FollowOptions {
  std::optional<int> node;   // only node K's pod
  bool report_status = true; // phase, restarts and progress lines between the logs
};

struct FollowResult {
  nlohmann::json job;        // as last read: Succeeded or Failed unless interrupted
  bool interrupted = false;
  int max_world_size = 0;    // the largest status.worldSize seen (a finished job's reads 0)
};

// Returns when the job has ended and its pods' logs have been read to their end, or soon after interrupted
// becomes true.
Result<FollowResult> follow_job(Cluster& cluster, const std::string& job, const FollowOptions& options,
                                const std::atomic<bool>& interrupted, std::ostream& out);

// Prints every pod's logs once (no follow), node by node.
Result<void> print_logs(Cluster& cluster, const std::string& job, std::optional<int> node, std::ostream& out);

}  // namespace kubedist::kubectl
