// Who hosts the rendezvous: node rank 0, or without a node rank the launcher on the endpoint's host.
#include "rendezvous/hosting.h"

#include <gtest/gtest.h>

#include <optional>

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
    EXPECT_EQ(plan.node_rank, 0);
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
    EXPECT_EQ(plan.node_rank, 1);
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
  EXPECT_EQ(here.node_rank, 0);
  const auto elsewhere = plan_hosting(c, false);
  EXPECT_FALSE(elsewhere.host);
  EXPECT_EQ(elsewhere.node_rank, 1);
}

TEST(Hosting, ALauncherOnTheEndpointsHostThatFindsThePortTakenJoinsAsNodeRankZero) {
  // The store each round names is on the endpoint's host, so one of its launchers must be group rank 0.
  const auto c = config({"--nnodes=1:3", "--rdzv-endpoint=127.0.0.5:29400"});
  const auto plan = plan_hosting(c, true);
  ASSERT_TRUE(plan.listen);
  EXPECT_EQ(plan.node_rank, 0);
}

TEST(Hosting, ALoopbackEndpointIsServedOnItsOwnAddressOnly) {
  // Several "nodes" on one machine (tests) each own a loopback address.
  EXPECT_EQ(plan_hosting(config({"--nnodes=2", "--rdzv-endpoint=127.0.0.7:5000"}), true).bind_address, "127.0.0.7");
  EXPECT_EQ(plan_hosting(config({"--nnodes=2", "--node-rank=0", "--master-addr=127.1.2.3"}), false).bind_address,
            "127.1.2.3");
  EXPECT_EQ(plan_hosting(config({"--nnodes=2", "--node-rank=0", "--master-addr=localhost"}), false).bind_address, "")
      << "a name is not resolved here";
}

// Every way a launch is asked for today, from flags, PET_* or the operator's env, and the plan it gets. Where the
// plan does not depend on the endpoint's address (`here` unset), it must be the same whether or not it is local.
struct HostingCase {
  std::string name;
  std::vector<std::string> args;  // before the script
  Env env;
  std::optional<bool> here;  // endpoint_is_local; unset: tried both ways
  bool depends;              // hosting_depends_on_endpoint
  bool host, listen;
  std::string bind_address;
  bool must_bind;
  std::string store_address;
  int node_rank;
};

