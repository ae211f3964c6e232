// LeaseFence: until when a replica may still act as the leader, from its last renewal of the lease.
#pragma once

#include <atomic>
#include <chrono>

#include "common/clock.h"

namespace kubedist::controller {

// The other replicas see the lease expire lease_seconds after they saw our last renewal land, which is after we
// sent it; so a renewal sent at t lets us act until t + renew_deadline, with renew_deadline below lease_seconds by
// at least the longest a write of ours may take to land (its per-call deadline). Read by every writing thread.
class LeaseFence {
 public:
  explicit LeaseFence(std::chrono::milliseconds renew_deadline) : renew_deadline_(renew_deadline) {}

  // A renewal (or the acquisition) sent at `sent` succeeded. An older one than the last never moves the fence back.
  void renewed(Clock::TimePoint sent);
  // The lease is gone (released, or given up): nothing may be written from now on.
  void close();
  // Whether a write may still be sent at `now`.
  bool holds(Clock::TimePoint now) const;
  Clock::TimePoint until() const { return Clock::TimePoint(Clock::TimePoint::duration(until_.load())); }
  std::chrono::milliseconds renew_deadline() const { return renew_deadline_; }

 private:
  const std::chrono::milliseconds renew_deadline_;
  std::atomic<Clock::TimePoint::rep> until_{Clock::TimePoint::min().time_since_epoch().count()};
};

}  // namespace kubedist::controller
