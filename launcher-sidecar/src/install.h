// Install mode: `kubedist-launcher --install DIR` puts a copy of this very executable at DIR/kubedist-launcher.
// The operator's init container runs it in the launcher image (which has no shell and no cp) to hand the launcher
// to the trainer container through an emptyDir; with `--rdzv-secret-from FILE --rdzv-job UID` it also derives the
// job's rendezvous secret from the namespace's (contract/signed_line.h) into DIR, so the trainer never sees FILE.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace kubedist::launcher {

struct InstallRequest {
  std::string dir;
  std::string rdzv_secret_from;  // the namespace's rendezvous secret ("": derive none)
  std::string rdzv_job;          // the uid of the job whose secret to derive from it
};

// nullopt when the arguments do not ask for install mode (the first one is not --install[=DIR]); else the
// request, or a usage error (no directory, anything else after it, one of the two secret flags without the other).
std::optional<Result<InstallRequest>> install_request(const std::vector<std::string>& args);

// Copies `self` (the running executable: /proc/self/exe) to DIR/kubedist-launcher atomically: a temporary file in
// DIR, mode 0755, flushed, then renamed over any old copy. Returns the installed path; the error names what failed.
Result<std::string> install_self(const std::string& dir, const std::string& self = "/proc/self/exe");

// Derives the job's rendezvous secret from the namespace secret in `from` and writes it to DIR/rdzv-secret the
// same way (mode 0444: the trainer may run as any user; the emptyDir is the pod's alone). Returns its path.
Result<std::string> install_job_secret(const std::string& dir, const std::string& from, const std::string& job_uid);

}  // namespace kubedist::launcher
