#include "controller/lease_fence.h"

namespace kubedist::controller {

void LeaseFence::renewed(Clock::TimePoint sent) {
  const auto next = (sent + renew_deadline_).time_since_epoch().count();
  auto current = until_.load();
  while (current < next && !until_.compare_exchange_weak(current, next)) {
  }
}

void LeaseFence::close() { until_.store(Clock::TimePoint::min().time_since_epoch().count()); }

bool LeaseFence::holds(Clock::TimePoint now) const { return now < until(); }

}  // namespace kubedist::controller
