// The CLI/env mapping, checked against torchrun's documented flag and variable names.
#include "cli/launch_config.h"
#include "parsed_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <regex>
#include <sstream>

#include <csignal>

namespace kubedist::launcher {
namespace {

using Args = std::vector<std::string>;

using testing::parse_ok;

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
        {"MASTER_PORT", "29500"}, {"KUBEDIST_JOB", "j"}},
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
  Env env = {{"MASTER_PORT", "1000"}, {"PET_MASTER_PORT", "2000"}, {"NNODES", "3"}, {"KUBEDIST_JOB", "j"}};
  EXPECT_EQ(parse_ok({"--master-port=3000", "t.py"}, env).master_port, 3000);
  EXPECT_EQ(parse_ok({"t.py"}, env).master_port, 2000);
  EXPECT_EQ(parse_ok({"t.py"}, {{"MASTER_PORT", "1000"}, {"KUBEDIST_JOB", "j"}}).master_port, 1000);
  EXPECT_EQ(parse_ok({"t.py"}, env).max_nodes, 3);
  EXPECT_EQ(parse_ok({"--nnodes=1", "t.py"}, env).max_nodes, 1);
}

TEST(LaunchConfig, KnowsWhetherTheStoreAddressWasGivenOrOnlyDefaulted) {
  auto c10d = parse_ok({"--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=10.0.0.1:29400", "t.py"});
  EXPECT_FALSE(c10d.master_addr_given);
  EXPECT_FALSE(c10d.master_port_given);
  auto both = parse_ok({"--nnodes=2", "--master-addr=h", "t.py"}, {{"PET_MASTER_PORT", "1234"}});
  EXPECT_TRUE(both.master_addr_given);
  EXPECT_TRUE(both.master_port_given);
  auto port_only = parse_ok({"--nnodes=2", "--master_port=29876", "t.py"});
  EXPECT_FALSE(port_only.master_addr_given);
  EXPECT_TRUE(port_only.master_port_given);
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
  auto cfg = parse_ok({"t.py"}, {{"MASTER_ADDR", "j-node-0.j.ns.svc"}, {"MASTER_PORT", "29500"}, {"NNODES", "2"},
                                 {"KUBEDIST_JOB", "j"}});
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
  EXPECT_TRUE(parse_ok({"--nnodes=2", "t.py"}, {{"NODE_RANK", "1"}, {"KUBEDIST_JOB", "j"}}).node_rank_given);
  EXPECT_TRUE(parse_ok({"--nnodes=2", "t.py"}, {{"PET_NODE_RANK", "1"}}).node_rank_given);
}

TEST(LaunchConfig, ASpareNamesANodeRankOtherThanZeroInAMultiNodeJob) {
  const LaunchConfig flag = parse_ok({"--nnodes=2", "--node-rank=3", "--spare", "t.py"});
  EXPECT_TRUE(flag.spare);
  EXPECT_EQ(flag.node_rank, 3) << "a spare's node rank may be at or above the number of nodes";
  EXPECT_TRUE(parse_ok({"--nnodes=1:4", "t.py"}, {{"NODE_RANK", "4"}, {"KUBEDIST_JOB", "j"}, {"KUBEDIST_SPARE", "1"}})
                  .spare);
  EXPECT_FALSE(parse_ok({"--nnodes=2", "--node-rank=1", "t.py"}, {{"KUBEDIST_SPARE", "0"}}).spare);
  const std::pair<std::vector<std::string>, std::string> bad[] = {
      {{"--nnodes=2", "--node-rank=0", "--spare", "t.py"},
       "--spare: needs a --node-rank other than 0 (node 0 hosts the rendezvous)"},
      {{"--nnodes=2", "--spare", "t.py"}, "--spare: needs a --node-rank other than 0 (node 0 hosts the rendezvous)"},
      {{"--nnodes=1", "--node-rank=1", "--spare", "t.py"},
       "--spare: only for a multi-node job (a spare stands in for a lost node)"},
      {{"--standalone", "--spare", "t.py"}, "--spare: only for a multi-node job (a spare stands in for a lost node)"},
      {{"--nnodes=2", "--node-rank=2", "t.py"}, "--node-rank: 2 is not below the maximum number of nodes (2)"},
  };
  for (const auto& [args, want] : bad) {
    auto r = parse_launch_config(args, {});
    ASSERT_FALSE(r.ok()) << args[1];
    EXPECT_EQ(r.error(), want);
  }
}

