// Output routes: where each worker stream goes for --redirects, --tee and --local-ranks-filter (pure).
#pragma once

#include <string>

#include "cli/launch_config.h"
#include "workers/worker_group.h"

namespace kubedist::launcher {

// stream: 1 (stdout) or 2 (stderr). rank_dir: this restart's directory for this local rank's logs
// (ATTEMPT_DIR/LOCAL_RANK). Redirected streams go only to rank_dir/std{out,err}.log; teed ones also to the console,
// prefixed "[rank N]: " or as --log-line-prefix-template says (hostname: its ${hostname}); ranks outside
// --local-ranks-filter are not shown on the console. With --duplicate-*-filters, the lines of the streams shown
// teed that contain a filter are copied to ATTEMPT_DIR/filtered_std{out,err}.log, as torchrun does.
StreamRoute route_for(const LaunchConfig& config, int local_rank, int rank, int stream, const std::string& rank_dir,
                      const std::string& hostname);

// The file --duplicate-std{out,err}-filters copies lines to in an attempt's directory; "" when stream has no filters.
std::string filtered_file(const LaunchConfig& config, int stream, const std::string& attempt_dir);

}  // namespace kubedist::launcher
