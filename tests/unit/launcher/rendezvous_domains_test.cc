// Topology domains (JOIN ... domain=D, from --topology-domain-file): one domain's nodes take consecutive group
// ranks, node 0's domain first; a spare standing in keeps the slot's place. Driven through the pure coordinator.
#include "rendezvous/coordinator.h"
#include "rendezvous/wire.h"

#include <gtest/gtest.h>

#include "contract/pod_env.h"
#include "coordinator_harness.h"

namespace kubedist::launcher {
namespace {

using Kind = RendezvousMessage::Kind;
using namespace std::chrono_literals;

struct Harness : testing::ByMember {
  using testing::ByMember::ByMember;
  void join(MemberId id, int node_rank, const std::string& domain, bool spare = false) {
    testing::ByMember::join(id, node_rank, spare, -1, domain);
  }
  // Group rank by member id, of the rounds just sent.
  std::map<MemberId, int> group_ranks() {
    std::map<MemberId, int> g;
    for (const auto& [id, m] : out())
      if (m.kind == Kind::Round) g[id] = m.assignment.group_rank;
    return g;
  }
};

TEST(RendezvousDomains, OneDomainsNodesTakeConsecutiveGroupRanksNodeZerosFirst) {
  Harness h(4, 4);
  h.join(1, 0, "rack-b");
  h.join(2, 1, "rack-a");
  h.join(3, 2, "rack-b");
  h.join(4, 3, "rack-a");
  // Node 0 (rank 0, it hosts the store), node 2 of its rack, then rack-a's nodes 1 and 3.
  EXPECT_EQ(h.group_ranks(), (std::map<MemberId, int>{{1, 0}, {3, 1}, {2, 2}, {4, 3}}));
}

TEST(RendezvousDomains, GlobalRanksFollowTheGroupRanks) {
  Harness h(3, 3);
  h.join(1, 0, "r1");
  h.join(2, 1, "r2");
  h.join(3, 2, "r1");
  auto m = h.out();
  EXPECT_EQ(m[3].assignment.group_rank, 1);
  EXPECT_EQ(m[3].assignment.rank_offset, 2);
  EXPECT_EQ(m[2].assignment.group_rank, 2);
  EXPECT_EQ(m[2].assignment.rank_offset, 4);
  EXPECT_EQ(m[2].assignment.world_size, 6);
}

TEST(RendezvousDomains, WithoutDomainsOrWithOneTheOrderIsByNodeRank) {
  for (const std::string domain : {"", "rack-a"}) {
    Harness h(3, 3);
    h.join(3, 2, domain);
    h.join(1, 0, domain);
    h.join(2, 1, domain);
    EXPECT_EQ(h.group_ranks(), (std::map<MemberId, int>{{1, 0}, {2, 1}, {3, 2}})) << domain;
  }
  Harness some(3, 3);  // a node that knows no domain sorts before the named ones, after node 0's domain
  some.join(1, 0, "r9");
  some.join(2, 1, "r1");
  some.join(3, 2, "");
  EXPECT_EQ(some.group_ranks(), (std::map<MemberId, int>{{1, 0}, {3, 1}, {2, 2}}));
}

TEST(RendezvousDomains, ASpareStandingInKeepsTheLostNodesGroupRankWhateverItsOwnDomain) {
  Harness h(3, 3);
  h.join(9, 3, "rack-c", true);
  h.join(1, 0, "rack-b");
  h.join(2, 1, "rack-a");
  h.join(3, 2, "rack-b");
  EXPECT_EQ(h.group_ranks(), (std::map<MemberId, int>{{1, 0}, {3, 1}, {2, 2}}));
  h.c.leave(2, h.t);  // node 1 of rack-a lost
  h.out();
  h.join(1, 0, "rack-b");
  h.join(3, 2, "rack-b");
  auto g = h.group_ranks();
  EXPECT_EQ(g, (std::map<MemberId, int>{{1, 0}, {3, 1}, {9, 2}})) << "the survivors keep theirs; the spare takes 2";
}

TEST(RendezvousDomains, TheJoinLineCarriesTheDomainBeforeSpareOrStandIn) {
  JoinRequest join{"job", 3, 2, CoordinatorSettings{"job", 2, 2, 1, 1000ms, 60000ms, false}};
  join.domain = "rack-a.1";
  EXPECT_EQ(encode_join(join), "JOIN job 3 2 2 2 1 1000 60000 0 domain=rack-a.1\n");
  join.spare = true;
  EXPECT_EQ(encode_join(join), "JOIN job 3 2 2 2 1 1000 60000 0 domain=rack-a.1 spare\n");
  join.stand_in = 1;
  EXPECT_EQ(encode_join(join), "JOIN job 3 2 2 2 1 1000 60000 0 domain=rack-a.1 stand_in=1\n");
  for (const std::string line : {"JOIN job 3 2 2 2 1 1000 60000 0 domain=rack-a.1 spare",
                                 "JOIN job 3 2 domain=rack-a.1 spare", "JOIN job 3 2 domain=rack-a.1 stand_in=1",
                                 "JOIN job 3 2 domain=rack-a.1"}) {
    auto r = parse_request(line);
    ASSERT_TRUE(r.ok()) << line;
    EXPECT_EQ(r->join.domain, "rack-a.1") << line;
    EXPECT_EQ(r->join.spare, line.find(" spare") != std::string::npos) << line;
    EXPECT_EQ(r->join.stand_in, line.find("stand_in=1") != std::string::npos ? 1 : -1) << line;
  }
  EXPECT_EQ(parse_request("JOIN job 3 2")->join.domain, "");
  const std::vector<std::string> bad = {"JOIN job 3 2 domain=", "JOIN job 3 2 domain=-a", "JOIN job 3 2 domain=a-",
                                        "JOIN job 3 2 domain=a/b", "JOIN job 3 2 domain=" + std::string(64, 'a'),
                                        "JOIN job 3 2 spare domain=a", "JOIN job 3 2 domain=a domain=b",
                                        "JOIN job 3 2 domain=a 2 2 1 1000 60000 0"};
  for (const std::string& line : bad) EXPECT_FALSE(parse_request(line).ok()) << line;
}

TEST(RendezvousDomains, ADomainIsANodeLabelsValue) {
  for (const std::string& ok : std::vector<std::string>{"a", "rack-1", "A_b.c", "nvl72.4", std::string(63, 'z')})
    EXPECT_TRUE(contract::is_topology_domain(ok)) << ok;
  for (const std::string& bad : std::vector<std::string>{"", "-", "-a", "a.", "a b", "a/b", "ä", std::string(64, 'z')})
    EXPECT_FALSE(contract::is_topology_domain(bad)) << bad;
}

}  // namespace
}  // namespace kubedist::launcher
