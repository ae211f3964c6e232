// `kubectl kubedist run`: from a torchrun command line to a created TrainingJob (or its YAML), then following it.
#pragma once

#include <atomic>
#include <iosfwd>
#include <string>

#include "common/result.h"
#include "kubectl/cli/options.h"
#include "kubectl/render/plan.h"

namespace kubedist::kubectl {

// The whole subcommand; returns the process's exit code (0 Succeeded, the failing worker's code on Failed, 1 on
// an error before or while creating, 130 when detached by Ctrl-C).
int run_command(const RunOptions& options, const std::atomic<bool>& interrupted, std::ostream& out,
                std::ostream& err);

}  // namespace kubedist::kubectl
