// The worker environment contract: torchrun's names and values.
#include "workers/worker_env.h"

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

LaunchConfig config_for(std::vector<std::string> args, Env env = {}) {
  auto r = parse_launch_config(args, env);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.value();
}

TEST(WorkerEnv, SetsEveryTorchrunVariable) {
  auto cfg = config_for({"--nnodes=2", "--max-restarts=3", "--rdzv-id=job", "--role=trainer", "--master-addr=m",
                         "--master-port=29500", "t.py"});
  Assignment a{.round = 2, .restart_count = 1, .group_rank = 1, .group_world_size = 2, .rank_offset = 4,
               .world_size = 8, .master_addr = "", .master_port = 0};
  auto w = render_worker(cfg, a, 4, 3, "/tmp/err.json", {{"PATH", "/usr/bin"}});
  const Env expected = {
      {"LOCAL_RANK", "3"},       {"RANK", "7"},          {"GROUP_RANK", "1"},
      {"ROLE_RANK", "7"},        {"ROLE_NAME", "trainer"}, {"LOCAL_WORLD_SIZE", "4"},
      {"WORLD_SIZE", "8"},       {"GROUP_WORLD_SIZE", "2"}, {"ROLE_WORLD_SIZE", "8"},
      {"MASTER_ADDR", "m"},      {"MASTER_PORT", "29500"}, {"TORCHELASTIC_RESTART_COUNT", "1"},
      {"TORCHELASTIC_MAX_RESTARTS", "3"}, {"TORCHELASTIC_RUN_ID", "job"},
      {"TORCHELASTIC_ERROR_FILE", "/tmp/err.json"}, {"TORCHELASTIC_USE_AGENT_STORE", "False"},
      {"OMP_NUM_THREADS", "1"},  {"NCCL_ASYNC_ERROR_HANDLING", "1"}, {"PATH", "/usr/bin"},
  };
  EXPECT_EQ(w.env, expected);
  EXPECT_EQ(w.argv, (std::vector<std::string>{"python3", "-u", "t.py"}));
}

