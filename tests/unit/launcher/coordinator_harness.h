// The pure rendezvous coordinator with a fake clock, for the launcher's unit tests of the rendezvous rules.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "rendezvous/coordinator.h"

namespace kubedist::launcher::testing {

using namespace std::chrono_literals;

struct Harness {
  using Clock = RendezvousCoordinator::Clock;
  explicit Harness(int min, int max, int max_restarts = 3) : c({"job", min, max, max_restarts, 1000ms, 5000ms}, t) {}
  Clock::time_point t = Clock::time_point{} + 100s;
  RendezvousCoordinator c;
  std::vector<Outgoing> out() { return c.take_outbox(); }
  void join(MemberId id, int node_rank, int nproc = 2) { c.join(id, {"job", node_rank, nproc}, t); }
  // Nodes 0 and 1 (member ids 1 and 2) join and a round forms (min <= 2 <= max).
  void run_two_nodes() {
    join(1, 0);
    join(2, 1);
    out();
  }
  void advance(std::chrono::milliseconds d) {
    t += d;
    c.tick(t);
  }
};

// The last message to each member.
inline std::map<MemberId, RendezvousMessage> by_member(const std::vector<Outgoing>& out) {
  std::map<MemberId, RendezvousMessage> m;
  for (auto& o : out) m[o.to] = o.message;
  return m;
}

// The harness whose out() gives the last message to each member, and whose join() takes a whole request (a spare,
// a stand-in, a domain): the spares' and the domains' tests.
struct ByMember : Harness {
  using Harness::Harness;
  std::map<MemberId, RendezvousMessage> out() { return by_member(Harness::out()); }
  void join(MemberId id, int node_rank, bool spare = false, int stand_in = -1, const std::string& domain = "") {
    JoinRequest r{"job", node_rank, 2};
    r.spare = spare;
    r.stand_in = stand_in;
    r.domain = domain;
    c.join(id, r, t);
  }
};

}  // namespace kubedist::launcher::testing
