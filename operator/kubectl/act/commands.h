// `logs`, `status`, `list` and `delete`: each returns the process's exit code.
#pragma once

#include <atomic>
#include <iosfwd>

#include "kubectl/cli/options.h"

namespace kubedist::kubectl {

int logs_command(const JobOptions& options, const std::atomic<bool>& interrupted, std::ostream& out,
                 std::ostream& err);
int status_command(const JobOptions& options, std::ostream& out, std::ostream& err);
int list_command(const JobOptions& options, std::ostream& out, std::ostream& err);
// Deletes the job (its pods, Service and owned ConfigMaps go with it) and the ConfigMaps a --dry-run apply left
// unowned.
int delete_command(const JobOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kubedist::kubectl
