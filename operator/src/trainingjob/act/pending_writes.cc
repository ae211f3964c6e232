#include "trainingjob/act/pending_writes.h"

#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {

std::chrono::milliseconds PendingWrites::hold(const std::string& key, const Status& before, const Status& after,
                                              Clock::time_point now, bool unschedulable) {
  // An integration's verdict (a gang that waits whole, or was placed) and the API server's refusal of the pods are
  // news a user waits for, never mere progress.
  const auto verdicts = [](const Status& s) {
    std::string all;
    for (const auto& c : s.conditions) {
      if (!is_core(c.type) || c.type == ConditionType::kPodsRefused) {
        all += to_string(c.type) + "=" + c.status + "/" + c.reason + ";";
      }
    }
    return all;
  };
  const bool progress_only = after.phase == JobPhase::kPending &&
                             (before.phase == JobPhase::kNone || before.phase == JobPhase::kPending) &&
                             after.restarts == before.restarts && verdicts(after) == verdicts(before) &&
                             !unschedulable;
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
