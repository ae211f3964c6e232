#include "io/metrics.h"

#include <cstdio>

namespace kubedist::launcher {
namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, const std::string& value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + value + "\n";
}

}  // namespace

std::string render_metrics(const LauncherMetrics& m) {
  std::string out;
  char seconds[64];
  std::snprintf(seconds, sizeof seconds, "%.6f", m.last_recovery_seconds);
  metric(out, "kubedist_launcher_worker_restarts_total", "counter", "Worker groups restarted on this node.",
         std::to_string(m.worker_restarts_total));
  metric(out, "kubedist_launcher_rendezvous_rounds_total", "counter", "Rendezvous rounds this node took part in.",
         std::to_string(m.rendezvous_rounds_total));
  metric(out, "kubedist_launcher_rendezvous_round", "gauge", "The current rendezvous round (generation).",
         std::to_string(m.rendezvous_round));
  metric(out, "kubedist_launcher_workers_running", "gauge", "Worker processes running on this node.",
         std::to_string(m.workers_running));
  metric(out, "kubedist_launcher_last_recovery_seconds", "gauge",
         "Seconds from the last failure seen on this node to its replacement workers starting.", seconds);
  metric(out, "kubedist_launcher_progress_reports_dropped_total", "counter",
         "Progress reports dropped because a worker sent more than its rate limit.",
         std::to_string(m.progress_reports_dropped_total));
  metric(out, "kubedist_launcher_progress_reports_malformed_total", "counter",
         "Progress reports ignored because they were malformed or too long.",
         std::to_string(m.progress_reports_malformed_total));
  metric(out, "kubedist_launcher_progress_reports_foreign_total", "counter",
         "Progress reports ignored because their sender was not the rank's worker or a process it started.",
         std::to_string(m.progress_reports_foreign_total));
  const std::string rank_step = "kubedist_rank_step_seconds";
  out += "# HELP " + rank_step + " Seconds per training step of each rank on this node, as it reports.\n# TYPE " +
         rank_step + " gauge\n";
  for (const auto& [rank, secs] : m.rank_step_seconds) {
    std::snprintf(seconds, sizeof seconds, "%.6f", secs);
    out += rank_step + "{rank=\"" + std::to_string(rank) + "\"} " + seconds + "\n";
  }
  return out;
}

}  // namespace kubedist::launcher
