// The worker environment contract: torchrun's names and values.
#include "workers/worker_env.h"
#include "parsed_config.h"

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

LaunchConfig config_for(const std::vector<std::string>& args, const Env& env = {}) {
  return testing::parse_ok(args, env);
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
      {"OMP_NUM_THREADS", "1"},  {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"}, {"PATH", "/usr/bin"},
      {"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
  };
  EXPECT_EQ(w.env, expected);
  EXPECT_EQ(w.argv, (std::vector<std::string>{"python3", "-u", "t.py"}));
}

TEST(WorkerEnv, AsyncErrorHandlingIsTorch2sVariableInheritedElseOne) {
  const Assignment a{};
  auto cfg = config_for({"t.py"});
  auto inherited = render_worker(cfg, a, 1, 0, "/e", {{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"}});
  EXPECT_EQ(inherited.env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "3");
  auto plain = render_worker(cfg, a, 1, 0, "/e", {});
  EXPECT_EQ(plain.env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");
  EXPECT_EQ(plain.env.count("NCCL_ASYNC_ERROR_HANDLING"), 0u) << "deprecated in torch 2.x, which warns when it is set";
}

TEST(WorkerEnv, Torch1WorkersGetTorchrun1sEnvironment) {
  // torch 1.x reads only NCCL_ASYNC_ERROR_HANDLING, and its torchrun sets no TORCHELASTIC_SIGNALS_TO_HANDLE.
  auto cfg = config_for({"t.py"});
  cfg.workers_torch_major = 1;
  auto plain = render_worker(cfg, Assignment{}, 1, 0, "/e", {});
  EXPECT_EQ(plain.env["NCCL_ASYNC_ERROR_HANDLING"], "1");
  EXPECT_EQ(plain.env.count("TORCH_NCCL_ASYNC_ERROR_HANDLING"), 0u);
  EXPECT_EQ(plain.env.count("TORCHELASTIC_SIGNALS_TO_HANDLE"), 0u);
  EXPECT_EQ(render_worker(cfg, Assignment{}, 1, 0, "/e", {{"NCCL_ASYNC_ERROR_HANDLING", "0"}})
                .env["NCCL_ASYNC_ERROR_HANDLING"], "0");
  cfg.workers_torch_major = 0;  // unknown: torch 2.x's
  EXPECT_EQ(render_worker(cfg, Assignment{}, 1, 0, "/e", {}).env.count("TORCH_NCCL_ASYNC_ERROR_HANDLING"), 1u);
}

TEST(WorkerEnv, WorkersSeeTheSignalsToHandleAsTorchrunsWorkersDo) {
  auto cfg = config_for({"--signals-to-handle=SIGTERM,SIGUSR1", "t.py"});
  EXPECT_EQ(render_worker(cfg, Assignment{}, 1, 0, "/e", {}).env["TORCHELASTIC_SIGNALS_TO_HANDLE"], "SIGTERM,SIGUSR1");
}

TEST(WorkerEnv, VirtualLocalRankGivesEachWorkerLocalRankZeroAndOnlyItsOwnDevice) {
  struct Case {
    Env parent;
    int local_rank;
    std::string cuda, hip;  // "" for unset
  };
  const std::vector<Case> cases = {
      {{}, 2, "2", ""},
      {{{"CUDA_VISIBLE_DEVICES", "4,5, 6,7"}}, 2, "6", ""},
      {{{"CUDA_VISIBLE_DEVICES", "GPU-aa,GPU-bb"}}, 1, "GPU-bb", ""},
      {{{"HIP_VISIBLE_DEVICES", "3,1"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}, 1, "1", "1"},
  };
  auto cfg = config_for({"--virtual-local-rank", "t.py"});
  for (const auto& c : cases) {
    auto w = render_worker(cfg, Assignment{}, 4, c.local_rank, "/e", c.parent);
    EXPECT_EQ(w.env["LOCAL_RANK"], "0");
    EXPECT_EQ(w.env["CUDA_VISIBLE_DEVICES"], c.cuda);
    if (!c.hip.empty()) {
      EXPECT_EQ(w.env["HIP_VISIBLE_DEVICES"], c.hip);
    }
  }
  auto without = render_worker(config_for({"t.py"}), Assignment{}, 4, 2, "/e", {{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}});
  EXPECT_EQ(without.env["LOCAL_RANK"], "2");
  EXPECT_EQ(without.env["CUDA_VISIBLE_DEVICES"], "4,5,6,7");
}

TEST(WorkerEnv, VirtualLocalRankRefusesADeviceListShorterThanTheWorkers) {
  auto cfg = config_for({"--virtual-local-rank", "t.py"});
  EXPECT_EQ(check_virtual_local_rank(cfg, 3, {{"CUDA_VISIBLE_DEVICES", "0,1"}}).value_or(""),
            "--virtual-local-rank: 3 workers but CUDA_VISIBLE_DEVICES=0,1 lists 2 device(s): each worker needs its own");
  EXPECT_FALSE(check_virtual_local_rank(cfg, 2, {{"CUDA_VISIBLE_DEVICES", "0,1"}}));
  EXPECT_FALSE(check_virtual_local_rank(cfg, 8, {})) << "no list: device i is local rank i";
  EXPECT_FALSE(check_virtual_local_rank(config_for({"t.py"}), 3, {{"CUDA_VISIBLE_DEVICES", "0"}}));
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
