// The CLI/env mapping, checked against torchrun's documented flag and variable names.
#include "launch_config.h"

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

using Args = std::vector<std::string>;

LaunchConfig parse_ok(const Args& args, const Env& env = {}) {
  auto r = parse_launch_config(args, env);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.value() : LaunchConfig{};
}

struct SpellingCase {
  Args args;
  Env env;
  int min_nodes, max_nodes;
  std::string nproc;
  int node_rank;
  std::string master_addr;
  int master_port;
};

TEST(LaunchConfig, AcceptsDashAndUnderscoreSpellingsAndEnvEquivalents) {
  const std::vector<SpellingCase> cases = {
      {{"--nnodes=2", "--nproc-per-node=4", "--node-rank=1", "--master-addr=m", "--master-port=1234", "t.py"},
       {}, 2, 2, "4", 1, "m", 1234},
      {{"--nnodes", "1:3", "--nproc_per_node", "auto", "--node_rank", "2", "--master_addr", "h", "--master_port",
        "99", "t.py"},
       {}, 1, 3, "auto", 2, "h", 99},
      {{"t.py"},
       {{"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "gpu"}, {"PET_NODE_RANK", "1"}, {"PET_MASTER_ADDR", "p"},
        {"PET_MASTER_PORT", "7"}},
       2, 2, "gpu", 1, "p", 7},
      {{"t.py"},
       {{"NNODES", "2:4"}, {"NPROC_PER_NODE", "cpu"}, {"NODE_RANK", "3"}, {"MASTER_ADDR", "j-node-0.j.ns.svc"},
        {"MASTER_PORT", "29500"}},
       2, 4, "cpu", 3, "j-node-0.j.ns.svc", 29500},
      {{"t.py"}, {}, 1, 1, "1", 0, "127.0.0.1", 29500},
  };
  for (const auto& c : cases) {
    auto cfg = parse_ok(c.args, c.env);
    EXPECT_EQ(cfg.min_nodes, c.min_nodes);
    EXPECT_EQ(cfg.max_nodes, c.max_nodes);
    EXPECT_EQ(cfg.nproc_per_node, c.nproc);
    EXPECT_EQ(cfg.node_rank, c.node_rank);
    EXPECT_EQ(cfg.master_addr, c.master_addr);
    EXPECT_EQ(cfg.master_port, c.master_port);
    EXPECT_EQ(cfg.command, Args{"t.py"});
  }
}

TEST(LaunchConfig, FlagBeatsPetEnvBeatsOperatorEnvBeatsDefault) {
  Env env = {{"MASTER_PORT", "1000"}, {"PET_MASTER_PORT", "2000"}, {"NNODES", "3"}};
  EXPECT_EQ(parse_ok({"--master-port=3000", "t.py"}, env).master_port, 3000);
  EXPECT_EQ(parse_ok({"t.py"}, env).master_port, 2000);
  EXPECT_EQ(parse_ok({"t.py"}, {{"MASTER_PORT", "1000"}}).master_port, 1000);
  EXPECT_EQ(parse_ok({"t.py"}, env).max_nodes, 3);
  EXPECT_EQ(parse_ok({"--nnodes=1", "t.py"}, env).max_nodes, 1);
}

TEST(LaunchConfig, EveryTorchrunFlagIsSettableFromPetEnv) {
  Env env = {{"PET_RDZV_ENDPOINT", "r:77"}, {"PET_RDZV_ID", "job"},       {"PET_MAX_RESTARTS", "3"},
             {"PET_MONITOR_INTERVAL", "5"}, {"PET_ROLE", "trainer"},     {"PET_NO_PYTHON", "1"},
             {"PET_REDIRECTS", "3"},        {"PET_TEE", "0:1,1:2"},      {"PET_LOG_DIR", "/logs"},
             {"PET_LOCAL_RANKS_FILTER", "0,2"}, {"PET_RDZV_BACKEND", "c10d"}, {"PET_NNODES", "2"},
             {"PET_RDZV_CONF", "join_timeout=12,last_call_timeout=0.5"}};
  auto cfg = parse_ok({"prog"}, env);
  EXPECT_EQ(cfg.rdzv_host, "r");
  EXPECT_EQ(cfg.rdzv_port, 77);
  EXPECT_EQ(cfg.run_id, "job");
  EXPECT_EQ(cfg.max_restarts, 3);
  EXPECT_EQ(cfg.monitor_interval, 5);
  EXPECT_EQ(cfg.role, "trainer");
  EXPECT_TRUE(cfg.no_python);
  EXPECT_EQ(cfg.redirects.for_local_rank(5), 3);
  EXPECT_EQ(cfg.tee.for_local_rank(0), 1);
  EXPECT_EQ(cfg.tee.for_local_rank(1), 2);
  EXPECT_EQ(cfg.tee.for_local_rank(2), 0);
  EXPECT_EQ(cfg.log_dir, "/logs");
  EXPECT_EQ(cfg.local_ranks_filter, (std::set<int>{0, 2}));
  EXPECT_EQ(cfg.join_timeout, 12);
  EXPECT_EQ(cfg.last_call_timeout, 0.5);
}

TEST(LaunchConfig, RendezvousDefaultsToMasterPortPlusOneOnTheMaster) {
  auto cfg = parse_ok({"t.py"}, {{"MASTER_ADDR", "j-node-0.j.ns.svc"}, {"MASTER_PORT", "29500"}, {"NNODES", "2"}});
  EXPECT_EQ(cfg.rdzv_host, "j-node-0.j.ns.svc");
  EXPECT_EQ(cfg.rdzv_port, 29501);
  auto explicit_endpoint = parse_ok({"--rdzv-endpoint=other:5000", "--nnodes=2", "t.py"});
  EXPECT_EQ(explicit_endpoint.rdzv_host, "other");
  EXPECT_EQ(explicit_endpoint.rdzv_port, 5000);
  EXPECT_EQ(parse_ok({"--rdzv_endpoint=other", "t.py"}).rdzv_port, 29400);
}

TEST(LaunchConfig, KnowsWhetherANodeRankWasGiven) {
  EXPECT_FALSE(parse_ok({"--nnodes=2", "t.py"}).node_rank_given);
  EXPECT_TRUE(parse_ok({"--nnodes=2", "--node-rank=0", "t.py"}).node_rank_given);
  EXPECT_TRUE(parse_ok({"--nnodes=2", "t.py"}, {{"NODE_RANK", "1"}}).node_rank_given);
  EXPECT_TRUE(parse_ok({"--nnodes=2", "t.py"}, {{"PET_NODE_RANK", "1"}}).node_rank_given);
}

TEST(LaunchConfig, RunIdDefaultsToTheOperatorsJobName) {
  EXPECT_EQ(parse_ok({"t.py"}).run_id, "none");
  EXPECT_EQ(parse_ok({"t.py"}, {{"KUBEDIST_JOB", "resnet"}}).run_id, "resnet");
  EXPECT_EQ(parse_ok({"--rdzv-id=x", "t.py"}, {{"KUBEDIST_JOB", "resnet"}}).run_id, "x");
}

TEST(LaunchConfig, MetricsEndpointComesFromTheOperatorsEnv) {
  EXPECT_EQ(parse_ok({"t.py"}).metrics_port, -1);
  const auto c = parse_ok({"t.py"}, {{"KUBEDIST_METRICS_PORT", "9402"}, {"KUBEDIST_METRICS_ADDR", "10.1.2.3"}});
  EXPECT_EQ(c.metrics_port, 9402);
  EXPECT_EQ(c.metrics_addr, "10.1.2.3");
  EXPECT_EQ(parse_ok({"--metrics-addr=127.0.0.1", "t.py"}, {{"KUBEDIST_METRICS_ADDR", "10.1.2.3"}}).metrics_addr,
            "127.0.0.1");
}

TEST(LaunchConfig, RestartPolicyExitCodeMakesCodesUpTo127Permanent) {
  EXPECT_FALSE(parse_ok({"t.py"}).permanent_exit_codes);
  EXPECT_FALSE(parse_ok({"t.py"}, {{"KUBEDIST_RESTART_POLICY", "OnFailure"}}).permanent_exit_codes);
  EXPECT_TRUE(parse_ok({"t.py"}, {{"KUBEDIST_RESTART_POLICY", "ExitCode"}}).permanent_exit_codes);
  EXPECT_TRUE(parse_ok({"--restart-policy=ExitCode", "t.py"}).permanent_exit_codes);
}

TEST(LaunchConfig, StandaloneIsOneLocalNodeWithAFreePort) {
  auto cfg = parse_ok({"--standalone", "--nproc_per_node=2", "t.py"}, {{"NNODES", "4"}, {"MASTER_ADDR", "far"}});
  EXPECT_EQ(cfg.max_nodes, 1);
  EXPECT_EQ(cfg.master_addr, "127.0.0.1");
  EXPECT_EQ(cfg.master_port, 0);
  EXPECT_TRUE(parse_ok({"t.py"}, {{"PET_STANDALONE", "1"}}).standalone);
}

TEST(LaunchConfig, OperatorContractEverythingAfterDoubleDashIsTheCommand) {
  auto cfg = parse_ok({"--no-python", "--", "python", "train.py", "--epochs", "10", "--nnodes=9"});
  EXPECT_TRUE(cfg.no_python);
  EXPECT_EQ(cfg.command, (Args{"python", "train.py", "--epochs", "10", "--nnodes=9"}));
  EXPECT_EQ(cfg.max_nodes, 1);
}

TEST(LaunchConfig, ScriptArgumentsAreNotParsedAsFlags) {
  auto cfg = parse_ok({"--nproc-per-node=2", "train.py", "--nnodes=5", "-m"});
  EXPECT_EQ(cfg.command, (Args{"train.py", "--nnodes=5", "-m"}));
  EXPECT_EQ(cfg.max_nodes, 1);
  EXPECT_FALSE(cfg.module);
}

TEST(LaunchConfig, ShortFlagsTakeAttachedOrSeparateValues) {
  for (const auto& args : std::vector<Args>{{"-r3", "-t1", "t.py"}, {"-r", "3", "-t", "1", "t.py"}, {"-r=3", "-t=1", "t.py"}}) {
    auto cfg = parse_ok(args);
    EXPECT_EQ(cfg.redirects.all, 3);
    EXPECT_EQ(cfg.tee.all, 1);
  }
  EXPECT_FALSE(parse_launch_config({"-mx", "t.py"}, {}).ok());
}

TEST(LaunchConfig, ModuleAndLegacyLaunchFlags) {
  auto cfg = parse_ok({"-m", "pkg.train", "x"});
  EXPECT_TRUE(cfg.module);
  EXPECT_EQ(cfg.command, (Args{"pkg.train", "x"}));
  EXPECT_EQ(parse_ok({"--run_path", "--start-method=spawn", "t.py"}).command, Args{"t.py"});
  auto legacy = parse_ok({"--legacy-launch", "--use_env", "t.py"});
  EXPECT_TRUE(legacy.legacy_launch);
  EXPECT_TRUE(legacy.use_env);
}

TEST(LaunchConfig, RendezvousSecretFileAndIdleTimeoutComeFromFlagPetOrOperatorEnv) {
  EXPECT_EQ(parse_ok({"t.py"}).rdzv_secret_file, "");
  EXPECT_EQ(parse_ok({"t.py"}).idle_timeout, 15);
  EXPECT_EQ(parse_ok({"--rdzv-secret-file=/s", "t.py"}).rdzv_secret_file, "/s");
  EXPECT_EQ(parse_ok({"t.py"}, {{"PET_RDZV_SECRET_FILE", "/p"}, {"KUBEDIST_RDZV_SECRET_FILE", "/k"}}).rdzv_secret_file, "/p");
  EXPECT_EQ(parse_ok({"t.py"}, {{"KUBEDIST_RDZV_SECRET_FILE", "/k"}}).rdzv_secret_file, "/k");
  EXPECT_EQ(parse_ok({"--rdzv-conf=idle_timeout=1.5", "t.py"}).idle_timeout, 1.5);
}

TEST(LaunchConfig, RejectsBadInputWithOneLineNamingTheSource) {
  struct Bad {
    Args args;
    Env env;
    std::string expected_fragment;
  };
  const std::vector<Bad> cases = {
      {{"--nnodes=0", "t.py"}, {}, "--nnodes"},
      {{"--nnodes=3:2", "t.py"}, {}, "--nnodes"},
      {{"--nnodes=a", "t.py"}, {}, "expected N or MIN:MAX"},
      {{"t.py"}, {{"PET_NNODES", "x"}}, "PET_NNODES"},
      {{"t.py"}, {{"NPROC_PER_NODE", "many"}}, "NPROC_PER_NODE"},
      {{"--nproc-per-node=0", "t.py"}, {}, "--nproc-per-node"},
      {{"--master-port=70000", "t.py"}, {}, "--master-port"},
      {{"--max-restarts=-1", "t.py"}, {}, "--max-restarts"},
      {{"--monitor-interval=soon", "t.py"}, {}, "--monitor-interval"},
      {{"--redirects=4", "t.py"}, {}, "--redirects"},
      {{"--tee=0:9", "t.py"}, {}, "--tee"},
      {{"--local-ranks-filter=a", "t.py"}, {}, "--local-ranks-filter"},
      {{"--rdzv-endpoint=h:port", "--nnodes=2", "t.py"}, {}, "--rdzv-endpoint"},
      {{"--rdzv-backend=etcd", "t.py"}, {}, "not supported"},
      {{"--rdzv-conf=join_timeout", "t.py"}, {}, "--rdzv-conf"},
      {{"--rdzv-conf=idle_timeout=0", "t.py"}, {}, "--rdzv-conf idle_timeout"},
      {{"--rdzv-conf=idle_timeout=x", "t.py"}, {}, "--rdzv-conf idle_timeout"},
      {{"--rdzv-secret-file=", "t.py"}, {}, "--rdzv-secret-file"},
      {{"--node-rank=2", "--nnodes=2", "t.py"}, {}, "--node-rank"},
      {{"--bogus", "t.py"}, {}, "unknown flag '--bogus'"},
      {{"--standalone=1", "t.py"}, {}, "takes no value"},
      {{"--nnodes"}, {}, "needs a value"},
      {{"--nnodes=2"}, {}, "missing the training script"},
      {{"-m", "--no-python", "mod"}, {}, "cannot be combined"},
      {{"t.py"}, {{"PET_STANDALONE", "maybe"}}, "PET_STANDALONE"},
      {{"t.py"}, {{"KUBEDIST_METRICS_PORT", "x"}}, "KUBEDIST_METRICS_PORT"},
      {{"t.py"}, {{"KUBEDIST_RESTART_POLICY", "exitcode"}}, "KUBEDIST_RESTART_POLICY: expected OnFailure, Never or ExitCode"},
  };
  for (const auto& c : cases) {
    auto r = parse_launch_config(c.args, c.env);
    ASSERT_FALSE(r.ok()) << "accepted: " << ::testing::PrintToString(c.args);
    EXPECT_NE(r.error().find(c.expected_fragment), std::string::npos) << r.error();
    EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
  }
}

TEST(LaunchConfig, HelpNeedsNoScript) {
  EXPECT_TRUE(parse_ok({"--help"}).help);
  EXPECT_TRUE(parse_ok({"-h"}).help);
}

}  // namespace
}  // namespace kubedist::launcher
