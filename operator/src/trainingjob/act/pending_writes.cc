#include "trainingjob/act/pending_writes.h"

#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {

std::chrono::milliseconds PendingWrites::hold(const std::string& key, const Status& before, const Status& after,
                                              Clock::time_point now, bool unschedulable) {
  // The scheduler's verdict on a gang (waits whole, or placed) is news a user waits for, never mere progress.
  const auto gang = [](const Status& s) {
    const Condition* c = find_condition(s, ConditionType::kGangScheduled);
    return c == nullptr ? std::string() : c->status + c->reason;
  };
  const bool progress_only = after.phase == JobPhase::kPending &&
                             (before.phase == JobPhase::kNone || before.phase == JobPhase::kPending) &&
                             after.restarts == before.restarts && gang(after) == gang(before) && !unschedulable;
  if (!progress_only) {
    held_.erase(key);
    return std::chrono::milliseconds(0);
  }
  auto it = held_.try_emplace(key, now).first;
  const auto until = it->second + cap_;
  if (until <= now) {
    held_.erase(it);
    return std::chrono::milliseconds(0);
  }
  return std::chrono::ceil<std::chrono::milliseconds>(until - now);
}

}  // namespace kubedist::trainingjob
