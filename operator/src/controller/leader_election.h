// Lease-based leader election (coordination.k8s.io/v1), so that only one operator replica reconciles.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

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
  LeaderElector(kube::Client& client, LeaderElectionOptions options) : client_(client), o_(std::move(options)) {}

  // One attempt to take or renew the lease; true when this replica holds it afterwards.
  bool try_acquire_or_renew();
  // Blocks until this replica leads (true) or stop is set (false).
  bool acquire(const std::atomic<bool>& stop);
  // Renews every lease/3 until stop is set (returns true) or renewal failed for a whole lease (false:
  // another replica may lead now, so this one must stop reconciling).
  bool hold(const std::atomic<bool>& stop);
  // Gives the lease up on a clean shutdown so a standby takes over at once.
  void release();

 private:
  std::string path() const;

  kube::Client& client_;
  const LeaderElectionOptions o_;
  // The other holder's record as last seen, and when (our clock) it last changed: client-go's rule, which
  // needs no clock agreement between replicas.
  std::string observed_record_;
  std::chrono::steady_clock::time_point observed_at_{};
};

}  // namespace kubedist::controller
