// AvoidedTaintExpiry: takes the taint kubedist.io/avoided off the nodes that have carried it for --avoided-taint-ttl
// (--taint-avoided-nodes, decide/bad_nodes.h), on a thread of its own: a node comes back for every tenant whether
// or not any job is reconciled. Runs while this replica leads (a Runnable of the manager).
#pragma once

#include <cstdint>

#include "common/ticker.h"
#include "common/time.h"
#include "kube/api.h"
#include "kube/lister.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

class AvoidedTaintExpiry {
 public:
  // Looks every min(ttl / 4, 30 s), at least every second.
  AvoidedTaintExpiry(kube::Api& api, const kube::Lister<NodeFacts>& nodes, int64_t ttl_s);
  void start() { ticker_.start(); }
  void stop() { ticker_.stop(); }
  // One look at the cached nodes at `now`: how many nodes had the taint taken off (tests call it directly).
  int expire_once(UnixSeconds now);

 private:
  kube::Api& api_;
  const kube::Lister<NodeFacts>& nodes_;
  const int64_t ttl_s_;
  Ticker ticker_;  // last: its thread stops before the rest goes
};

}  // namespace kubedist::trainingjob
