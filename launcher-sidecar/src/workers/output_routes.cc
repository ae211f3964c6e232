#include "workers/output_routes.h"

#include "cli/log_line_prefix.h"

namespace kubedist::launcher {
namespace {

std::string parent_of(const std::string& dir) {
  const auto slash = dir.rfind('/');
  return slash == std::string::npos ? "." : dir.substr(0, slash);
}

}  // namespace

std::string filtered_file(const LaunchConfig& config, int stream, const std::string& attempt_dir) {
  const auto& filters = stream == 1 ? config.duplicate_stdout_filters : config.duplicate_stderr_filters;
  if (filters.empty()) return "";
  return attempt_dir + (stream == 1 ? "/filtered_stdout.log" : "/filtered_stderr.log");
}

StreamRoute route_for(const LaunchConfig& config, int local_rank, int rank, int stream, const std::string& rank_dir,
                      const std::string& hostname) {
  const int bit = stream == 1 ? 1 : 2;
  const bool redirect = (config.redirects.for_local_rank(local_rank) & bit) != 0;
  const bool tee = (config.tee.for_local_rank(local_rank) & bit) != 0;
  const bool hidden = config.local_ranks_filter && !config.local_ranks_filter->count(local_rank);
  StreamRoute r;
  r.capture = redirect || tee || hidden;
  if (redirect || tee) r.file = rank_dir + (stream == 1 ? "/stdout.log" : "/stderr.log");
  if (tee && !hidden) {
    r.console_fd = stream;  // redirect and tee both given: tee wins, as in torchrun
    // torchrun copies what it tails to the console, so only the lines of streams shown teed.
    r.filter_file = filtered_file(config, stream, parent_of(rank_dir));
    if (!r.filter_file.empty()) r.filters = stream == 1 ? config.duplicate_stdout_filters : config.duplicate_stderr_filters;
  }
  r.prefix = config.log_line_prefix_template.empty()
                 ? "[rank " + std::to_string(rank) + "]: "
                 : render_prefix(config.log_line_prefix_template, {config.role, local_rank, rank, hostname});
  return r;
}

}  // namespace kubedist::launcher
