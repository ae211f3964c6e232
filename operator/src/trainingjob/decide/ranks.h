// Which rank each of a job's pods holds, which pods are surplus, and which ranks get a new pod.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

struct Ranks {
  std::map<int, const PodFacts*> by_rank;  // the pod holding each rank below the target (into DecideState::live)
  std::vector<std::string> surplus;        // pods deleted now: a rank at or past the target, a duplicate, a stray
  std::vector<const PodFacts*> spares{};   // spare pods kept (spec.spares), not holding a rank
  // Spare pods deleted now because their node goes away (spares.h: node_going_away: cordoned or announced for
  // termination, not merely NotReady); new ones are made elsewhere.
  std::vector<const PodFacts*> spares_going_away{};
  bool is_spare(const PodFacts& pod) const;
};

// Keeps one pod per rank below target, named for its rank, and deletes the others (Event ScaledDown, unless
// the elastic target changed now and said so itself). A rank a spare took (s.stand_ins) is held by that spare's
// pod; spare pods, and a member whose place a spare took, are kept as spares up to spec.spares (the ones node 0
// reports waiting first), the others deleted (Event SparesDeleted; a failed one Event SpareFailed; one on a node
// going away Event SparesMoved, so that a new spare is made on a node that stays). lost_uids:
// pods decide_lost_pods deletes, held by no rank.
Ranks decide_ranks(DecideState& s, int target, const std::set<std::string>& lost_uids, bool elastic_changed);

// Creates the ranks below target that hold no pod, once any old pod of the same name is gone (node 0 first), and
// spare pods J-spare-<i> (the first indices no pod of the job holds) up to spec.spares; sets
// the Created condition and says why with one Event; a rank whose pod vanished unseen from a Running job counts
// as node_lost. After a refusal (Observed::pod_refused) it claims nothing: condition PodsRefused says why, with one
// Warning Event, and the missing pods are created again only from the refusal's retry_at on.
void decide_creates(DecideState& s, int target, const Ranks& ranks, const std::set<std::string>& lost_uids,
                    bool elastic_changed);

// The reason condition PodsRefused gives a refusal, from the server's message: PodSecurity, ResourceQuota,
// AdmissionWebhook, or Forbidden (RBAC, or an admission plugin it does not name).
std::string refusal_reason(const std::string& message);

}  // namespace kubedist::trainingjob
