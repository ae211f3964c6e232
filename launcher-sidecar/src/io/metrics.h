// LauncherMetrics: the launcher's Prometheus metrics and their text exposition (pure rendering).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace kubedist::launcher {

struct LauncherMetrics {
  std::uint64_t worker_restarts_total = 0;   // worker groups restarted on this node
  std::uint64_t rendezvous_rounds_total = 0;  // rounds this node took part in
  int rendezvous_round = -1;                 // the current round (generation)
  int workers_running = 0;
  double last_recovery_seconds = 0;          // from a failure seen here to the replacement workers starting
  std::map<int, double> rank_step_seconds;   // by global rank: this node's workers' time per step (progress)
  std::uint64_t progress_reports_dropped_total = 0;    // beyond a worker's rate limit
  std::uint64_t progress_reports_malformed_total = 0;  // not a report (progress/worker_report.h)
  std::uint64_t progress_reports_foreign_total = 0;    // sent by a process that is not the rank's worker
};

std::string render_metrics(const LauncherMetrics& m);

}  // namespace kubedist::launcher