TEST(LaunchConfig, OperatorsPlainEnvAppliesOnlyInATrainingJobPod) {
  const Env shell = {{"NNODES", "2"}, {"NODE_RANK", "1"}, {"NPROC_PER_NODE", "4"}, {"MASTER_ADDR", "far"},
                     {"MASTER_PORT", "1234"}};
  auto outside = parse_ok({"--nproc-per-node=2", "t.py"}, shell);
  EXPECT_FALSE(outside.in_training_job);
  EXPECT_EQ(outside.max_nodes, 1);
  EXPECT_EQ(outside.node_rank, 0);
  EXPECT_FALSE(outside.node_rank_given);
  EXPECT_EQ(outside.nproc_per_node, "2");
  EXPECT_EQ(outside.master_addr, "127.0.0.1");
  EXPECT_EQ(outside.master_port, 29500);
  // Named so users see why; NPROC_PER_NODE was overridden by the flag anyway.
  EXPECT_EQ(outside.ignored_env, (std::vector<std::string>{"NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT"}));
  EXPECT_TRUE(outside.from_env.empty());

  Env pod = shell;
  pod["KUBEDIST_JOB"] = "resnet";
  auto inside = parse_ok({"t.py"}, pod);
  EXPECT_TRUE(inside.in_training_job);
  EXPECT_EQ(inside.max_nodes, 2);
  EXPECT_EQ(inside.node_rank, 1);
  EXPECT_EQ(inside.nproc_per_node, "4");
  EXPECT_EQ(inside.master_addr, "far");
  EXPECT_EQ(inside.master_port, 1234);
  EXPECT_TRUE(inside.ignored_env.empty());
  EXPECT_EQ(parse_ok({"t.py"}, {{"NNODES", "2"}, {"KUBEDIST_JOB", ""}}).max_nodes, 1);  // empty is unset
}

TEST(LaunchConfig, PetEnvAndKubedistEnvApplyEverywhere) {
  const Env env = {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"KUBEDIST_RESTART_POLICY", "ExitCode"},
                   {"KUBEDIST_METRICS_PORT", "9402"}};
  auto c = parse_ok({"t.py"}, env);
  EXPECT_EQ(c.max_nodes, 2);
  EXPECT_EQ(c.node_rank, 1);
  EXPECT_TRUE(c.permanent_exit_codes);
  EXPECT_EQ(c.metrics_port, 9402);
}

