#include "trainingjob/decide/spares.h"

#include <algorithm>

#include "trainingjob/api/names.h"

namespace kubedist::trainingjob {
namespace {

const PodFacts* live_pod(const DecideState& s, int rank) {
  for (const auto& pod : s.live)
    if (pod.rank == rank && pod.name == pod_name(s.job.name, rank)) return &pod;
  return nullptr;
}

// The report of the pod that is node 0 now, if this pass has one.
const LauncherReport* node0_report(const DecideState& s) {
  const PodFacts* node0 = live_pod(s, 0);
  if (!s.obs.launcher || node0 == nullptr || s.obs.launcher->pod_uid != node0->uid) return nullptr;
  return &*s.obs.launcher;
}

}  // namespace

std::map<int, int> current_stand_ins(const DecideState& s, int target) {
  const LauncherReport* report = node0_report(s);
  const std::map<int, int>& known = report ? report->stand_ins : s.job.status.stand_ins;
  std::map<int, int> out;
  for (const auto& [slot, rank] : known)
    if (slot > 0 && slot < target && live_pod(s, rank) != nullptr) out[slot] = rank;
  return out;
}

const std::vector<int>* ready_spares(const DecideState& s) {
  const LauncherReport* report = node0_report(s);
  return report != nullptr ? &report->spares : nullptr;
}

bool spare_takes_place_of(const DecideState& s, int rank) {
  const LauncherReport* report = node0_report(s);
  return report != nullptr && !report->spares.empty() &&
         std::find(report->lost_nodes.begin(), report->lost_nodes.end(), rank) != report->lost_nodes.end();
}

void note_spares(DecideState& s, const Ranks& ranks) {
  Status& st = s.plan.status;
  st.spares = static_cast<int>(ranks.spares.size());
  if (const std::vector<int>* ready = ready_spares(s)) {
    st.spares_ready = static_cast<int>(std::count_if(ranks.spares.begin(), ranks.spares.end(), [&](const PodFacts* p) {
      return std::find(ready->begin(), ready->end(), p->rank) != ready->end();
    }));
  } else {
    st.spares_ready = std::min(st.spares_ready, st.spares);  // as last reported, of the spares still there
  }
  for (const auto& [slot, rank] : s.stand_ins) {
    const auto before = s.job.status.stand_ins.find(slot);
    if (before != s.job.status.stand_ins.end() && before->second == rank) continue;
    s.emit("Normal", "SpareStoodIn",
           "pod " + pod_name(s.job.name, rank) + " took node rank " + std::to_string(slot) + "'s place in the group (pod " +
               pod_name(s.job.name, slot) + " is lost or waits as a spare)" +
               (s.spec.spares > 0 ? "; a new spare replaces it" : ""));
  }
  st.stand_ins = s.stand_ins;
}

}  // namespace kubedist::trainingjob
