// Install mode: `kubedist-launcher --install DIR` puts a copy of this very executable at DIR/kubedist-launcher.
// The operator's init container runs it in the launcher image (which has no shell and no cp) to hand the launcher
// to the trainer container through an emptyDir.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "result.h"

namespace kubedist::launcher {

// nullopt when the arguments do not ask for install mode (the first one is not --install[=DIR]); else the
// directory, or a usage error (no directory, or anything after it).
std::optional<Result<std::string>> install_request(const std::vector<std::string>& args);

// Copies `self` (the running executable: /proc/self/exe) to DIR/kubedist-launcher atomically: a temporary file in
// DIR, mode 0755, flushed, then renamed over any old copy. Returns the installed path; the error names what failed.
Result<std::string> install_self(const std::string& dir, const std::string& self = "/proc/self/exe");

}  // namespace kubedist::launcher