const std::vector<HostingCase>& hosting_cases() {
  const Env pod = {{"KUBEDIST_JOB", "j"}, {"NNODES", "2"}, {"NODE_RANK", "0"}, {"MASTER_ADDR", "j-node-0.j.ns.svc"},
                   {"MASTER_PORT", "29500"}};
  auto with = [](Env env, const std::string& key, const std::string& value) {
    env[key] = value;
    return env;
  };
  static const std::vector<HostingCase> cases = {
      // One node.
      {"standalone", {"--standalone", "--nproc-per-node=2"}, {}, {}, false, true, false, "", false, "", 0},
      {"standalone ignores an endpoint and the node flags",
       {"--standalone", "--nnodes=4", "--node-rank=3", "--rdzv-endpoint=10.0.0.1:29400"}, {}, {}, false, true, false,
       "", false, "", 0},
      {"no flags: one node, torchrun's static defaults", {}, {}, {}, false, true, false, "", false, "", 0},
      {"nnodes=1 with a store address", {"--nnodes=1", "--master-addr=10.0.0.1", "--master-port=1234"}, {}, {},
       false, true, false, "", false, "", 0},
      {"nnodes=1, c10d endpoint on this host",
       {"--nnodes=1", "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.3:29400"}, {}, true, true, true, false, "",
       false, "127.0.0.3", 0},
      {"nnodes=1, c10d endpoint elsewhere", {"--nnodes=1", "--rdzv-backend=c10d", "--rdzv-endpoint=10.0.0.9:29400"},
       {}, false, true, true, false, "", false, "127.0.0.1", 0},
      // Several nodes, static: node rank 0 hosts and must bind, wherever the endpoint is.
      {"multi-node, node rank 0", {"--nnodes=2", "--node-rank=0", "--master-addr=10.0.0.1"}, {}, {}, false, true,
       true, "", true, "10.0.0.1", 0},
      {"multi-node, node rank 1", {"--nnodes=2", "--node-rank=1", "--master-addr=10.0.0.1"}, {}, {}, false, false,
       false, "", false, "", 1},
      {"multi-node, node rank 0, loopback store", {"--nnodes=2", "--node-rank=0", "--master-addr=127.1.2.3"}, {}, {},
       false, true, true, "127.1.2.3", true, "127.1.2.3", 0},
      {"multi-node, node rank 0, endpoint given",
       {"--nnodes=3", "--node-rank=0", "--rdzv-endpoint=10.0.0.1:29400"}, {}, {}, false, true, true, "", true,
       "10.0.0.1", 0},
      // Several nodes, c10d style (no node rank): the endpoint's host hosts.
      {"multi-node c10d, endpoint here", {"--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=10.0.0.1:29400"}, {},
       true, true, true, true, "", false, "10.0.0.1", 0},
      {"multi-node c10d, endpoint elsewhere",
       {"--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=10.0.0.1:29400"}, {}, false, true, false, false, "",
       false, "", 1},
      {"multi-node c10d, loopback endpoint here", {"--nnodes=2", "--rdzv-endpoint=127.0.0.7:5000"}, {}, true, true,
       true, true, "127.0.0.7", false, "127.0.0.7", 0},
      {"multi-node, no node rank, no endpoint: the store address is the endpoint", {"--nnodes=2", "--master-addr=h"},
       {}, true, true, true, true, "", false, "h", 0},
      // Elastic.
      {"elastic c10d, endpoint here", {"--nnodes=1:3", "--rdzv-endpoint=127.0.0.5:29400"}, {}, true, true, true, true,
       "127.0.0.5", false, "127.0.0.5", 0},
      {"elastic c10d, endpoint elsewhere", {"--nnodes=1:3", "--rdzv-endpoint=127.0.0.5:29400"}, {}, false, true,
       false, false, "", false, "", 1},
      {"elastic, node rank 0", {"--nnodes=2:4", "--node-rank=0", "--master-addr=10.0.0.1"}, {}, {}, false, true, true,
       "", true, "10.0.0.1", 0},
      {"elastic, node rank 3", {"--nnodes=2:4", "--node-rank=3", "--master-addr=10.0.0.1"}, {}, {}, false, false,
       false, "", false, "", 3},
      // torch.distributed.launch's form: static, as torchrun's.
      {"legacy launch, node rank 0",
       {"--legacy-launch", "--use-env", "--nnodes=2", "--node_rank=0", "--master_addr=10.0.0.1",
        "--master_port=29500"},
       {}, {}, false, true, true, "", true, "10.0.0.1", 0},
      {"legacy launch, node rank 1",
       {"--legacy-launch", "--nnodes=2", "--node_rank=1", "--master_addr=10.0.0.1", "--master_port=29500"}, {}, {},
       false, false, false, "", false, "", 1},
      {"legacy launch, one node", {"--legacy-launch", "--nproc_per_node=2"}, {}, {}, false, true, false, "", false, "",
       0},
      // The operator's env alone (a TrainingJob's pod): node 0 hosts at MASTER_ADDR, the others join it.
      {"operator env, node 0", {"--no-python", "--"}, pod, {}, false, true, true, "", true, "j-node-0.j.ns.svc", 0},
      {"operator env, node 1", {"--no-python", "--"}, with(pod, "NODE_RANK", "1"), {}, false, false, false, "", false,
       "", 1},
      {"operator env, elastic node 2", {"--no-python", "--"},
       with(with(pod, "NNODES", "1:4"), "NODE_RANK", "2"), {}, false, false, false, "", false, "", 2},
      {"operator env, one node", {"--no-python", "--"}, with(with(pod, "NNODES", "1"), "NODE_RANK", "0"), {}, false,
       true, false, "", false, "", 0},
      {"operator env outside a pod is ignored: one node", {}, with(pod, "KUBEDIST_JOB", ""), {}, false, true, false, "",
       false, "", 0},
      {"operator env under a legacy launch",
       {"--no-python", "--"}, with(with(pod, "KUBEDIST_LEGACY_LAUNCH", "1"), "NODE_RANK", "1"), {}, false, false,
       false, "", false, "", 1},
      // PET_* alone.
      {"PET env, c10d endpoint here", {}, {{"PET_NNODES", "2"}, {"PET_RDZV_ENDPOINT", "10.0.0.1:29400"}}, true, true,
       true, true, "", false, "10.0.0.1", 0},
      {"PET env, node rank 1", {}, {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_MASTER_ADDR", "10.0.0.1"}}, {},
       false, false, false, "", false, "", 1},
  };
  return cases;
}

TEST(Hosting, EveryWayOfLaunchingGetsItsPlan) {
  for (const auto& c : hosting_cases()) {
    SCOPED_TRACE(c.name);
    const LaunchConfig config = [&] {
      std::vector<std::string> args = c.args;
      args.push_back("t.py");
      auto r = parse_launch_config(args, c.env);
      EXPECT_TRUE(r.ok()) << r.error();
      return r.ok() ? r.value() : LaunchConfig{};
    }();
    EXPECT_EQ(hosting_depends_on_endpoint(config), c.depends);
    std::vector<bool> locals = {false, true};
    if (c.here) locals = {*c.here};
    for (bool local : locals) {
      SCOPED_TRACE(local ? "endpoint on this host" : "endpoint elsewhere");
      const HostingPlan plan = plan_hosting(config, local);
      EXPECT_EQ(plan.host, c.host);
      EXPECT_EQ(plan.listen, c.listen);
      EXPECT_EQ(plan.bind_address, c.bind_address);
      EXPECT_EQ(plan.must_bind, c.must_bind);
      EXPECT_EQ(plan.store_address, c.store_address);
      EXPECT_EQ(plan.node_rank, c.node_rank);
    }
  }
}

}  // namespace
}  // namespace kubedist::launcher
