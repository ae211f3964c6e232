// PendingWrites: holds back a Pending job's status writes while its pods make their way through the cluster.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// Each status write costs the API server, and a job whose pods are being created, scheduled and started reaches
// Running moments later (tens of seconds on a busy cluster): that deserves one write, not one per pod. A
// Pending-to-Pending change is held back for at most `cap`, so `kubectl get tj` never hides a waiting job for
// long; a pod the scheduler could not place is news, written at once (as are an integration's verdict, a
// gang's for example, and restarts).
class PendingWrites {
 public:
  using Clock = std::chrono::steady_clock;
  explicit PendingWrites(std::chrono::milliseconds cap = std::chrono::seconds(30)) : cap_(cap) {}

  // How long to hold back writing `after` over `before` for the job `key`; zero: write it now. unschedulable:
  // some pod of the job is marked Unschedulable by the scheduler.
  std::chrono::milliseconds hold(const std::string& key, const Status& before, const Status& after,
                                 Clock::time_point now, bool unschedulable = false);
  void forget(const std::string& key) { held_.erase(key); }

 private:
  std::chrono::milliseconds cap_;
  std::map<std::string, Clock::time_point> held_;  // since when each job's write is held
};

}  // namespace kubedist::trainingjob
