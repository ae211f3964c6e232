#include "common/backoff.h"

#include <algorithm>

namespace kubedist {

std::chrono::milliseconds BackoffPolicy::delay(int failures) const {
  // Doubling past max is pointless and 2^n overflows: stop shifting once max is reached.
  std::chrono::milliseconds d = initial;
  for (int i = 0; i < failures && d < max && d.count() > 0; ++i) d *= 2;
  return std::min(d, max);
}

}  // namespace kubedist
