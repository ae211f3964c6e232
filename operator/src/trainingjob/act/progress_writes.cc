#include "trainingjob/act/progress_writes.h"

namespace kubedist::trainingjob {

bool progress_only(const Status& before, const Status& after) {
  if (!before.progress || !after.progress || before.progress == after.progress) return false;
  if (before.progress->slowest_rank.has_value() != after.progress->slowest_rank.has_value() ||
      (before.progress->slowest_rank && before.progress->slowest_rank->rank != after.progress->slowest_rank->rank))
    return false;
  Status a = before, b = after;
  a.progress.reset();
  b.progress.reset();
  return a == b;
}

std::chrono::milliseconds ProgressWrites::hold(const std::string& key, const Status& before, const Status& after,
                                               Clock::time_point now) const {
  if (interval_.count() <= 0 || !progress_only(before, after)) return std::chrono::milliseconds(0);
  const auto it = last_.find(key);
  if (it == last_.end()) return std::chrono::milliseconds(0);  // an operator (re)started: nothing to space from
  const auto until = it->second + interval_;
  return until <= now ? std::chrono::milliseconds(0) : std::chrono::ceil<std::chrono::milliseconds>(until - now);
}

}  // namespace kubedist::trainingjob
