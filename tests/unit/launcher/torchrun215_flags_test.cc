// torchrun 2.15's newer flags (issue 36 item 2): where their values come from, and the pure pieces behind them.
#include <gtest/gtest.h>

#include <csignal>
#include <map>

#include "cli/completion.h"
#include "cli/launch_config.h"
#include "cli/log_line_prefix.h"
#include "cli/numa_binding.h"
#include "cli/signal_names.h"
#include "rendezvous/hosting.h"

namespace kubedist::launcher {
namespace {

using Args = std::vector<std::string>;

LaunchConfig parse_ok(const Args& args, const Env& env = {}) {
  auto r = parse_launch_config(args, env);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.value() : LaunchConfig{};
}

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

TEST(NumaBinding, CountsTheOnlineNodesAndIsANoOpThatSaysSoOnOne) {
  auto reads = [](std::optional<std::string> online) {
    return [online](const std::string& path) -> std::optional<std::string> {
      return path == "/sys/devices/system/node/online" ? online : std::nullopt;
    };
  };
  EXPECT_EQ(numa_node_count(reads("0\n")), 1);
  EXPECT_EQ(numa_node_count(reads("0-3\n")), 4);
  EXPECT_EQ(numa_node_count(reads("0,2-3\n")), 3);
  EXPECT_EQ(numa_node_count(reads(std::nullopt)), 0);
  EXPECT_EQ(numa_note("node", reads("0\n")),
            "--numa-binding=node: this machine has one NUMA node, so every CPU is near every GPU: workers run unbound "
            "(a no-op)");
  EXPECT_NE(numa_note("exclusive", reads("0-1\n")).find("2 NUMA nodes, but the launcher does not bind workers yet"),
            std::string::npos);
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
