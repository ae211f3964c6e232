// ProgressWrites: bounds the status writes a job's progress causes.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// A job whose workers report every step changes status.progress at every STATUS poll; each write costs the API
// server and every watcher of TrainingJobs. A write that changes only status.progress is held back until
// `interval` after the job's last status write (any write carries the latest progress along). The first progress
// a job shows, and a straggler named or cleared, are written at once. interval 0: no bound.
class ProgressWrites {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressWrites(std::chrono::milliseconds interval = std::chrono::seconds(30)) : interval_(interval) {}

  // How long to hold back writing `after` over `before` for the job `key`; zero: write it now.
  std::chrono::milliseconds hold(const std::string& key, const Status& before, const Status& after,
                                 Clock::time_point now) const;
  // A status write of the job succeeded at `now`.
  void written(const std::string& key, Clock::time_point now) { last_[key] = now; }
  void forget(const std::string& key) { last_.erase(key); }

 private:
  std::chrono::milliseconds interval_;
  std::map<std::string, Clock::time_point> last_;  // each job's last status write
};

// Whether `after` differs from `before` in nothing but progress figures (not the first progress, not the
// straggler).
bool progress_only(const Status& before, const Status& after);

}  // namespace kubedist::trainingjob
