#include "trainingjob/decide/launcher.h"

#include <algorithm>

namespace kubedist::trainingjob {
namespace {

// The causes a launcher can report; pod_failure is the operator's own count (it spends backoffLimit).
bool is_launcher_reason(const std::string& reason) {
  return reason == kRestartWorkerCrash || reason == kRestartNodeLost || reason == kRestartScale;
}

// More in-place restarts than this between two polls is no report to trust (and would overflow the counts).
constexpr int kMaxLauncherDelta = 100000;

}  // namespace

void fold_launcher(DecideState& s, const PodFacts* node0) {
  if (!s.obs.launcher || node0 == nullptr || s.obs.launcher->pod_uid != node0->uid) return;
  const LauncherReport& report = *s.obs.launcher;
  LauncherSeen& seen = s.plan.status.launcher;
  if (seen.pod_uid != report.pod_uid) seen = LauncherSeen{report.pod_uid, {}, 0, 0, ""};  // a new rendezvous: nothing to absorb
  for (const auto& [reason, n] : report.restarts_by_reason) {
    if (!is_launcher_reason(reason)) continue;
    const int before = seen.restarts_by_reason.count(reason) ? seen.restarts_by_reason[reason] : 0;
    int delta = n >= before ? n - before : n;  // smaller: the launcher restarted inside the same pod
    seen.restarts_by_reason[reason] = n;
    if (delta <= 0 || delta > kMaxLauncherDelta) continue;
    if (reason != kRestartWorkerCrash) {  // the group re-forming for a pod the operator already counted
      const int same = std::min(delta, seen.absorb);
      seen.absorb -= same;
      delta -= same;
      if (delta == 0) continue;
    }
    s.count_restart(reason, delta);
    if (reason == kRestartNodeLost) {
      // Not absorbed: a loss the operator has not seen yet (its pod's deletion may still be on its way), or one it
      // never sees (a launcher that lost its peer without a pod lost).
      seen.prepaid += delta;
      seen.prepaid_at = format_rfc3339(s.now);
    }
    const char* what = reason == std::string(kRestartWorkerCrash) ? "WorkerRestarted" : "GroupRestarted";
    s.emit(reason == std::string(kRestartScale) ? "Normal" : "Warning", what,
           "the launchers restarted the worker group in place " + std::to_string(delta) + " time(s) (reason " +
               reason + "; rendezvous round " + std::to_string(report.round) + ", " + std::to_string(report.nodes) +
               " nodes, world size " + std::to_string(report.world_size) + ")");
  }
}

}  // namespace kubedist::trainingjob
