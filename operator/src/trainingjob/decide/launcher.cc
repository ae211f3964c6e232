#include "trainingjob/decide/launcher.h"

#include <algorithm>
#include <set>
#include <vector>

#include "common/utf8.h"
#include "trainingjob/decide/bad_nodes.h"

namespace kubedist::trainingjob {
namespace {

// The causes a launcher can report; pod_failure is the operator's own count (it spends backoffLimit).
bool is_launcher_reason(const std::string& reason) {
  return reason == kRestartWorkerCrash || reason == kRestartNodeLost || reason == kRestartScale ||
         reason == kRestartHang;
}

// The pod a hang message names first ("...: rank 1 on j-node-1 stuck ..."): the host name is the pod's.
std::string first_stuck_pod(const std::string& message) {
  const auto at = message.find(": rank ");
  const auto on = message.find(" on ", at == std::string::npos ? 0 : at);
  if (at == std::string::npos || on == std::string::npos) return "";
  const auto end = message.find(' ', on + 4);
  return message.substr(on + 4, end == std::string::npos ? std::string::npos : end - on - 4);
}

// A hang the launchers restarted the group for: why, in status.lastFailure and Event HangDetected.
void note_hang(DecideState& s, const LauncherReport& report, int delta) {
  const std::string message = report.progress ? report.progress->hang_message : "";
  const std::string text = message.empty() ? "the job's step stopped advancing for spec.hangTimeout" : message;
  s.emit("Warning", "HangDetected",
         "the launchers restarted the hung worker group in place " + std::to_string(delta) + " time(s): " + text);
  LastFailure f;
  const UnixSeconds polled = report.polled_at > 0 ? report.polled_at : s.now;
  f.time = format_rfc3339(polled - (report.progress ? report.progress->hang_age_ms / 1000 : 0));
  f.pod = first_stuck_pod(message);
  for (const auto& pod : s.live)
    if (!f.pod.empty() && pod.name == f.pod) f.node = pod.node_name;
  f.reason = "Hang";
  f.message = cut_utf8(text, kMaxTerminationMessage);
  s.plan.status.last_failure = f;
  // The first rank named is the one the others wait for: its node is the suspect.
  note_node_failure(s, f.node, "a hang, " + f.message.substr(0, f.message.find(';')), NodeEvidence::kJobsOwn);
}

// The node ranks whose loss node 0's launcher just reported that the operator has not counted itself: up to n of
// the report's lost ranks, neither prepaid already nor the rank of a pod the operator counted lost.
std::vector<int> newly_lost_ranks(const DecideState& s, const LauncherReport& report, int n) {
  std::set<int> counted;
  const auto& lost = s.plan.status.lost_pods;
  for (const auto* pods : {&s.live, &s.terminating})
    for (const auto& pod : *pods)
      if (std::find(lost.begin(), lost.end(), pod.uid) != lost.end()) counted.insert(pod.rank);
  const auto& prepaid = s.plan.status.launcher.prepaid_nodes;
  std::vector<int> out;
  for (int rank : report.lost_nodes) {
    if (static_cast<int>(out.size()) == n) break;
    if (counted.count(rank) == 0 && std::find(prepaid.begin(), prepaid.end(), rank) == prepaid.end())
      out.push_back(rank);
  }
  return out;
}

// More in-place restarts than this between two polls is no report to trust (and would overflow the counts).
constexpr int kMaxLauncherDelta = 100000;

}  // namespace

void fold_launcher(DecideState& s, const PodFacts* node0) {
  if (!s.obs.launcher || node0 == nullptr || s.obs.launcher->pod_uid != node0->uid) return;
  const LauncherReport& report = *s.obs.launcher;
  LauncherSeen& seen = s.plan.status.launcher;
  if (seen.pod_uid != report.pod_uid) {  // a new rendezvous: nothing to absorb; the goodput of earlier pods stays
    if (report.carried && report.round < 0) return;  // still gathering: its members' carried counts are not all in
    const std::map<std::string, int> earlier = seen.restarts_by_reason;
    seen = LauncherSeen{report.pod_uid, {}, 0, {}, 0, "", seen.busy_before_ms, seen.lost_before_ms};
    if (report.carried) {
      // It goes on from the counts of the node 0 before it, as its members last saw them: of those, what was
      // folded already is not counted again, and what that node 0 made since the last poll is.
      for (const auto& [reason, base] : *report.carried) {
        const auto folded = earlier.find(reason);
        seen.restarts_by_reason[reason] = std::min(base, folded == earlier.end() ? 0 : folded->second);
      }
    }
  }
  // A rank the launchers no longer report lost joined again: a later loss of its pod is a new one.
  std::erase_if(seen.prepaid_nodes, [&](int rank) {
    return std::find(report.lost_nodes.begin(), report.lost_nodes.end(), rank) == report.lost_nodes.end();
  });
  for (const auto& [reason, n] : report.restarts_by_reason) {
    if (!is_launcher_reason(reason)) continue;
    const int before = seen.restarts_by_reason.count(reason) ? seen.restarts_by_reason[reason] : 0;
    int delta = n >= before ? n - before : n;  // smaller: the launcher restarted inside the same pod
    seen.restarts_by_reason[reason] = n;
    if (delta <= 0 || delta > kMaxLauncherDelta) continue;
    if (reason == kRestartNodeLost || reason == kRestartScale) {  // the group re-forming for a pod already counted
      const int same = std::min(delta, seen.absorb);
      seen.absorb -= same;
      delta -= same;
      if (delta == 0) continue;
    }
    s.count_restart(reason, delta);
    if (reason == kRestartNodeLost) {
      // Not absorbed: a loss the operator has not seen yet (its pod's deletion may still be on its way, or its
      // node's NotReady grace), or one it never sees (a launcher that lost its peer without a pod lost).
      const std::vector<int> ranks = newly_lost_ranks(s, report, delta);
      for (int rank : ranks)
        if (seen.prepaid_nodes.size() < contract::kMaxLostNodes) seen.prepaid_nodes.push_back(rank);
      if (delta > static_cast<int>(ranks.size())) {  // a launcher that names no ranks, or a rank lost again
        seen.prepaid += delta - static_cast<int>(ranks.size());
        seen.prepaid_at = format_rfc3339(s.now);
      }
    }
    if (reason == kRestartHang) {
      note_hang(s, report, delta);
      continue;
    }
    const char* what = reason == std::string(kRestartWorkerCrash) ? "WorkerRestarted" : "GroupRestarted";
    s.emit(reason == std::string(kRestartScale) ? "Normal" : "Warning", what,
           "the launchers restarted the worker group in place " + std::to_string(delta) + " time(s) (reason " +
               reason + "; rendezvous round " + std::to_string(report.round) + ", " + std::to_string(report.nodes) +
               " nodes, world size " + std::to_string(report.world_size) + ")");
  }
}

}  // namespace kubedist::trainingjob