TEST(LaunchConfig, ListsTheSettingsTakenFromTheEnvironmentInFlagOrder) {
  const Env env = {{"PET_NNODES", "2"}, {"NODE_RANK", "1"}, {"PET_MASTER_PORT", "7"}, {"KUBEDIST_JOB", "j"}};
  EXPECT_EQ(parse_ok({"--master-port=8", "t.py"}, env).from_env,
            (std::vector<std::string>{"--nnodes=2 (PET_NNODES)", "--node-rank=1 (NODE_RANK)",
                                      "--rdzv-id=j (KUBEDIST_JOB)"}));
  EXPECT_TRUE(parse_ok({"--nnodes=1", "t.py"}).from_env.empty());
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

TEST(LaunchConfig, TerminationLogComesFromTheFlagOrTheOperatorsEnv) {
  EXPECT_EQ(parse_ok({"t.py"}).termination_log, "");
  EXPECT_EQ(parse_ok({"t.py"}, {{"KUBEDIST_TERMINATION_LOG", "/dev/termination-log"}}).termination_log,
            "/dev/termination-log");
  EXPECT_EQ(parse_ok({"--termination-log=/tmp/t", "t.py"}, {{"KUBEDIST_TERMINATION_LOG", "/dev/x"}}).termination_log,
            "/tmp/t");
  EXPECT_EQ(parse_ok({"t.py"}, {{"KUBEDIST_TERMINATION_LOG", ""}}).termination_log, "") << "empty is unset, as for every variable";
}

TEST(LaunchConfig, HangTimeoutAndStragglerRuleComeFromFlagsOrTheOperatorsPetEnv) {
  const LaunchConfig defaults = parse_ok({"t.py"});
  EXPECT_EQ(defaults.hang_timeout, 0);
  EXPECT_EQ(defaults.straggler_factor, 1.5);
  EXPECT_EQ(defaults.straggler_steps, 20);
  EXPECT_EQ(parse_ok({"t.py"}, {{"PET_HANG_TIMEOUT", "90"}}).hang_timeout, 90);
  const LaunchConfig set = parse_ok({"--hang-timeout=2.5", "--straggler_factor=2", "--straggler-steps=5", "t.py"});
  EXPECT_EQ(set.hang_timeout, 2.5);
  EXPECT_EQ(set.straggler_factor, 2);
  EXPECT_EQ(set.straggler_steps, 5);
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

TEST(LaunchConfig, LocalRankStyleDefaultsToAutoAndTakesTorch2DashOrTorch1Underscore) {
  EXPECT_EQ(parse_ok({"--legacy-launch", "t.py"}).local_rank_style, "auto");
  EXPECT_EQ(parse_ok({"--legacy-launch", "t.py"}).local_rank_arg, "--local-rank") << "until auto has chosen";
  EXPECT_EQ(parse_ok({"--legacy-launch", "--local-rank-style=auto", "t.py"}).local_rank_style, "auto");
  EXPECT_EQ(parse_ok({"--legacy-launch", "--local-rank-style=dash", "t.py"}).local_rank_arg, "--local-rank");
  EXPECT_EQ(parse_ok({"--legacy-launch", "--local-rank-style=underscore", "t.py"}).local_rank_arg, "--local_rank");
  EXPECT_EQ(parse_ok({"t.py"}, {{"PET_LEGACY_LAUNCH", "1"}, {"PET_LOCAL_RANK_STYLE", "underscore"}}).local_rank_arg,
            "--local_rank");
}

TEST(LaunchConfig, TheLegacyFormComesFromThePodsEnvUnderKubedistOrPetNames) {
  // How the operator and `kubectl kubedist run` ask for it without a CRD field.
  const auto k = parse_ok({"--no-python", "--", "python", "t.py"},
                          {{"KUBEDIST_LEGACY_LAUNCH", "1"}, {"KUBEDIST_LOCAL_RANK_STYLE", "underscore"}});
  EXPECT_TRUE(k.legacy_launch);
  EXPECT_EQ(k.local_rank_arg, "--local_rank");
  EXPECT_EQ(k.from_env, (std::vector<std::string>{"--legacy-launch=1 (KUBEDIST_LEGACY_LAUNCH)",
                                                  "--local-rank-style=underscore (KUBEDIST_LOCAL_RANK_STYLE)"}));
  EXPECT_TRUE(parse_ok({"t.py"}, {{"KUBEDIST_LEGACY_LAUNCH", "true"}, {"KUBEDIST_USE_ENV", "true"}}).use_env);
  const auto pet = parse_ok({"t.py"}, {{"PET_LEGACY_LAUNCH", "1"}, {"KUBEDIST_LEGACY_LAUNCH", "0"}});
  EXPECT_TRUE(pet.legacy_launch) << "PET_* is above the operator's env";
  EXPECT_FALSE(parse_ok({"t.py"}, {{"KUBEDIST_LEGACY_LAUNCH", "0"}}).legacy_launch);
}

TEST(LaunchConfig, TheStopTimeoutComesFromTheOperatorsEnvBelowFlagAndPet) {
  EXPECT_EQ(parse_ok({"t.py"}).stop_timeout, 30) << "torchrun 2.15's --shutdown-timeout default";
  EXPECT_EQ(parse_ok({"t.py"}, {{"KUBEDIST_STOP_TIMEOUT", "28"}}).stop_timeout, 28);
  EXPECT_EQ(parse_ok({"t.py"}, {{"KUBEDIST_STOP_TIMEOUT", "1.5"}, {"PET_STOP_TIMEOUT", "3"}}).stop_timeout, 3);
  EXPECT_EQ(parse_ok({"--stop-timeout=4", "t.py"}, {{"KUBEDIST_STOP_TIMEOUT", "28"}}).stop_timeout, 4);
}

TEST(LaunchConfig, AnEndpointIsGivenOnlyWhenNamed) {
  EXPECT_FALSE(parse_ok({"t.py"}).rdzv_endpoint_given);
  EXPECT_FALSE(parse_ok({"--nnodes=2", "--master-addr=h", "t.py"}).rdzv_endpoint_given);
  EXPECT_TRUE(parse_ok({"--rdzv-endpoint=127.0.0.1:5", "t.py"}).rdzv_endpoint_given);
  EXPECT_TRUE(parse_ok({"t.py"}, {{"PET_RDZV_ENDPOINT", "h"}}).rdzv_endpoint_given);
  EXPECT_FALSE(parse_ok({"--standalone", "--rdzv-endpoint=h:5", "t.py"}).rdzv_endpoint_given);
}

TEST(LaunchConfig, RendezvousSecretFileAndIdleTimeoutComeFromFlagPetOrOperatorEnv) {
  EXPECT_EQ(parse_ok({"t.py"}).rdzv_secret_file, "");
  EXPECT_EQ(parse_ok({"t.py"}).idle_timeout, 15);
  EXPECT_EQ(parse_ok({"--rdzv-secret-file=/s", "t.py"}).rdzv_secret_file, "/s");
  EXPECT_EQ(parse_ok({"t.py"}, {{"PET_RDZV_SECRET_FILE", "/p"}, {"KUBEDIST_RDZV_SECRET_FILE", "/k"}}).rdzv_secret_file, "/p");
  EXPECT_EQ(parse_ok({"t.py"}, {{"KUBEDIST_RDZV_SECRET_FILE", "/k"}}).rdzv_secret_file, "/k");
  EXPECT_EQ(parse_ok({"t.py"}, {{"KUBEDIST_RDZV_SECRET_FILE", "/k"}, {"KUBEDIST_RDZV_SECRET_FINGERPRINT", "0123456789abcdef"}})
                .rdzv_secret_fingerprint,
            "0123456789abcdef");
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
      {{"t.py"}, {{"NPROC_PER_NODE", "many"}, {"KUBEDIST_JOB", "j"}}, "NPROC_PER_NODE"},
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
      {{"--rdzv-secret-fingerprint=0123456789abcdef", "t.py"}, {}, "only applies with --rdzv-secret-file"},
      {{"--rdzv-secret-file=/s", "--rdzv-secret-fingerprint=abc", "t.py"}, {}, "16 lower-case hex digits"},
      {{"t.py"}, {{"KUBEDIST_RDZV_SECRET_FILE", "/k"}, {"KUBEDIST_RDZV_SECRET_FINGERPRINT", "0123456789ABCDEF"}},
       "KUBEDIST_RDZV_SECRET_FINGERPRINT"},
      {{"--node-rank=2", "--nnodes=2", "t.py"}, {}, "--node-rank"},
      {{"--bogus", "t.py"}, {}, "unknown flag '--bogus'"},
      {{"--standalone=1", "t.py"}, {}, "takes no value"},
      {{"--nnodes"}, {}, "needs a value"},
      {{"--nnodes=2"}, {}, "missing the training script"},
      {{"-m", "--no-python", "mod"}, {}, "cannot be combined"},
      {{"t.py"}, {{"PET_STANDALONE", "maybe"}}, "PET_STANDALONE"},
      {{"t.py"}, {{"KUBEDIST_METRICS_PORT", "x"}}, "KUBEDIST_METRICS_PORT"},
      {{"--legacy-launch", "--local-rank-style=snake", "t.py"}, {}, "--local-rank-style: expected auto"},
      {{"--legacy-launch", "t.py"}, {{"KUBEDIST_LOCAL_RANK_STYLE", "Underscore"}}, "KUBEDIST_LOCAL_RANK_STYLE: expected auto"},
      {{"t.py"}, {{"KUBEDIST_LEGACY_LAUNCH", "maybe"}}, "KUBEDIST_LEGACY_LAUNCH: expected 1/0/true/false"},
      {{"t.py"}, {{"KUBEDIST_USE_ENV", "2"}}, "KUBEDIST_USE_ENV: expected 1/0/true/false"},
      {{"t.py"}, {{"KUBEDIST_STOP_TIMEOUT", "-1"}}, "KUBEDIST_STOP_TIMEOUT: expected a number of seconds >= 0"},
      {{"t.py"}, {{"KUBEDIST_STOP_TIMEOUT", "30s"}}, "KUBEDIST_STOP_TIMEOUT: expected a number of seconds >= 0"},
      {{"t.py"}, {{"KUBEDIST_LOCAL_RANK_STYLE", "dash"}}, "KUBEDIST_LOCAL_RANK_STYLE: only applies with --legacy-launch"},
      {{"--legacy-launch", "t.py"}, {{"PET_LOCAL_RANK_STYLE", "--local_rank"}}, "PET_LOCAL_RANK_STYLE: expected"},
      {{"--local-rank-style=underscore", "t.py"}, {}, "only applies with --legacy-launch"},
      {{"t.py"}, {{"KUBEDIST_RESTART_POLICY", "exitcode"}}, "KUBEDIST_RESTART_POLICY: expected OnFailure, Never or ExitCode"},
      {{"--termination-log=", "t.py"}, {}, "--termination-log: expected a file path"},
      {{"--hang-timeout=-5", "t.py"}, {}, "--hang-timeout: expected a number of seconds >= 0"},
      {{"t.py"}, {{"PET_HANG_TIMEOUT", "10m"}}, "PET_HANG_TIMEOUT: expected a number of seconds >= 0"},
      // Huge graces would overflow the clock arithmetic they feed.
      {{"--shutdown-timeout=1e300", "t.py"}, {}, "--shutdown-timeout: expected at most 100000000 seconds (about 3 years)"},
      {{"t.py"}, {{"KUBEDIST_STOP_TIMEOUT", "9223372036854775807"}}, "KUBEDIST_STOP_TIMEOUT: expected at most 100000000"},
      {{"--hang-timeout=100000001", "t.py"}, {}, "--hang-timeout: expected at most 100000000 seconds"},
      {{"--rdzv-conf=join_timeout=1e18", "t.py"}, {}, "join_timeout: expected at most 100000000 seconds"},
      {{"--rdzv-conf=idle_timeout=1e10", "t.py"}, {}, "idle_timeout: expected at most 100000000 seconds"},
      {{"--straggler-factor=1", "t.py"}, {}, "--straggler-factor: expected a number above 1"},
      {{"--straggler-factor=x", "t.py"}, {}, "--straggler-factor: expected a number above 1"},
      {{"--straggler-steps=0", "t.py"}, {}, "--straggler-steps: expected a positive integer"},
  };
  for (const auto& c : cases) {
    auto r = parse_launch_config(c.args, c.env);
    ASSERT_FALSE(r.ok()) << "accepted: " << ::testing::PrintToString(c.args);
    EXPECT_NE(r.error().find(c.expected_fragment), std::string::npos) << r.error();
    EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
  }
}

TEST(LaunchConfig, PythonExecNamesTheInterpreterElsePython3) {
  EXPECT_EQ(parse_ok({"t.py"}).python, "python3");
  EXPECT_EQ(parse_ok({"t.py"}).python_source, "");
  const auto c = parse_ok({"t.py"}, {{"PYTHON_EXEC", "/venv/bin/python"}});
  EXPECT_EQ(c.python, "/venv/bin/python");
  EXPECT_EQ(c.python_source, "PYTHON_EXEC");
  EXPECT_EQ(c.from_env, std::vector<std::string>{"interpreter /venv/bin/python (PYTHON_EXEC)"});
  EXPECT_TRUE(parse_ok({"--no-python", "prog"}, {{"PYTHON_EXEC", "/venv/bin/python"}}).from_env.empty());
}

TEST(LaunchConfig, HelpFitsInTheRepositorysLineLength) {
  std::istringstream in(usage_text());
  for (std::string line; std::getline(in, line);) {
    EXPECT_LE(line.size(), 118u) << line;
  }
}

TEST(LaunchConfig, HelpNeedsNoScript) {
  EXPECT_TRUE(parse_ok({"--help"}).help);
  EXPECT_TRUE(parse_ok({"-h"}).help);
}

// One row per flag of --help: a value and what it sets. Every row is tried in each spelling the flag has: --flag=V,
// --flag V, the underscore forms, the short alias, PET_<NAME> and the operator's variable that --help names.
struct FlagCase {
  std::string name;          // as --help spells it, without "--"
  std::string value;         // "": a boolean flag (set as --flag, or 1 in the environment)
  Args extra;                // what the flag needs beside it
  std::function<void(const LaunchConfig&)> check;
};

const std::vector<FlagCase>& flag_cases() {
  using C = const LaunchConfig&;
  static const std::vector<FlagCase> cases = {
      {"nnodes", "2:3", {}, [](C c) { EXPECT_EQ(c.min_nodes, 2); EXPECT_EQ(c.max_nodes, 3); }},
      {"nproc-per-node", "cpu", {}, [](C c) { EXPECT_EQ(c.nproc_per_node, "cpu"); }},
      {"node-rank", "3", {"--nnodes=4"}, [](C c) { EXPECT_EQ(c.node_rank, 3); EXPECT_TRUE(c.node_rank_given); }},
      {"master-addr", "10.1.1.1", {},
       [](C c) { EXPECT_EQ(c.master_addr, "10.1.1.1"); EXPECT_TRUE(c.master_addr_given); EXPECT_EQ(c.rdzv_host, "10.1.1.1"); }},
      {"master-port", "4321", {},
       [](C c) { EXPECT_EQ(c.master_port, 4321); EXPECT_TRUE(c.master_port_given); EXPECT_EQ(c.rdzv_port, 4322); }},
      {"rdzv-endpoint", "10.0.0.1:1234", {},
       [](C c) { EXPECT_EQ(c.rdzv_host, "10.0.0.1"); EXPECT_EQ(c.rdzv_port, 1234); EXPECT_TRUE(c.rdzv_endpoint_given); }},
      {"rdzv-id", "run7", {}, [](C c) { EXPECT_EQ(c.run_id, "run7"); }},
      {"rdzv-backend", "static", {}, [](C) {}},
      {"rdzv-conf", "join_timeout=7,idle_timeout=2", {},
       [](C c) { EXPECT_EQ(c.join_timeout, 7); EXPECT_EQ(c.idle_timeout, 2); }},
      {"rdzv-secret-file", "/s", {}, [](C c) { EXPECT_EQ(c.rdzv_secret_file, "/s"); }},
      {"rdzv-secret-fingerprint", "0123456789abcdef", {"--rdzv-secret-file=/s"},
       [](C c) { EXPECT_EQ(c.rdzv_secret_fingerprint, "0123456789abcdef"); }},
      {"rdzv-trace", "/t", {}, [](C c) { EXPECT_EQ(c.rdzv_trace, "/t"); }},
      {"standalone", "", {}, [](C c) { EXPECT_TRUE(c.standalone); EXPECT_EQ(c.master_port, 0); }},
      {"spare", "", {"--nnodes=2", "--node-rank=10000"}, [](C c) { EXPECT_TRUE(c.spare); }},
      {"topology-domain-file", "/d", {}, [](C c) { EXPECT_EQ(c.topology_domain_file, "/d"); }},
      {"max-restarts", "5", {}, [](C c) { EXPECT_EQ(c.max_restarts, 5); }},
      {"restart-policy", "ExitCode", {}, [](C c) { EXPECT_TRUE(c.permanent_exit_codes); }},
      {"monitor-interval", "0.5", {}, [](C c) { EXPECT_EQ(c.monitor_interval, 0.5); }},
      {"start-method", "fork", {}, [](C) {}},
      {"role", "trainer", {}, [](C c) { EXPECT_EQ(c.role, "trainer"); }},
      {"no-python", "", {}, [](C c) { EXPECT_TRUE(c.no_python); }},
      {"module", "", {}, [](C c) { EXPECT_TRUE(c.module); }},
      {"run-path", "", {}, [](C) {}},
      {"redirects", "0:1,1:2", {}, [](C c) { EXPECT_EQ(c.redirects.for_local_rank(1), 2); }},
      {"tee", "2", {}, [](C c) { EXPECT_EQ(c.tee.all, 2); }},
      {"log-dir", "/l", {}, [](C c) { EXPECT_EQ(c.log_dir, "/l"); }},
      {"local-ranks-filter", "1,2", {}, [](C c) { EXPECT_EQ(c.local_ranks_filter, (std::set<int>{1, 2})); }},
      {"use-env", "", {}, [](C c) { EXPECT_TRUE(c.use_env); }},
      {"legacy-launch", "", {}, [](C c) { EXPECT_TRUE(c.legacy_launch); }},
      {"local-rank-style", "underscore", {"--legacy-launch"},
       [](C c) { EXPECT_EQ(c.local_rank_style, "underscore"); EXPECT_EQ(c.local_rank_arg, "--local_rank"); }},
      {"shutdown-timeout", "4.5", {}, [](C c) { EXPECT_EQ(c.stop_timeout, 4.5); }},
      {"signals-to-handle", "SIGUSR1,SIGTERM", {},
       [](C c) {
         EXPECT_EQ(c.signals_to_handle, (std::vector<int>{SIGUSR1, SIGTERM}));
         EXPECT_EQ(c.signals_to_handle_text, "SIGUSR1,SIGTERM");
       }},
      {"virtual-local-rank", "", {}, [](C c) { EXPECT_TRUE(c.virtual_local_rank); }},
      {"numa-binding", "socket", {}, [](C c) { EXPECT_EQ(c.numa_binding, "socket"); }},
      {"local-addr", "10.0.0.9", {}, [](C c) { EXPECT_EQ(c.local_addr, "10.0.0.9"); }},
      {"logs-specs", "custom", {}, [](C c) { ASSERT_EQ(c.notes.size(), 1u); EXPECT_NE(c.notes[0].find("=custom names a Python entry point"), std::string::npos); }},
      {"event-log-handler", "console", {}, [](C c) { ASSERT_EQ(c.notes.size(), 1u); EXPECT_NE(c.notes[0].find("=console names a Python event handler"), std::string::npos); }},
      {"print-completion", "zsh", {}, [](C c) { EXPECT_EQ(c.print_completion, "zsh"); }},
      {"log-line-prefix-template", "${rank}| ", {}, [](C c) { EXPECT_EQ(c.log_line_prefix_template, "${rank}| "); }},
      {"duplicate-stdout-filters", "a,,b,c", {},
       [](C c) { EXPECT_EQ(c.duplicate_stdout_filters, (std::vector<std::string>{"a,b", "c"})); }},
      {"duplicate-stderr-filters", "E", {}, [](C c) { EXPECT_EQ(c.duplicate_stderr_filters, (std::vector<std::string>{"E"})); }},
      {"hang-timeout", "60", {}, [](C c) { EXPECT_EQ(c.hang_timeout, 60); }},
      {"straggler-factor", "3", {}, [](C c) { EXPECT_EQ(c.straggler_factor, 3); }},
      {"straggler-steps", "7", {}, [](C c) { EXPECT_EQ(c.straggler_steps, 7); }},
      {"metrics-port", "9402", {}, [](C c) { EXPECT_EQ(c.metrics_port, 9402); }},
      {"metrics-addr", "127.0.0.2", {}, [](C c) { EXPECT_EQ(c.metrics_addr, "127.0.0.2"); }},
      {"termination-log", "/tl", {}, [](C c) { EXPECT_EQ(c.termination_log, "/tl"); }},
      {"help", "", {}, [](C c) { EXPECT_TRUE(c.help); }},
  };
  return cases;
}

// A flag of --help: its name, short alias ("" for none) and the variables it names besides PET_<NAME> (torchrun's
// own, then the operator's).
struct HelpFlag {
  std::string name, short_alias;
  std::vector<std::string> envs;
  bool pod_only = false;
};

std::vector<std::string> split_envs(const std::string& list) {
  std::vector<std::string> out;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item.substr(item.find_first_not_of(' ')));
  return out;
}

