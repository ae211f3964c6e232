// Lease-based leader election (coordination.k8s.io/v1), so that only one operator replica reconciles.
#pragma once

#include <chrono>
#include <stop_token>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "kube/client.h"

namespace kubedist::controller {

struct LeaderElectionOptions {
  std::string ns;
  std::string name;
  std::string identity;        // unique per replica (hostname + pid)
  int lease_seconds = 15;      // a leader silent this long is replaced
};

class LeaderElector {
 public:
  LeaderElector(kube::Client& client, LeaderElectionOptions options, const Clock& clock = steady_clock())
      : client_(client), o_(std::move(options)), clock_(clock) {}

  // One attempt to take or renew the lease; true when this replica holds it afterwards.
  bool try_acquire_or_renew();
  // Blocks until this replica leads (true) or stop is requested (false).
  bool acquire(std::stop_token stop);
  // Renews every lease/3 until stop is requested (returns true) or renewal failed for a whole lease (false:
  // another replica may lead now, so this one must stop reconciling).
  bool hold(std::stop_token stop);
  // Gives the lease up on a clean shutdown so a standby takes over at once.
  void release();

 private:
  std::string path() const;

  kube::Client& client_;
  const LeaderElectionOptions o_;
  const Clock& clock_;
  // The other holder's record as last seen, and when (our clock) it last changed: client-go's rule, which
  // needs no clock agreement between replicas.
  std::string observed_record_;
  Clock::TimePoint observed_at_{};
};

}  // namespace kubedist::controller
