// torchrun 2.15's newer flags (issue 36 item 2): where their values come from, and the pure pieces behind them.
#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <set>
#include <tuple>

#include "cli/completion.h"
#include "cli/launch_config.h"
#include "parsed_config.h"
#include "cli/log_line_prefix.h"
#include "cli/numa_binding.h"
#include "cli/signal_names.h"
#include "rendezvous/hosting.h"

namespace kubedist::launcher {
namespace {

using Args = std::vector<std::string>;

using testing::parse_ok;

TEST(Torchrun215Flags, DefaultsAreTorchruns) {
  const auto c = parse_ok({"t.py"});
  EXPECT_EQ(c.stop_timeout, 30) << "torchrun's --shutdown-timeout default";
  EXPECT_EQ(c.signals_to_handle, (std::vector<int>{SIGTERM, SIGINT, SIGHUP, SIGQUIT}));
  EXPECT_EQ(c.signals_to_handle_text, "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  EXPECT_EQ(c.monitor_interval, 0.1);
  EXPECT_FALSE(c.virtual_local_rank);
  EXPECT_EQ(c.numa_binding, "");
  EXPECT_EQ(c.log_line_prefix_template, "");
  EXPECT_TRUE(c.notes.empty());
}

TEST(Torchrun215Flags, ShutdownTimeoutTakesItsAliasAndTorchrunsVariableInTorchrunsOrder) {
  struct Case {
    Args args;
    Env env;
    double seconds;
  };
  const std::vector<Case> cases = {
      {{"--stop-timeout=4", "t.py"}, {}, 4},
      {{"--stop_timeout", "5", "t.py"}, {}, 5},
      {{"t.py"}, {{"PET_STOP_TIMEOUT", "6"}}, 6},
      {{"t.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}, {"KUBEDIST_STOP_TIMEOUT", "28"}}, 7},
      {{"t.py"}, {{"PET_SHUTDOWN_TIMEOUT", "8"}, {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}}, 8},
      {{"t.py"}, {{"PET_SHUTDOWN_TIMEOUT", "8"}, {"PET_STOP_TIMEOUT", "6"}}, 8},
      {{"--shutdown-timeout=9", "t.py"}, {{"PET_SHUTDOWN_TIMEOUT", "8"}}, 9},
      {{"t.py"}, {{"KUBEDIST_STOP_TIMEOUT", "28"}}, 28},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args) + " " + ::testing::PrintToString(c.env));
    EXPECT_EQ(parse_ok(c.args, c.env).stop_timeout, c.seconds);
  }
  auto r = parse_launch_config({"--stop-timeout=soon", "t.py"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "--stop-timeout: expected a number of seconds >= 0, got 'soon'") << "named as typed";
}

TEST(Torchrun215Flags, ThePrefixTemplateComesFromTheFlagThenPetThenTorchelasticsVariable) {
  EXPECT_EQ(parse_ok({"t.py"}, {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "${rank}>"}}).log_line_prefix_template, "${rank}>");
  EXPECT_EQ(parse_ok({"t.py"}, {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "${rank}>"},
                                {"PET_LOG_LINE_PREFIX_TEMPLATE", "P"}}).log_line_prefix_template, "P");
  EXPECT_EQ(parse_ok({"--log-line-prefix-template=F", "t.py"}, {{"PET_LOG_LINE_PREFIX_TEMPLATE", "P"}})
                .log_line_prefix_template, "F");
}

TEST(Torchrun215Flags, TorchelasticSignalsToHandleIsOverwrittenAsTorchrunDoesAndSaysSo) {
  const auto c = parse_ok({"t.py"}, {{"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGUSR1"}});
  EXPECT_EQ(c.signals_to_handle_text, "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_EQ(c.notes[0], "ignoring TORCHELASTIC_SIGNALS_TO_HANDLE=SIGUSR1, as torchrun does: --signals-to-handle (or "
                        "PET_SIGNALS_TO_HANDLE) chooses the signals");
  EXPECT_TRUE(parse_ok({"--signals-to-handle=SIGTERM", "t.py"}, {{"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGUSR1"}})
                  .notes.empty());
}

TEST(Torchrun215Flags, PrintCompletionNeedsNoScriptAndNoPetTwinTriggersIt) {
  EXPECT_EQ(parse_ok({"--print-completion", "bash"}).print_completion, "bash");
  auto r = parse_launch_config({"--print-completion=fish"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "--print-completion: expected bash, zsh or tcsh, got 'fish'");
  EXPECT_EQ(parse_ok({"t.py"}, {{"PET_PRINT_COMPLETION", "bash"}}).print_completion, "");
}

TEST(Torchrun215Flags, TheNullEventHandlerIsTorchrunsDefaultAndSaysNothing) {
  EXPECT_TRUE(parse_ok({"--event-log-handler=null", "t.py"}).notes.empty());
}

TEST(SignalNames, ParsesTorchrunsListsAndRefusesWhatCannotStopWorkers) {
  EXPECT_EQ(parse_signal_names("SIGTERM, SIGUSR1,SIGTERM").value(), (std::vector<int>{SIGTERM, SIGUSR1}));
  const std::map<std::string, std::string> bad = {
      {"SIGKILL", "SIGKILL cannot be caught"},
      {"SIGSTOP", "SIGSTOP cannot be caught"},
      {"SIGCHLD", "SIGCHLD is how the launcher sees its workers end; it cannot stop them"},
      {"TERM", "'TERM' is not a signal name like SIGTERM or SIGUSR1"},
      {"15", "'15' is not a signal name like SIGTERM or SIGUSR1"},
      {" , ", "no signal named"},
  };
  for (const auto& [list, error] : bad) {
    auto r = parse_signal_names(list);
    ASSERT_FALSE(r.ok()) << list;
    EXPECT_EQ(r.error(), error);
  }
  EXPECT_EQ(signal_name(SIGUSR2), "SIGUSR2");
}

TEST(LogLinePrefix, SubstitutesAsPythonsStringTemplate) {
  const PrefixMacros m{"trainer", 1, 9, "r12i0n8"};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[${role_name}${local_rank}]:", "[trainer1]:"},
      {"${hostname}:${rank}: ", "r12i0n8:9: "},
      {"$rank/$local_rank", "9/1"},
      {"$$rank ${rank}", "$rank 9"},
      {"cost $5 ${", "cost $5 ${"},
  };
  for (const auto& [tmpl, out] : cases) {
    EXPECT_FALSE(check_prefix_template(tmpl)) << tmpl;
    EXPECT_EQ(render_prefix(tmpl, m), out) << tmpl;
  }
  EXPECT_EQ(check_prefix_template("${rnak}").value_or(""),
            "unknown macro '${rnak}' (use ${role_name}, ${local_rank}, ${rank}, ${hostname})");
  EXPECT_EQ(check_prefix_template("$host:").value_or(""),
            "unknown macro '$host' (use ${role_name}, ${local_rank}, ${rank}, ${hostname})");
  EXPECT_EQ(check_prefix_template("a\nb").value_or(""), "a prefix cannot hold a line break");
}

// A two-socket machine: NUMA node 0 (CPUs 0-7, socket 0) and 1 (8-15, socket 1), hyperthread pairs (0,1)...,
// an L3 cache per 4 CPUs, two NVIDIA GPUs on each node, and a device of another vendor and an NVIDIA bridge that are
// no GPUs. Directories list in no particular order, as readdir.
struct FakeMachine {
  std::map<std::string, std::string> files;
  std::map<std::string, std::vector<std::string>> dirs;

  explicit FakeMachine(std::string online = "0-1\n") {
    files["/sys/devices/system/node/online"] = online;
    files["/sys/devices/system/node/node0/cpulist"] = "0-7\n";
    files["/sys/devices/system/node/node1/cpulist"] = "8-15\n";
    for (int cpu = 0; cpu < 16; ++cpu) {
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
      const int pair = cpu & ~1, l3 = cpu & ~3;
      files[dir + "/topology/thread_siblings_list"] = std::to_string(pair) + "-" + std::to_string(pair + 1) + "\n";
      files[dir + "/topology/physical_package_id"] = cpu < 8 ? "0\n" : "1\n";
      dirs[dir + "/cache"] = {"index3", "uevent", "index0", "index1"};
      files[dir + "/cache/index0/type"] = "Data\n";
      files[dir + "/cache/index0/level"] = "1\n";
      files[dir + "/cache/index0/shared_cpu_list"] = std::to_string(pair) + "-" + std::to_string(pair + 1) + "\n";
      files[dir + "/cache/index1/type"] = "Instruction\n";
      files[dir + "/cache/index1/level"] = "4\n";  // not a data cache, whatever its level
      files[dir + "/cache/index1/shared_cpu_list"] = "0-15\n";
      files[dir + "/cache/index3/type"] = "Unified\n";
      files[dir + "/cache/index3/level"] = "3\n";
      files[dir + "/cache/index3/shared_cpu_list"] = std::to_string(l3) + "-" + std::to_string(l3 + 3) + "\n";
    }
    device("0000:86:00.0", "0x10de", "0x030200", "1");
    device("0000:00:00.0", "0x8086", "0x060000", "0");
    device("0000:17:00.0", "0x10de", "0x030200", "0");
    device("0000:ba:00.0", "0x10de", "0x030000", "1");
    device("0000:16:00.0", "0x10de", "0x068000", "0");
    device("0000:3a:00.0", "0x10de", "0x030200", "0");
  }
  void device(const std::string& addr, const std::string& vendor, const std::string& cls, const std::string& node) {
    const std::string dir = "/sys/bus/pci/devices/" + addr;
    dirs["/sys/bus/pci/devices"].push_back(addr);
    files[dir + "/vendor"] = vendor + "\n";
    files[dir + "/class"] = cls + "\n";
    files[dir + "/numa_node"] = node + "\n";
  }
  Sysfs sysfs() const {
    return Sysfs{[this](const std::string& path) -> std::optional<std::string> {
                   auto it = files.find(path);
                   return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
                 },
                 [this](const std::string& path) {
                   auto it = dirs.find(path);
                   return it == dirs.end() ? std::vector<std::string>{} : it->second;
                 }};
  }
};

std::set<int> range(int lo, int hi) {
  std::set<int> out;
  for (int i = lo; i <= hi; ++i) out.insert(i);
  return out;
}

std::vector<std::string> lists(const NumaPlan& plan) {
  std::vector<std::string> out;
  for (const auto& cpus : plan.cpus) out.push_back(cpu_list_text(cpus));
  return out;
}

TEST(NumaBinding, EachModePicksTheCpusTorchrunsModePicksForTheWorkersGpu) {
  const FakeMachine m;
  const auto all = range(0, 15);
  struct Case {
    std::string mode;
    std::set<int> allowed;
    std::optional<std::string> visible;
    std::vector<std::string> cpus;  // per local rank
  };
  const std::vector<Case> cases = {
      {"node", all, std::nullopt, {"0-7", "0-7", "8-15", "8-15"}},
      {"socket", all, std::nullopt, {"0-7", "0-7", "8-15", "8-15"}},
      {"exclusive", all, std::nullopt, {"0-3", "4-7", "8-11", "12-15"}},
      {"core-complex", all, std::nullopt, {"0-3", "4-7", "8-11", "12-15"}},
      // Only the CPUs the launcher may use; three cores for two GPUs: the first takes the one left over.
      {"node", range(2, 15), std::nullopt, {"2-7", "2-7", "8-15", "8-15"}},
      {"exclusive", range(2, 15), std::nullopt, {"2-5", "6-7", "8-11", "12-15"}},
      // CUDA's device 0 is the machine's third GPU.
      {"node", all, "2,0", {"8-15", "0-7"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.mode + " " + c.visible.value_or("-"));
    auto plan = plan_numa_binding(c.mode, static_cast<int>(c.cpus.size()), m.sysfs(), c.allowed, c.visible);
    ASSERT_TRUE(plan.ok()) << plan.error();
    EXPECT_EQ(lists(*plan), c.cpus);
  }
  auto plan = plan_numa_binding("node", 2, m.sysfs(), all, std::nullopt);
  EXPECT_EQ(plan->line, "--numa-binding=node: 2 NUMA nodes; workers bound to CPUs (local rank: CPUs) 0: 0-7, 1: 0-7");
}

TEST(NumaBinding, SocketModeTakesEveryNodeOfTheGpusSocket) {
  FakeMachine m;
  for (int cpu = 8; cpu < 16; ++cpu) m.files["/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/physical_package_id"] = "0\n";
  auto plan = plan_numa_binding("socket", 1, m.sysfs(), range(0, 15), std::nullopt);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(lists(*plan), std::vector<std::string>{"0-15"});
}

TEST(NumaBinding, OnOneNodeItIsANoOpThatSaysSo) {
  const FakeMachine m("0\n");
  auto plan = plan_numa_binding("exclusive", 8, m.sysfs(), range(0, 15), std::nullopt);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_TRUE(plan->cpus.empty());
  EXPECT_EQ(plan->line, "--numa-binding=exclusive: this machine has one NUMA node, so every CPU is near every GPU: "
                        "workers run unbound (a no-op)");
  EXPECT_EQ(numa_node_count(FakeMachine("0,2-3\n").sysfs()), 3);
}

TEST(NumaBinding, SaysInOneLineWhyAWorkerCannotBeBound) {
  const FakeMachine m;
  FakeMachine no_gpus;
  no_gpus.dirs["/sys/bus/pci/devices"] = {"0000:00:00.0"};
  const std::vector<std::tuple<const FakeMachine*, int, std::optional<std::string>, std::string>> cases = {
      {&m, 5, std::nullopt, "--numa-binding=node: 5 workers but 4 GPU(s) to bind them near"},
      {&m, 1, "GPU-1234", "--numa-binding=node: CUDA_VISIBLE_DEVICES=GPU-1234 names devices only CUDA can map; bind "
                          "with device numbers there"},
      {&m, 1, "7", "--numa-binding=node: CUDA_VISIBLE_DEVICES=7 names a GPU this machine lacks"},
      {&no_gpus, 1, std::nullopt, "--numa-binding=node: no NVIDIA GPU on the PCI bus to bind workers near"},
  };
  for (const auto& [machine, workers, visible, error] : cases) {
    auto plan = plan_numa_binding("node", workers, machine->sysfs(), range(0, 15), visible);
    ASSERT_FALSE(plan.ok()) << error;
    EXPECT_EQ(plan.error(), error);
  }
}

TEST(NumaBinding, CpuListsReadAndWriteAsSysfsSpellsThem) {
  EXPECT_EQ(parse_cpu_list("0-2,4,6-7\n"), (std::set<int>{0, 1, 2, 4, 6, 7}));
  EXPECT_EQ(parse_cpu_list(""), std::set<int>{});
  EXPECT_FALSE(parse_cpu_list("3-1"));
  EXPECT_FALSE(parse_cpu_list("a"));
  EXPECT_EQ(cpu_list_text({0, 1, 2, 4, 6, 7}), "0-2,4,6-7");
}

TEST(Completion, EveryShellsScriptNamesEveryFlag) {
  for (const std::string shell : {"bash", "zsh", "tcsh"}) {
    const std::string script = completion_script(shell);
    for (const auto& f : flag_names()) EXPECT_NE(script.find(f.spelling), std::string::npos) << shell << " " << f.spelling;
  }
  EXPECT_NE(completion_script("bash").find("complete -F _kubedist_launcher kubedist-launcher"), std::string::npos);
  EXPECT_EQ(completion_script("zsh").rfind("#compdef kubedist-launcher\n", 0), 0u);
  EXPECT_NE(completion_script("zsh").find("'--nnodes=[]:value:'"), std::string::npos);
  EXPECT_NE(completion_script("zsh").find("'--standalone[]'"), std::string::npos);
}

TEST(Hosting, LocalAddrIsWhereARendezvousHostNamesTheWorkersStore) {
  auto c = parse_ok({"--nnodes=2", "--node-rank=0", "--rdzv-endpoint=10.0.0.1:29400", "--local-addr=node0.example",
                     "t.py"});
  EXPECT_EQ(plan_hosting(c, true).store_address, "node0.example");
  c.local_addr.clear();
  EXPECT_EQ(plan_hosting(c, true).store_address, "10.0.0.1");
}

}  // namespace
}  // namespace kubedist::launcher