TEST(WorkerEnv, TheStoreARoundNamesWinsOverTheLaunchersDefaults) {
  auto cfg = config_for({"--nnodes=2", "t.py"});
  Assignment a{.round = 0, .restart_count = 0, .group_rank = 1, .group_world_size = 2, .rank_offset = 1,
               .world_size = 2, .master_addr = "127.0.0.2", .master_port = 41000};
  auto w = render_worker(cfg, a, 1, 0, "e", {});
  EXPECT_EQ(w.env.at("MASTER_ADDR"), "127.0.0.2");
  EXPECT_EQ(w.env.at("MASTER_PORT"), "41000");
  auto plain = render_worker(cfg, Assignment{}, 1, 0, "e", {});
  EXPECT_EQ(plain.env.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(plain.env.at("MASTER_PORT"), "29500");
}

TEST(WorkerEnv, AGivenMasterAddressOrPortWinsOverTheStoreTheRoundNames) {
  Assignment a{.round = 0, .restart_count = 0, .group_rank = 0, .group_world_size = 2, .rank_offset = 0,
               .world_size = 2, .master_addr = "127.0.0.2", .master_port = 41000};
  auto both = render_worker(config_for({"--nnodes=2", "--master-addr=m", "--master-port=1234", "t.py"}), a, 1, 0, "e", {});
  EXPECT_EQ(both.env.at("MASTER_ADDR"), "m");
  EXPECT_EQ(both.env.at("MASTER_PORT"), "1234");
  auto port = render_worker(config_for({"--nnodes=2", "t.py"}, {{"PET_MASTER_PORT", "1234"}}), a, 1, 0, "e", {});
  EXPECT_EQ(port.env.at("MASTER_ADDR"), "127.0.0.2");
  EXPECT_EQ(port.env.at("MASTER_PORT"), "1234");
}

TEST(WorkerEnv, KeepsUserThreadSettingAndDeviceList) {
  auto cfg = config_for({"t.py"});
  auto w = render_worker(cfg, {}, 2, 1, "e", {{"OMP_NUM_THREADS", "8"}, {"CUDA_VISIBLE_DEVICES", "2,3"}});
  EXPECT_EQ(w.env.at("OMP_NUM_THREADS"), "8");
  EXPECT_EQ(w.env.at("CUDA_VISIBLE_DEVICES"), "2,3");  // LOCAL_RANK indexes into it
}

TEST(WorkerEnv, SetsOneOmpThreadOnlyWhenSeveralWorkersShareTheNodeAsTorchrun) {
  auto cfg = config_for({"t.py"});
  EXPECT_EQ(render_worker(cfg, {}, 2, 0, "e", {}).env.count("OMP_NUM_THREADS"), 1u);
  EXPECT_EQ(render_worker(cfg, {}, 1, 0, "e", {}).env.count("OMP_NUM_THREADS"), 0u);
}

TEST(WorkerEnv, PythonExecChoosesTheInterpreterAsTorchrun) {
  const Env env = {{"PYTHON_EXEC", "/opt/conda/bin/python"}};
  EXPECT_EQ(render_worker(config_for({"t.py", "a"}, env), {}, 1, 0, "e", {}).argv,
            (std::vector<std::string>{"/opt/conda/bin/python", "-u", "t.py", "a"}));
  EXPECT_EQ(render_worker(config_for({"-m", "pkg"}, env), {}, 1, 0, "e", {}).argv,
            (std::vector<std::string>{"/opt/conda/bin/python", "-u", "-m", "pkg"}));
  EXPECT_EQ(render_worker(config_for({"--no-python", "prog"}, env), {}, 1, 0, "e", {}).argv,
            (std::vector<std::string>{"prog"}));
  EXPECT_EQ(render_worker(config_for({"t.py"}, {{"PYTHON_EXEC", ""}}), {}, 1, 0, "e", {}).argv,
            (std::vector<std::string>{"python3", "-u", "t.py"}));
}

TEST(WorkerEnv, CommandShapes) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> argv;
  };
  const std::vector<Case> cases = {
      {{"t.py", "--lr", "1"}, {"python3", "-u", "t.py", "--lr", "1"}},
      {{"-m", "pkg.mod", "a"}, {"python3", "-u", "-m", "pkg.mod", "a"}},
      {{"--no-python", "--", "python", "t.py"}, {"python", "t.py"}},
      {{"--legacy-launch", "t.py", "a"}, {"python3", "-u", "t.py", "--local-rank=1", "a"}},
      {{"--legacy-launch", "--local-rank-style=dash", "t.py"}, {"python3", "-u", "t.py", "--local-rank=1"}},
      {{"--legacy-launch", "--local_rank_style", "underscore", "t.py"}, {"python3", "-u", "t.py", "--local_rank=1"}},
      {{"--legacy-launch", "--use-env", "t.py", "a"}, {"python3", "-u", "t.py", "a"}},
      {{"--legacy-launch", "--use-env", "--local-rank-style=underscore", "t.py"}, {"python3", "-u", "t.py"}},
      {{"--use-env", "t.py"}, {"python3", "-u", "t.py"}},
      // The operator's form: the local rank goes after the script, not after the interpreter.
      {{"--legacy-launch", "--no-python", "--", "python3", "-u", "t.py", "a"}, {"python3", "-u", "t.py", "--local-rank=1", "a"}},
      {{"--legacy-launch", "--no-python", "--", "/usr/bin/python3.11", "-W", "ignore", "-X", "dev", "t.py"},
       {"/usr/bin/python3.11", "-W", "ignore", "-X", "dev", "t.py", "--local-rank=1"}},
      {{"--legacy-launch", "--no-python", "--", "python", "-m", "pkg", "a"}, {"python", "-m", "pkg", "--local-rank=1", "a"}},
      {{"--legacy-launch", "--no-python", "--", "python", "-mpkg", "a"}, {"python", "-mpkg", "--local-rank=1", "a"}},
      {{"--legacy-launch", "--no-python", "--", "python", "-u"}, {"python", "-u", "--local-rank=1"}},
      // A program that is no interpreter gets it first, as torch.distributed.launch --no-python did.
      {{"--legacy-launch", "--no-python", "--", "./run.sh", "t.py"}, {"./run.sh", "--local-rank=1", "t.py"}},
      {{"--legacy-launch", "--no-python", "--", "pythonic", "t.py"}, {"pythonic", "--local-rank=1", "t.py"}},
  };
  for (const auto& c : cases) EXPECT_EQ(render_worker(config_for(c.args), {}, 2, 1, "e", {}).argv, c.argv);
}

}  // namespace
}  // namespace kubedist::launcher
