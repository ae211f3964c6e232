// Lease-based leader election (coordination.k8s.io/v1), so that only one operator replica reconciles.
#pragma once

#include <chrono>
#include <stop_token>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "controller/lease_fence.h"
#include "kube/client.h"

namespace kubedist::controller {

struct LeaderElectionOptions {
  std::string ns;
  std::string name;
  std::string identity;        // unique per replica (hostname + pid)
  int lease_seconds = 15;      // a leader silent this long is replaced
};

// How long after sending a renewal the leader may still act (2/3 of the lease): the last third is the margin for
// a write already sent to land, so its per-call deadline must stay below it (write_deadline()).
std::chrono::milliseconds renew_deadline(int lease_seconds);
// The per-call deadline for the leader's writes and for its lease calls: a third of the lease, 1 s at least.
std::chrono::seconds write_deadline(int lease_seconds);

class LeaderElector {
 public:
  // client: for the lease alone, with a per-call deadline of write_deadline() and no retries, so that a renewal
  // that hangs fails within the renew deadline.
  LeaderElector(kube::Client& client, LeaderElectionOptions options, const Clock& clock = steady_clock())
      : client_(client), o_(std::move(options)), clock_(clock), fence_(renew_deadline(o_.lease_seconds)) {}

  // One attempt to take or renew the lease; true when this replica holds it afterwards.
  bool try_acquire_or_renew();
  // Blocks until this replica leads (true) or stop is requested (false).
  bool acquire(std::stop_token stop);
  // Renews every lease/3 until stop is requested (returns true) or no renewal succeeded within the renew deadline
  // (false: another replica may lead soon, so this one must stop reconciling).
  bool hold(std::stop_token stop);
  // Gives the lease up on a clean shutdown so a standby takes over at once.
  void release();
  // Whether this replica may still write as the leader now: a renewal succeeded within the renew deadline. False
  // from the moment hold() gives up, even while in-flight reconciles still run.
  bool leading() const { return fence_.holds(clock_.now()); }

 private:
  std::string path() const;
  bool take_or_renew();

  kube::Client& client_;
  const LeaderElectionOptions o_;
  const Clock& clock_;
  // The other holder's record as last seen, and when (our clock) it last changed: client-go's rule, which
  // needs no clock agreement between replicas.
  std::string observed_record_;
  Clock::TimePoint observed_at_{};
  LeaseFence fence_;
};

}  // namespace kubedist::controller
