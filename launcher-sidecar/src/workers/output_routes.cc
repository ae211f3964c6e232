#include "workers/output_routes.h"

namespace kubedist::launcher {

StreamRoute route_for(const LaunchConfig& config, int local_rank, int rank, int stream, const std::string& attempt_dir) {
  const int bit = stream == 1 ? 1 : 2;
  const bool redirect = (config.redirects.for_local_rank(local_rank) & bit) != 0;
  const bool tee = (config.tee.for_local_rank(local_rank) & bit) != 0;
  const bool hidden = config.local_ranks_filter && !config.local_ranks_filter->count(local_rank);
  StreamRoute r;
  r.capture = redirect || tee || hidden;
  if (redirect || tee) r.file = attempt_dir + (stream == 1 ? "/stdout.log" : "/stderr.log");
  if (tee && !hidden) r.console_fd = stream;  // redirect and tee both given: tee wins, as in torchrun
  r.prefix = "[rank " + std::to_string(rank) + "]: ";
  return r;
}

}  // namespace kubedist::launcher
