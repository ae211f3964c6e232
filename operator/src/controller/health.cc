#include "controller/health.h"

namespace kubedist::controller {
namespace {

std::string seconds(std::chrono::milliseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

}  // namespace

std::string stuck_reason(const std::vector<const kube::InformerBase*>& informers, const Controller* workers,
                         Clock::TimePoint now, std::chrono::milliseconds reconcile_limit) {
  for (const auto* informer : informers) {
    if (auto late = informer->overdue(now)) {
      return "the watch loop of " + informer->path() + " is stuck: " + seconds(*late) + " overdue";
    }
  }
  if (workers != nullptr) {
    if (auto longest = workers->longest_in_flight(now); longest && longest->second > reconcile_limit) {
      return "a worker is stuck: the reconcile of " + longest->first + " has run " + seconds(longest->second) +
             " (limit " + seconds(reconcile_limit) + ")";
    }
  }
  return "";
}

}  // namespace kubedist::controller
