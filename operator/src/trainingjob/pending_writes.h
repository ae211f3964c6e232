// PendingWrites: holds back a Pending job's status writes while its pods keep making progress.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "trainingjob/types.h"

namespace kubedist::trainingjob {

// Each status write costs the API server, and a job whose pods are being created and scheduled reaches
// Running moments later: that deserves one write, not one per pod. A Pending-to-Pending change is held back
// while the job's pod counts keep moving (at most `stall` between moves, `cap` in all); a job that stalls
// gets its Pending status written, so `kubectl get tj` never hides a stuck job for long.
class PendingWrites {
 public:
  using Clock = std::chrono::steady_clock;
  explicit PendingWrites(std::chrono::milliseconds stall = std::chrono::seconds(10),
                         std::chrono::milliseconds cap = std::chrono::seconds(30))
      : stall_(stall), cap_(cap) {}

  // How long to hold back writing `after` over `before` for the job `key`; zero: write it now.
  std::chrono::milliseconds hold(const std::string& key, const Status& before, const Status& after,
                                 Clock::time_point now);
  void forget(const std::string& key) { held_.erase(key); }

 private:
  struct Held {
    Clock::time_point since;
    Clock::time_point progressed;
    int replicas = 0;
    int ready = 0;
  };
  std::chrono::milliseconds stall_;
  std::chrono::milliseconds cap_;
  std::map<std::string, Held> held_;
};

}  // namespace kubedist::trainingjob
