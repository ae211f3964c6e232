// The plugin's own options, and the errors a person sees for bad ones.
#include <gtest/gtest.h>

#include "kubectl/cli/options.h"

namespace kubedist::kubectl {
namespace {

Result<Invocation> parse(std::vector<std::string> args) { return parse_invocation(args); }

std::string error_of(std::vector<std::string> args) {
  auto r = parse(args);
  return r.ok() ? "" : r.error().message;
}

TEST(Options, RunTakesItsOptionsThenTheCommand) {
  auto r = parse({"run", "--image", "img:1", "--gpus-per-node=4", "--cpu", "2", "--memory=4Gi", "--queue", "team",
                  "--gang", "--name", "resnet", "-n", "ns", "--workdir", "src", "--pip", "numpy", "--pip", "a,b",
                  "--pip-index-url", "http://idx:8000/simple", "-e", "A=1", "--env=B=x=y", "--detach",
                  "--node-selector", "kubernetes.io/hostname=n-1", "--node-selector=pool=gpu,zone=", "--",
                  "torchrun", "train.py"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const RunOptions& o = r->run;
  EXPECT_EQ(o.image, "img:1");
  EXPECT_EQ(o.gpus_per_node, 4);
  EXPECT_EQ(o.cpu, "2");
  EXPECT_EQ(o.memory, "4Gi");
  EXPECT_EQ(o.queue, "team");
  EXPECT_TRUE(o.gang);
  EXPECT_EQ(o.name, "resnet");
  EXPECT_EQ(o.cluster.ns, "ns");
  EXPECT_EQ(o.workdir, "src");
  EXPECT_EQ(o.pip, (std::vector<std::string>{"numpy", "a", "b"}));
  EXPECT_EQ(o.pip_index_url, "http://idx:8000/simple");
  EXPECT_EQ(o.env, (EnvList{{"A", "1"}, {"B", "x=y"}}));
  EXPECT_TRUE(o.detach);
  EXPECT_EQ(o.node_selector, (std::vector<std::pair<std::string, std::string>>{
                                 {"kubernetes.io/hostname", "n-1"}, {"pool", "gpu"}, {"zone", ""}}));
  EXPECT_EQ(o.command, (std::vector<std::string>{"torchrun", "train.py"}));
}

TEST(Options, SparesAndTheTopologyKey) {
  auto r = parse({"run", "--spares", "2", "--topology-key=kubedist.io/rack", "--", "torchrun", "--nnodes=4", "x.py"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->run.spares, 2);
  EXPECT_EQ(r->run.topology_key, "kubedist.io/rack");
  EXPECT_EQ(parse({"run", "--", "x.py"})->run.spares, 0);
  for (const std::string bad : {"65", "-1", "two", "", "1e3"}) {
    EXPECT_NE(error_of({"run", "--spares=" + bad, "--", "x.py"}).find("--spares: expected a whole number from 0 to 64"),
              std::string::npos)
        << bad;
  }
  for (const std::string bad : {"my rack", "", "/rack", "a/b/c", "Rack.Example/x"}) {
    EXPECT_NE(error_of({"run", "--topology-key=" + bad, "--", "x.py"})
                  .find("--topology-key: expected a node label's key"),
              std::string::npos)
        << bad;
  }
}

TEST(Options, TheCommandMayStartWithoutDashDash) {
  auto r = parse({"run", "--dry-run", "torchrun", "--nnodes=2", "train.py"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->run.command.size(), 3u);
  EXPECT_EQ(r->run.output, "yaml");
}

TEST(Options, BadRunOptionsNameTheFix) {
  EXPECT_NE(error_of({"run", "--nodes=2", "--", "x.py"}).find("unknown option --nodes"), std::string::npos);
  EXPECT_NE(error_of({"run", "--"}).find("no command"), std::string::npos);
  EXPECT_NE(error_of({"run", "-o", "yaml", "--", "x.py"}).find("--dry-run"), std::string::npos);
  EXPECT_NE(error_of({"run", "--dry-run", "-o", "xml", "--", "x.py"}).find("yaml or json"), std::string::npos);
  EXPECT_NE(error_of({"run", "--cpu", "lots", "--", "x.py"}).find("--cpu"), std::string::npos);
  EXPECT_NE(error_of({"run", "--memory", "4GB", "--", "x.py"}).find("--memory"), std::string::npos);
  EXPECT_NE(error_of({"run", "--gpus-per-node", "-1", "--", "x.py"}).find("--gpus-per-node"), std::string::npos);
  EXPECT_NE(error_of({"run", "-e", "1A=2", "--", "x.py"}).find("NAME=VALUE"), std::string::npos);
  const std::vector<std::string> bad_selectors{"pool", "=gpu", "Pool.Example/x=1", "pool=-gpu", "a/b/c=1",
                                               "pool=" + std::string(64, 'a')};
  for (const std::string& bad : bad_selectors) {
    EXPECT_NE(error_of({"run", "--node-selector", bad, "--", "x.py"}).find("--node-selector: expected KEY=VALUE"),
              std::string::npos) << bad;
  }
  EXPECT_NE(error_of({"run", "--pip-index-url", "ftp://x", "--pip", "a", "--", "x.py"}).find("http"),
            std::string::npos);
  EXPECT_NE(error_of({"run", "--pip-index-url", "http://x", "--", "x.py"}).find("--pip"), std::string::npos);
  EXPECT_NE(error_of({"run", "--no-workdir", "--", "x.py"}).find("--image"), std::string::npos);
  EXPECT_NE(error_of({"run", "--image"}).find("--image needs a value"), std::string::npos);
  EXPECT_NE(error_of({"launch"}).find("unknown subcommand"), std::string::npos);
}

TEST(Options, JobSubcommands) {
  auto logs = parse({"logs", "train-abc", "--node", "1", "-f", "--namespace=x"});
  ASSERT_TRUE(logs.ok()) << logs.error().message;
  EXPECT_EQ(logs->job.job, "train-abc");
  EXPECT_EQ(logs->job.node, 1);
  EXPECT_TRUE(logs->job.follow);
  EXPECT_EQ(logs->job.cluster.ns, "x");
  EXPECT_TRUE(parse({"list", "-n", "a"}).ok());
  EXPECT_NE(error_of({"status"}).find("needs a job name"), std::string::npos);
  EXPECT_NE(error_of({"list", "extra"}).find("unexpected"), std::string::npos);
  EXPECT_NE(error_of({"status", "j", "-f"}).find("unknown option -f"), std::string::npos);
  EXPECT_NE(error_of({"delete", "a", "b"}).find("unexpected"), std::string::npos);
  EXPECT_EQ(parse({})->subcommand, "help");
}

TEST(Options, JobNamesAreDnsLabelsThatLeaveRoomForPodNames) {
  EXPECT_TRUE(check_job_name("train-x7k2p", 2).ok());
  for (const std::string& bad : std::vector<std::string>{"Train", "1train", "train_x", "train-", "", std::string(60, 'a')}) {
    auto r = check_job_name(bad, 2);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("DNS label"), std::string::npos);
  }
}

}  // namespace
}  // namespace kubedist::kubectl
