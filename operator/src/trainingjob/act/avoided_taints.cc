#include "trainingjob/act/avoided_taints.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "common/log.h"
#include "trainingjob/act/reconciler.h"
#include "trainingjob/decide/bad_nodes.h"

namespace kubedist::trainingjob {

AvoidedTaintExpiry::AvoidedTaintExpiry(kube::Api& api, const kube::Lister<NodeFacts>& nodes, int64_t ttl_s)
    : api_(api),
      nodes_(nodes),
      ttl_s_(ttl_s),
      ticker_("avoided_taints",
              std::clamp<std::chrono::milliseconds>(std::chrono::milliseconds(ttl_s * 250), std::chrono::seconds(1),
                                                    std::chrono::seconds(30)),
              [this] { expire_once(now_unix()); }) {}

int AvoidedTaintExpiry::expire_once(UnixSeconds now) {
  if (!nodes_.synced()) return 0;
  int removed = 0;
  for (const Write& w : expired_avoided_taints(nodes_.by_index(""), now, ttl_s_)) {
    // On the taints it read (the precondition): a node changed since is looked at again next time.
    auto r = api_.merge_patch(w.path, request_body(w));
    if (r) {
      ++removed;
      log_info("avoided_taints", "node " + w.name + ": taint " + kAvoidedTaint + " taken off after --avoided-taint-ttl " +
                                     std::to_string(ttl_s_) + "s");
    } else if (r.error().kind != Error::Kind::kNotFound && r.error().kind != Error::Kind::kConflict) {
      log_warn("avoided_taints", "node " + w.name + ": taking taint " + kAvoidedTaint + " off: " + r.error().message);
    }
  }
  return removed;
}

}  // namespace kubedist::trainingjob
