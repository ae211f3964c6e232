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

std::optional<contract::ReleaseWhy> node_going_away(const NodeFacts& node) {
  using contract::ReleaseWhy;
  if (node.out_of_service) return ReleaseWhy::kTerminationNotice;
  if (node.taints.is_array()) {
    for (const auto& taint : node.taints) {
      const std::string key = taint.is_object() ? taint.value("key", std::string()) : std::string();
      if (key.rfind(kTerminationTaintPrefix, 0) == 0) return ReleaseWhy::kTerminationNotice;
      for (const char* known : kTerminationTaints)
        if (key == known) return ReleaseWhy::kTerminationNotice;
    }
  }
  if (!node.ready) return ReleaseWhy::kNotReady;
  if (node.unschedulable) return ReleaseWhy::kCordoned;
  return std::nullopt;
}

std::optional<contract::ReleaseWhy> pod_node_going_away(const DecideState& s, const PodFacts& pod) {
  if (!s.obs.nodes_watched || pod.node_name.empty()) return std::nullopt;
  for (const NodeFacts& node : s.obs.nodes)
    if (node.name == pod.node_name) return node_going_away(node);
  return std::nullopt;  // not in the cache: deleted (lost_pods.h judges that), or not seen yet
}

std::vector<RendezvousRelease> release_notices(const DecideState& s, const Ranks& ranks) {
  std::vector<RendezvousRelease> out;
  const std::vector<int>* ready = ready_spares(s);
  if (s.spec.spares <= 0 || !s.obs.nodes_watched || ready == nullptr) return out;
  const auto notice = [&out](const PodFacts& pod, contract::ReleaseWhy why) {
    out.push_back({{pod.rank, why}, pod.name, pod.uid, pod.node_name});
  };
  bool spare_stays = false;  // a spare ready on a node that stays
  for (const PodFacts* pod : ranks.spares_going_away) {
    if (pod->phase == "Running") notice(*pod, *pod_node_going_away(s, *pod));
  }
  for (const PodFacts* pod : ranks.spares) {
    spare_stays = spare_stays || (std::find(ready->begin(), ready->end(), pod->rank) != ready->end() &&
                                   !pod_node_going_away(s, *pod));
  }
  if (!spare_stays) return out;
  for (const auto& [slot, pod] : ranks.by_rank) {
    if (slot == 0 || pod->phase != "Running") continue;  // node 0 hosts the rendezvous: it is not replaced so
    if (const auto why = pod_node_going_away(s, *pod)) notice(*pod, *why);
  }
  return out;
}

bool member_gone_without_stand_in(const TrainingJob& job, const std::vector<PodFacts>& pods,
                                  const std::optional<LauncherReport>& report) {
  if (job.spec.spares <= 0 || job.status.phase != JobPhase::kRunning) return false;
  for (int rank = 1; rank < job.spec.replicas; ++rank) {
    const bool has_pod = std::any_of(pods.begin(), pods.end(), [&](const PodFacts& p) { return p.name == pod_name(job.name, rank); });
    const bool stood_in = job.status.stand_ins.count(rank) != 0 || (report && report->stand_ins.count(rank) != 0);
    if (!has_pod && !stood_in) return true;
  }
  return false;
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
