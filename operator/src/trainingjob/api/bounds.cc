#include "trainingjob/api/bounds.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kubedist::trainingjob {

size_t json_bytes_up_to(const nlohmann::json& v, size_t limit) {
  size_t total = 0;
  std::vector<const nlohmann::json*> todo{&v};
  while (!todo.empty() && total <= limit) {
    const nlohmann::json* j = todo.back();
    todo.pop_back();
    if (j->is_object()) {
      total += 2;
      for (auto it = j->begin(); it != j->end() && total <= limit; ++it) {
        total += it.key().size() + 4;  // "key":,
        todo.push_back(&it.value());
      }
    } else if (j->is_array()) {
      total += 2;
      for (const auto& e : *j) {
        total += 1;
        todo.push_back(&e);
      }
    } else if (j->is_string()) {
      total += j->get_ref<const std::string&>().size() + 2;
    } else {
      total += 1;
    }
  }
  return std::min(total, limit + 1);
}

int64_t bounded(int64_t v, int64_t lo, int64_t hi) { return std::clamp(v, lo, hi); }

double bounded(double v, double hi) { return std::isnan(v) ? 0 : std::clamp(v, 0.0, hi); }

int restart_count(std::optional<int64_t> n) { return static_cast<int>(bounded(n.value_or(0), 0, kMaxRestarts)); }

contract::StatusProgress bounded(contract::StatusProgress p) {
  p.step = bounded(p.step, 0, kMaxCount);
  for (int64_t* optional : {&p.total_steps, &p.epoch, &p.samples}) *optional = bounded(*optional, -1, kMaxCount);
  for (int64_t* ms : {&p.step_age_ms, &p.up_ms, &p.busy_ms, &p.lost_ms, &p.hang_age_ms})
    *ms = bounded(*ms, 0, kMaxDurationMs);
  p.steps_per_second = bounded(p.steps_per_second, kMaxRate);
  p.slow_ratio = bounded(p.slow_ratio, kMaxRate);
  p.slow_step_seconds = bounded(p.slow_step_seconds, kMaxRate);
  return p;
}

}  // namespace kubedist::trainingjob
