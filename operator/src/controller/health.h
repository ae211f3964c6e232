// What /healthz answers: whether the controller is stuck, so that a liveness probe gets a stuck process restarted.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "controller/controller.h"
#include "kube/informer.h"

namespace kubedist::controller {

// Why the controller is stuck at now ("" when it is not): an informer whose watch loop is overdue (stuck in one
// list page, watch or wait longer than it may take: kube::WatchStream::overdue), or a reconcile that has run longer
// than reconcile_limit. A loop that keeps retrying an API server it cannot reach is not stuck: restarting the
// process would not help it. workers may be null (not started yet: a standby replica, caches still syncing).
std::string stuck_reason(const std::vector<const kube::InformerBase*>& informers, const Controller* workers,
                         Clock::TimePoint now, std::chrono::milliseconds reconcile_limit);

}  // namespace kubedist::controller