// torchrun reads no PET_ twin for --print-completion (argparse prints and exits where it meets the flag).
bool has_pet(const std::string& flag) { return flag != "print-completion"; }

std::vector<HelpFlag> help_flags() {
  static const std::regex line(R"(^  (?:(-\w), )?--([a-z][a-z-]*).*?(?: \(env ([A-Z_, ]+?)( in a pod)?\))?$)");
  const std::string continued(37, ' ');  // a description broken onto the next line
  std::vector<std::string> entries;
  std::istringstream in(usage_text());
  for (std::string text; std::getline(in, text);) {
    if (text.rfind("  -", 0) == 0) entries.push_back(text);
    else if (text.rfind(continued, 0) == 0 && !entries.empty()) entries.back() += " " + text.substr(continued.size());
  }
  std::vector<HelpFlag> flags;
  for (const auto& entry : entries) {
    std::smatch m;
    if (std::regex_match(entry, m, line)) flags.push_back({m[2], m[1], split_envs(m[3]), m[4].matched});
  }
  return flags;
}

std::string pet(std::string name) {
  std::string out = "PET_";
  for (char ch : name) out += ch == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

TEST(LaunchConfig, EveryFlagOfHelpTakesEverySpellingItHas) {
  const auto help = help_flags();
  ASSERT_EQ(help.size(), flag_cases().size()) << "a flag of --help without a row here, or a row without a flag";
  ASSERT_EQ(help.front().envs, std::vector<std::string>{"NNODES"}) << "--help's (env NAME in a pod) read";
  ASSERT_TRUE(help.front().pod_only);
  for (const auto& flag : help) {
    SCOPED_TRACE("--" + flag.name);
    const auto row = std::find_if(flag_cases().begin(), flag_cases().end(),
                                  [&](const FlagCase& c) { return c.name == flag.name; });
    ASSERT_NE(row, flag_cases().end()) << "no row for it";
    std::string underscore = flag.name;
    std::replace(underscore.begin(), underscore.end(), '-', '_');
    std::vector<std::pair<Args, Env>> spellings;
    auto args = [&](Args flag_args) {
      Args all = row->extra;
      all.insert(all.end(), flag_args.begin(), flag_args.end());
      all.push_back("t.py");
      return all;
    };
    const std::string value = row->value.empty() ? "1" : row->value;
    for (const std::string& name : {flag.name, underscore}) {
      if (row->value.empty()) {
        spellings.push_back({args({"--" + name}), {}});
      } else {
        spellings.push_back({args({"--" + name + "=" + value}), {}});
        spellings.push_back({args({"--" + name, value}), {}});
      }
    }
    if (!flag.short_alias.empty())
      spellings.push_back({args(row->value.empty() ? Args{flag.short_alias} : Args{flag.short_alias, value}), {}});
    if (has_pet(flag.name)) spellings.push_back({args({}), {{pet(flag.name), value}}});
    for (const auto& name : flag.envs) {
      Env env = {{name, value}};
      if (flag.pod_only) env["KUBEDIST_JOB"] = "j";
      spellings.push_back({args({}), env});
    }
    for (const auto& [spelled, env] : spellings) {
      SCOPED_TRACE(::testing::PrintToString(spelled) + " " + ::testing::PrintToString(env));
      const LaunchConfig c = parse_ok(spelled, env);
      row->check(c);
      if (c.help || env.empty()) continue;
      std::string source = pet(flag.name);
      for (const auto& name : flag.envs)
        if (env.count(name)) source = name;
      const std::string noted = "--" + flag.name + "=" + value + " (" + source + ")";
      EXPECT_NE(std::find(c.from_env.begin(), c.from_env.end(), noted), c.from_env.end())
          << "not said: " << noted;
    }
  }
}

// A value each flag refuses (booleans: in the environment; every boolean flag refuses a value after it), and the
// flags that take any text. --run-path is accepted and ignored, also as PET_RUN_PATH whatever it holds.
TEST(LaunchConfig, EveryFlagOfHelpRefusesABadValueInOneLineNamingWhereItCameFrom) {
  const std::map<std::string, std::string> bad = {
      {"nnodes", "0"},           {"nproc-per-node", "0"},       {"node-rank", "-1"},
      {"master-addr", "a b"},    {"master-port", "0"},          {"rdzv-endpoint", "h:x"},
      {"rdzv-id", "a b"},        {"rdzv-backend", "etcd"},      {"rdzv-conf", "x"},
      {"rdzv-secret-file", ""},  {"rdzv-trace", ""},            {"standalone", "maybe"},
      {"rdzv-secret-fingerprint", "0123456789abcdeF"}, {"spare", "maybe"}, {"topology-domain-file", ""},
      {"max-restarts", "-1"},    {"restart-policy", "always"},  {"monitor-interval", "x"},
      {"start-method", "thread"}, {"role", ""},                 {"no-python", "maybe"},
      {"module", "maybe"},       {"run-path", ""},         {"redirects", "4"},
      {"tee", "0:4"},            {"local-ranks-filter", "a"},   {"use-env", "maybe"},
      {"legacy-launch", "maybe"}, {"local-rank-style", "snake"}, {"shutdown-timeout", "-1"},
      {"signals-to-handle", "SIGKILL"}, {"virtual-local-rank", "maybe"}, {"numa-binding", "far"},
      {"local-addr", "a b"},     {"logs-specs", "a b"},         {"event-log-handler", "a b"},
      {"print-completion", "fish"}, {"log-line-prefix-template", "${rnak}"},
      {"duplicate-stdout-filters", "a,"}, {"duplicate-stderr-filters", ","},
      {"hang-timeout", "1m"},    {"straggler-factor", "1"},     {"straggler-steps", "0"},
      {"metrics-port", "70000"}, {"termination-log", ""},       {"help", "maybe"},
  };
  const std::set<std::string> any_text = {"log-dir", "metrics-addr"};
  for (const auto& flag : help_flags()) {
    SCOPED_TRACE("--" + flag.name);
    const auto row = std::find_if(flag_cases().begin(), flag_cases().end(),
                                  [&](const FlagCase& c) { return c.name == flag.name; });
    ASSERT_NE(row, flag_cases().end());
    if (any_text.count(flag.name)) continue;
    ASSERT_TRUE(bad.count(flag.name)) << "no bad value for it";
    const std::string value = bad.at(flag.name);
    std::string underscore = flag.name;
    std::replace(underscore.begin(), underscore.end(), '-', '_');
    struct Try {
      Args args;
      Env env;
      std::string starts;  // the error's first words
    };
    std::vector<Try> tries;
    auto args = [&](Args flag_args) {
      Args all = row->extra;
      all.insert(all.end(), flag_args.begin(), flag_args.end());
      all.push_back("t.py");
      return all;
    };
    const std::string canonical = "--" + flag.name;
    if (row->value.empty()) {
      tries.push_back({args({"--" + underscore + "=1"}), {}, canonical + " takes no value"});
    } else {
      for (const std::string& name : {flag.name, underscore}) {
        tries.push_back({args({"--" + name + "=" + value}), {}, canonical + ":"});
        tries.push_back({args({"--" + name, value}), {}, canonical + ":"});
      }
      if (!flag.short_alias.empty()) tries.push_back({args({flag.short_alias, value}), {}, flag.short_alias + ":"});
    }
    if (!value.empty()) {  // an empty variable is unset
      if (has_pet(flag.name)) tries.push_back({args({}), {{pet(flag.name), value}}, pet(flag.name) + ":"});
      for (const auto& name : flag.envs) {
        Env env = {{name, value}};
        if (flag.pod_only) env["KUBEDIST_JOB"] = "j";
        tries.push_back({args({}), env, name + ":"});
      }
    }
    for (const auto& t : tries) {
      SCOPED_TRACE(::testing::PrintToString(t.args) + " " + ::testing::PrintToString(t.env));
      auto r = parse_launch_config(t.args, t.env);
      ASSERT_FALSE(r.ok()) << "accepted";
      EXPECT_EQ(r.error().rfind(t.starts, 0), 0u) << r.error();
      EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
    }
  }
}

}  // namespace
}  // namespace kubedist::launcher
