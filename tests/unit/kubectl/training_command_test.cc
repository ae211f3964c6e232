// The torchrun command line read into a TrainingJob's terms: every torchrun 2.x flag is mapped, dropped with a
// line, or refused with the flag named (torch/distributed/run.py's get_args_parser, and launch.py's --use-env).
#include <gtest/gtest.h>

#include <map>

#include "kubectl/cli/training_command.h"

namespace kubedist::kubectl {
namespace {

std::optional<std::string> no_files(const std::string&) { return std::nullopt; }

Result<TrainingCommand> parse(std::vector<std::string> words, const FileReader& reader = no_files) {
  return parse_training_command(words, reader);
}

std::map<std::string, std::string> pet(const TrainingCommand& c) {
  return {c.launcher_env.begin(), c.launcher_env.end()};
}

TEST(TrainingCommand, TorchrunSizesBecomeNodesAndProcesses) {
  auto c = parse({"torchrun", "--nnodes=2", "--nproc_per_node=4", "train.py", "--lr", "0.1"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->form, TrainingCommand::Form::kTorchrun);
  EXPECT_EQ(c->min_nodes, 2);
  EXPECT_EQ(c->max_nodes, 2);
  EXPECT_EQ(c->nproc_per_node, "4");
  EXPECT_EQ(c->program, "train.py");
  EXPECT_EQ(c->program_args, (std::vector<std::string>{"--lr", "0.1"}));
  EXPECT_FALSE(c->max_restarts.has_value());
}

TEST(TrainingCommand, ElasticNnodesIsARange) {
  auto c = parse({"torchrun", "--nnodes", "1:2", "--nproc-per-node", "2", "train.py"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->min_nodes, 1);
  EXPECT_EQ(c->max_nodes, 2);
}

TEST(TrainingCommand, ScriptFlagsAfterTheScriptAreTheScripts) {
  auto c = parse({"torchrun", "train.py", "--nnodes=7", "--master-port=1"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->max_nodes, 1);
  EXPECT_EQ(c->program_args, (std::vector<std::string>{"--nnodes=7", "--master-port=1"}));
  EXPECT_TRUE(c->notes.empty());
}

TEST(TrainingCommand, RunModuleIsTorchrun) {
  auto c = parse({"python3", "-m", "torch.distributed.run", "--nproc_per_node=2", "train.py"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->form, TrainingCommand::Form::kRunModule);
  EXPECT_EQ(c->nproc_per_node, "2");
  EXPECT_EQ(pet(*c).count("PET_LEGACY_LAUNCH"), 0u);
}

TEST(TrainingCommand, LegacyLaunchWithUseEnvTravelsAsLauncherEnvironment) {
  auto c = parse({"python", "-m", "torch.distributed.launch", "--nproc_per_node=2", "--use_env", "train.py"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->form, TrainingCommand::Form::kLegacyLaunch);
  EXPECT_EQ(pet(*c)["PET_LEGACY_LAUNCH"], "1");
  EXPECT_EQ(pet(*c)["PET_USE_ENV"], "1");
  EXPECT_EQ(c->nproc_per_node, "2");
}

TEST(TrainingCommand, LegacyLaunchWithoutUseEnvPassesTheLocalRankAsAnArgument) {
  auto c = parse({"python", "-u", "-m", "torch.distributed.launch", "--nproc_per_node", "2", "train.py"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(pet(*c)["PET_LEGACY_LAUNCH"], "1");
  EXPECT_EQ(pet(*c).count("PET_USE_ENV"), 0u);
  // The spelling (--local_rank or --local-rank) is the launcher's default, auto: the torch in the image decides, as
  // in the operator's form (issue 27).
  EXPECT_EQ(pet(*c).count("PET_LOCAL_RANK_STYLE"), 0u);
}

TEST(TrainingCommand, UseEnvBelongsToTheLegacyLauncher) {
  auto c = parse({"torchrun", "--use-env", "train.py"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("--use-env"), std::string::npos);
  EXPECT_NE(c.error().message.find("torch.distributed.launch"), std::string::npos);
}

TEST(TrainingCommand, BareScriptsRunOneProcess) {
  for (auto words : {std::vector<std::string>{"train.py", "--x"}, {"python", "train.py", "--x"},
                     {"/usr/bin/python3.11", "train.py", "--x"}}) {
    auto c = parse(words);
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->form, TrainingCommand::Form::kBareScript);
    EXPECT_EQ(c->program, "train.py");
    EXPECT_EQ(c->program_args, std::vector<std::string>{"--x"});
    EXPECT_EQ(c->max_nodes, 1);
    EXPECT_EQ(c->nproc_per_node, "1");
    EXPECT_FALSE(c->no_python);
  }
  auto exe = parse({"./run.sh", "a"});
  ASSERT_TRUE(exe.ok());
  EXPECT_TRUE(exe->no_python);
  auto mod = parse({"python", "-m", "pkg.train", "--epochs", "1"});
  ASSERT_TRUE(mod.ok());
  EXPECT_TRUE(mod->module);
  EXPECT_EQ(mod->program, "pkg.train");
  EXPECT_EQ(mod->program_args, (std::vector<std::string>{"--epochs", "1"}));
}

TEST(TrainingCommand, LeadingAssignmentsAreTheWorkersEnvironmentButAddressesAreDropped) {
  auto c = parse({"MASTER_PORT=29777", "NCCL_DEBUG=INFO", "torchrun", "train.py"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->env, (EnvList{{"NCCL_DEBUG", "INFO"}}));
  ASSERT_EQ(c->notes.size(), 1u);
  EXPECT_NE(c->notes[0].find("MASTER_PORT"), std::string::npos);
  auto sizes = parse({"NNODES=2", "torchrun", "train.py"});
  ASSERT_FALSE(sizes.ok());
  EXPECT_NE(sizes.error().message.find("--nnodes"), std::string::npos);
}

// One row per torchrun 2.x flag: how it is given, and what becomes of it.
struct FlagCase {
  std::vector<std::string> flag;  // the words, before train.py
  std::string pet_name;           // the PET_* variable it travels as ("" none)
  std::string pet_value;
  std::string note;               // part of the dropped line ("" none)
  std::string refused;            // part of the error ("" accepted)
};

TEST(TrainingCommand, EveryTorchrunFlagIsMappedDroppedOrRefusedOnPurpose) {
  const std::vector<FlagCase> cases = {
      {{"--nnodes=2"}, "", "", "", ""},
      {{"--nproc-per-node=gpu"}, "", "", "", ""},
      {{"--nproc_per_node", "cpu"}, "", "", "", ""},
      {{"--nproc-per-node=auto"}, "", "", "", ""},
      {{"--rdzv-backend=c10d"}, "", "", "--rdzv-backend=c10d", ""},
      {{"--rdzv_endpoint", "host:29400"}, "", "", "--rdzv-endpoint=host:29400", ""},
      {{"--rdzv-id=42"}, "", "", "run id", ""},
      {{"--rdzv-conf=join_timeout=900,last_call_timeout=2"}, "PET_RDZV_CONF", "join_timeout=900,last_call_timeout=2",
       "", ""},
      {{"--standalone"}, "", "", "", ""},
      {{"--max-restarts=3"}, "", "", "", ""},
      {{"--monitor-interval=0.5"}, "PET_MONITOR_INTERVAL", "0.5", "", ""},
      {{"--start-method=fork"}, "PET_START_METHOD", "fork", "", ""},
      {{"--event-log-handler=null"}, "", "", "", ""},
      {{"--role", "trainer"}, "PET_ROLE", "trainer", "", ""},
      {{"-m"}, "", "", "", ""},
      {{"--no-python"}, "", "", "", ""},
      {{"--run-path"}, "", "", "", ""},
      {{"--log-dir=/tmp/logs"}, "PET_LOG_DIR", "/tmp/logs", "", ""},
      {{"-r", "3"}, "PET_REDIRECTS", "3", "", ""},
      {{"-r3"}, "PET_REDIRECTS", "3", "", ""},
      {{"--redirects=0:1,1:2"}, "PET_REDIRECTS", "0:1,1:2", "", ""},
      {{"-t", "3"}, "PET_TEE", "3", "", ""},
      {{"--tee=3"}, "PET_TEE", "3", "", ""},
      {{"--local-ranks-filter=0"}, "PET_LOCAL_RANKS_FILTER", "0", "", ""},
      {{"--node-rank=1"}, "", "", "node rank", ""},
      {{"--master_addr=10.0.0.1"}, "", "", "--master-addr=10.0.0.1", ""},
      {{"--master-port", "29501"}, "", "", "--master-port=29501", ""},
      {{"--local-addr=10.0.0.2"}, "", "", "--local-addr", ""},
      // torchrun 2.15's newer flags travel as PET_* for the launcher, which reads them like the flags.
      {{"--shutdown-timeout=20"}, "PET_SHUTDOWN_TIMEOUT", "20", "", ""},
      {{"--shutdown-timeout=1.5"}, "", "", "", "--shutdown-timeout"},
      {{"--signals-to-handle=SIGTERM,SIGUSR1"}, "PET_SIGNALS_TO_HANDLE", "SIGTERM,SIGUSR1", "", ""},
      {{"--signals_to_handle=SIGKILL"}, "", "", "", "--signals-to-handle"},
      {{"--signals-to-handle=TERM"}, "", "", "", "--signals-to-handle"},
      {{"--virtual-local-rank"}, "PET_VIRTUAL_LOCAL_RANK", "1", "", ""},
      {{"--numa-binding=node"}, "PET_NUMA_BINDING", "node", "", ""},
      {{"--numa-binding=far"}, "", "", "", "--numa-binding"},
      {{"--duplicate-stdout-filters=loss,,x,NaN"}, "PET_DUPLICATE_STDOUT_FILTERS", "loss,,x,NaN", "", ""},
      {{"--duplicate_stderr_filters=x"}, "PET_DUPLICATE_STDERR_FILTERS", "x", "", ""},
      {{"--duplicate-stdout-filters=a,"}, "", "", "", "--duplicate-stdout-filters"},
      {{"--log-line-prefix-template=${rank}: "}, "PET_LOG_LINE_PREFIX_TEMPLATE", "${rank}: ", "", ""},
      {{"--event-log-handler=console"}, "", "", "Python event handler", ""},
      {{"--logs-specs=custom"}, "", "", "Python entry point", ""},
      {{"--print-completion=bash"}, "", "", "", "--print-completion"},
      {{"--help"}, "", "", "", "--help"},
      {{"-h"}, "", "", "", "-h"},
      {{"--nproc-per-node=xpu"}, "", "", "", "xpu"},
      {{"--nnodes=2:1"}, "", "", "", "--nnodes"},
      {{"--max-restarts=-1"}, "", "", "", "--max-restarts"},
      {{"--start-method=thread"}, "", "", "", "--start-method"},
      {{"--tee=9"}, "", "", "", "--tee"},
      {{"--monitor-interval=soon"}, "", "", "", "--monitor-interval"},
      {{"--no-such-flag"}, "", "", "", "--no-such-flag"},
      {{"--standalone=1"}, "", "", "", "takes no value"},
  };
  for (const auto& tc : cases) {
    std::vector<std::string> words = {"torchrun"};
    words.insert(words.end(), tc.flag.begin(), tc.flag.end());
    words.push_back("train.py");
    auto c = parse(words);
    const std::string what = tc.flag[0];
    if (!tc.refused.empty()) {
      ASSERT_FALSE(c.ok()) << what << " should be refused";
      EXPECT_NE(c.error().message.find(tc.refused), std::string::npos) << c.error().message;
      continue;
    }
    ASSERT_TRUE(c.ok()) << what << ": " << c.error().message;
    EXPECT_EQ(c->program, "train.py") << what;
    if (!tc.pet_name.empty()) {
      EXPECT_EQ(pet(*c)[tc.pet_name], tc.pet_value) << what;
    }
    if (!tc.note.empty()) {
      ASSERT_EQ(c->notes.size(), 1u) << what;
      EXPECT_NE(c->notes[0].find(tc.note), std::string::npos) << c->notes[0];
    } else {
      EXPECT_TRUE(c->notes.empty()) << what << ": " << (c->notes.empty() ? "" : c->notes[0]);
    }
  }
}

TEST(TrainingCommand, MappedFlagsLandInTheCommand) {
  auto c = parse({"torchrun", "--max_restarts", "3", "--no_python", "--nproc-per-node=gpu", "./run.sh"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->max_restarts, 3);
  EXPECT_TRUE(c->no_python);
  EXPECT_EQ(c->nproc_per_node, "gpu");
  auto m = parse({"torchrun", "-m", "pkg.train", "--x"});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->module);
  EXPECT_EQ(m->program, "pkg.train");
  auto tee = parse({"torchrun", "--tee", "2", "train.py"});
  ASSERT_TRUE(tee.ok());
  EXPECT_TRUE(tee->tee_or_redirects);
}

TEST(TrainingCommand, ContradictoryFlagsAreRefusedWithBothNamed) {
  auto both = parse({"torchrun", "-m", "--no-python", "x"});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("--module and --no-python"), std::string::npos);
  auto standalone = parse({"torchrun", "--standalone", "--nnodes=2", "train.py"});
  ASSERT_FALSE(standalone.ok());
  EXPECT_NE(standalone.error().message.find("--standalone"), std::string::npos);
  auto twice = parse({"torchrun", "--nnodes=2", "--nnodes=3", "train.py"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("given twice"), std::string::npos);
  EXPECT_TRUE(parse({"torchrun", "--nnodes=2", "--nnodes", "2", "train.py"}).ok());
}

TEST(TrainingCommand, RdzvConfFromAJsonFile) {
  auto reader = [](const std::string& p) -> std::optional<std::string> {
    if (p == "elastic_config.json") return R"({"join_timeout": 900, "last_call_timeout": 2.5, "is_host": false})";
    if (p == "bad.json") return "[1]";
    return std::nullopt;
  };
  auto c = parse({"torchrun", "--rdzv-conf", "elastic_config.json", "train.py"}, reader);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(pet(*c)["PET_RDZV_CONF"], "is_host=false,join_timeout=900,last_call_timeout=2.5");
  auto bad = parse({"torchrun", "--rdzv-conf=bad.json", "train.py"}, reader);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--rdzv-conf"), std::string::npos);
  auto missing = parse({"torchrun", "--rdzv-conf=nothere.json", "train.py"}, reader);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("nothere.json"), std::string::npos);
}

TEST(TrainingCommand, MissingPiecesAreSaid) {
  auto none = parse({});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("torchrun"), std::string::npos);
  auto no_script = parse({"torchrun", "--nnodes=2"});
  ASSERT_FALSE(no_script.ok());
  EXPECT_NE(no_script.error().message.find("no training script"), std::string::npos);
  auto value = parse({"torchrun", "--nnodes"});
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.error().message.find("--nnodes: needs a value"), std::string::npos);
  auto code = parse({"python", "-c", "print(1)"});
  ASSERT_FALSE(code.ok());
  EXPECT_NE(code.error().message.find("-c"), std::string::npos);
}

TEST(TrainingCommand, OperatorVariablesGivenByHand) {
  auto port = check_user_env("MASTER_PORT");
  ASSERT_TRUE(port.ok());
  ASSERT_TRUE(port->has_value());
  auto mine = check_user_env("NCCL_DEBUG");
  ASSERT_TRUE(mine.ok());
  EXPECT_FALSE(mine->has_value());
  EXPECT_FALSE(check_user_env("PET_NNODES").ok());
  EXPECT_FALSE(check_user_env("KUBEDIST_JOB").ok());
}

}  // namespace
}  // namespace kubedist::kubectl
