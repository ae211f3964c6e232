// Output routes: where each worker stream goes for --redirects, --tee and --local-ranks-filter (pure).
#pragma once

#include <string>

#include "cli/launch_config.h"
#include "workers/worker_group.h"

namespace kubedist::launcher {

// stream: 1 (stdout) or 2 (stderr). attempt_dir: the directory for this restart's logs of this local rank.
// Redirected streams go only to attempt_dir/std{out,err}.log; teed ones also to the console as "[rank N]: ";
// ranks outside --local-ranks-filter are not shown on the console.
StreamRoute route_for(const LaunchConfig& config, int local_rank, int rank, int stream, const std::string& attempt_dir);

}  // namespace kubedist::launcher
