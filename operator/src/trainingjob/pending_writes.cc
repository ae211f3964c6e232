#include "trainingjob/pending_writes.h"

#include <algorithm>

#include "trainingjob/status.h"

namespace kubedist::trainingjob {

std::chrono::milliseconds PendingWrites::hold(const std::string& key, const Status& before, const Status& after,
                                              Clock::time_point now) {
  // The scheduler's verdict on a gang (waits whole, or placed) is news a user waits for, never mere progress.
  const auto gang = [](const Status& s) {
    const Condition* c = find_condition(s, ConditionType::kGangScheduled);
    return c == nullptr ? std::string() : c->status + c->reason;
  };
  const bool progress_only = after.phase == JobPhase::kPending &&
                             (before.phase == JobPhase::kNone || before.phase == JobPhase::kPending) &&
                             after.restarts == before.restarts && gang(after) == gang(before);
  if (!progress_only) {
    held_.erase(key);
    return std::chrono::milliseconds(0);
  }
  auto [it, inserted] = held_.try_emplace(key, Held{now, now, after.replicas, after.ready_replicas});
  Held& h = it->second;
  if (h.replicas != after.replicas || h.ready != after.ready_replicas) {
    h.progressed = now;
    h.replicas = after.replicas;
    h.ready = after.ready_replicas;
  }
  const auto until = std::min(h.progressed + stall_, h.since + cap_);
  if (until <= now) {
    held_.erase(it);
    return std::chrono::milliseconds(0);
  }
  return std::chrono::ceil<std::chrono::milliseconds>(until - now);
}

}  // namespace kubedist::trainingjob
