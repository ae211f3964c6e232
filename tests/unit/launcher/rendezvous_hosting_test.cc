// Who hosts the rendezvous: node rank 0, or without a node rank the launcher on the endpoint's host.
#include "rendezvous/hosting.h"

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

LaunchConfig config(const std::vector<std::string>& flags) {
  std::vector<std::string> args = flags;
  args.push_back("t.py");
  auto r = parse_launch_config(args, {});
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.value() : LaunchConfig{};
}

TEST(Hosting, ASingleNodeJobHostsInProcessWithoutAPort) {
  for (bool local : {false, true}) {
    const auto c = config({"--nproc-per-node=2"});
    EXPECT_FALSE(hosting_depends_on_endpoint(c));
    const auto plan = plan_hosting(c, local);
    EXPECT_TRUE(plan.host);
    EXPECT_FALSE(plan.listen);
    EXPECT_FALSE(plan.must_bind);
    EXPECT_EQ(plan.store_address, "") << "torchrun's static default: MASTER_PORT 29500";
    EXPECT_EQ(node_rank_for_round(c, plan, true), 0);
  }
}

TEST(Hosting, ASingleNodeC10dJobNamesAStoreOnTheRendezvousHostEachRound) {
  // Two such jobs on one host, each with its own endpoint, must not both take 29500.
  const auto c = config({"--nnodes=1", "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.3:29400", "--rdzv-id=a"});
  EXPECT_TRUE(hosting_depends_on_endpoint(c));
  const auto here = plan_hosting(c, true);
  EXPECT_TRUE(here.host);
  EXPECT_FALSE(here.listen) << "no other node needs the port";
  EXPECT_EQ(here.store_address, "127.0.0.3");
  EXPECT_EQ(plan_hosting(c, false).store_address, "127.0.0.1") << "this node's workers are the whole group";
  EXPECT_TRUE(plan_hosting(c, false).host);
  EXPECT_EQ(plan_hosting(config({"--standalone", "--rdzv-endpoint=127.0.0.3:1"}), true).store_address, "")
      << "--standalone ignores the endpoint and picks its own free port";
}

TEST(Hosting, GivenNodeRankZeroMustBindAndOthersJoinWhereverTheEndpointIs) {
  const auto zero = config({"--nnodes=2", "--node-rank=0", "--master-addr=10.0.0.1"});
  EXPECT_FALSE(hosting_depends_on_endpoint(zero));
  for (bool local : {false, true}) {
    const auto plan = plan_hosting(zero, local);
    EXPECT_TRUE(plan.host);
    EXPECT_TRUE(plan.listen);
    EXPECT_TRUE(plan.must_bind);
    EXPECT_EQ(plan.bind_address, "") << "a non-loopback endpoint is served on every address";
  }
  const auto one = config({"--nnodes=2", "--node-rank=1", "--master-addr=10.0.0.1"});
  for (bool local : {false, true}) {
    const auto plan = plan_hosting(one, local);
    EXPECT_FALSE(plan.host);
    EXPECT_FALSE(plan.listen);
    EXPECT_EQ(plan.store_address, "");
    EXPECT_EQ(node_rank_for_round(one, plan, false), 1);
  }
}

TEST(Hosting, WithoutANodeRankTheEndpointsHostHostsAndTheOthersAreRankOne) {
  const auto c = config({"--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=10.0.0.1:29400"});
  EXPECT_TRUE(hosting_depends_on_endpoint(c));
  const auto here = plan_hosting(c, true);
  EXPECT_TRUE(here.host);
  EXPECT_TRUE(here.listen);
  EXPECT_FALSE(here.must_bind) << "another launcher on this host may hold the port";
  EXPECT_EQ(here.store_address, "10.0.0.1");
  EXPECT_EQ(node_rank_for_round(c, here, true), 0);
  const auto elsewhere = plan_hosting(c, false);
  EXPECT_FALSE(elsewhere.host);
  EXPECT_EQ(node_rank_for_round(c, elsewhere, false), 1);
}

TEST(Hosting, ALauncherOnTheEndpointsHostThatFindsThePortTakenJoinsAsNodeRankZero) {
  // The store each round names is on the endpoint's host, so one of its launchers must be group rank 0.
  const auto c = config({"--nnodes=1:3", "--rdzv-endpoint=127.0.0.5:29400"});
  const auto plan = plan_hosting(c, true);
  ASSERT_TRUE(plan.listen);
  EXPECT_EQ(node_rank_for_round(c, plan, false), 0);
}

TEST(Hosting, ALoopbackEndpointIsServedOnItsOwnAddressOnly) {
  // Several "nodes" on one machine (tests) each own a loopback address.
  EXPECT_EQ(plan_hosting(config({"--nnodes=2", "--rdzv-endpoint=127.0.0.7:5000"}), true).bind_address, "127.0.0.7");
  EXPECT_EQ(plan_hosting(config({"--nnodes=2", "--node-rank=0", "--master-addr=127.1.2.3"}), false).bind_address,
            "127.1.2.3");
  EXPECT_EQ(plan_hosting(config({"--nnodes=2", "--node-rank=0", "--master-addr=localhost"}), false).bind_address, "")
      << "a name is not resolved here";
}

}  // namespace
}  // namespace kubedist::launcher
