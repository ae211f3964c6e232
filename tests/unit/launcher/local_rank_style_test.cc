// --local-rank-style=auto: the spelling of the torch the workers would import, from its torch/version.py.
#include "cli/local_rank_style.h"
#include "parsed_config.h"

#include <gtest/gtest.h>

#include <map>

#include "cli/python_invocation.h"

namespace kubedist::launcher {
namespace {

TEST(LocalRankStyle, ReadsTheVersionATorchVersionFileDeclares) {
  EXPECT_EQ(torch_version_declared("__version__ = '1.13.0a0'\ndebug = False\n"), "1.13.0a0");  // Debian's
  EXPECT_EQ(torch_version_declared("from typing import Optional\n__all__ = ['__version__']\n"
                                   "__version__ = '2.4.0+cu121'\n"),
            "2.4.0+cu121");  // a wheel's
  EXPECT_EQ(torch_version_declared("__version__: str = \"2.6.0\"\n"), "2.6.0");
  EXPECT_EQ(torch_version_declared("  __version__='1.8.1'  \r\n"), "1.8.1");
  for (const char* bad : {"", "version = '1.13'\n", "__version__ = 1\n", "__version__ = ''\n", "__version__ = '2.4\n",
                          "__version_info__ = '1.0'\n"})
    EXPECT_EQ(torch_version_declared(bad), std::nullopt) << bad;
}

TEST(LocalRankStyle, Torch1GetsTheUnderscoreAndEverythingElseTheDash) {
  EXPECT_EQ(local_rank_arg_for_torch("1.13.0a0"), "--local_rank");
  EXPECT_EQ(local_rank_arg_for_torch("1.8.1+cu111"), "--local_rank");
  EXPECT_EQ(local_rank_arg_for_torch("0.4.1"), "--local_rank");
  EXPECT_EQ(local_rank_arg_for_torch("2.0.0"), "--local-rank");
  EXPECT_EQ(local_rank_arg_for_torch("2.4.0+cu121"), "--local-rank");
  EXPECT_EQ(local_rank_arg_for_torch("10.0"), "--local-rank");
  EXPECT_EQ(local_rank_arg_for_torch("unknown"), "--local-rank");
}

struct Files {
  std::map<std::string, std::string> text;
  std::optional<std::string> operator()(const std::string& path) const {
    auto it = text.find(path);
    return it == text.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
};

TEST(LocalRankStyle, TheFirstTorchOnSysPathDecidesAsImportWould) {
  const Files files{{{"/fake/torch/version.py", "__version__ = '2.4.0'\n"},
                     {"/usr/lib/python3/dist-packages/torch/version.py", "__version__ = '1.13.0a0'\n"}}};
  const std::vector<std::string> debian = {"/app", "/usr/lib/python311.zip", "/usr/lib/python3/dist-packages"};
  const WorkersTorch debians = find_workers_torch("/usr/bin/python3", debian, files);
  EXPECT_EQ(debians.major(), 1);
  auto c = choose_local_rank_arg(debians);
  EXPECT_EQ(c.arg, "--local_rank");
  EXPECT_NE(c.line.find("torch 1.13.0a0 (/usr/lib/python3/dist-packages/torch/version.py)"), std::string::npos) << c.line;
  std::vector<std::string> with_fake = debian;
  with_fake.insert(with_fake.begin() + 1, "/fake");  // PYTHONPATH comes before the system's directories
  const WorkersTorch fake = find_workers_torch("python3", with_fake, files);
  EXPECT_EQ(fake.version, std::optional<std::string>("2.4.0"));
  EXPECT_EQ(fake.major(), 2);
  EXPECT_EQ(choose_local_rank_arg(fake).arg, "--local-rank");
}

TEST(LocalRankStyle, WithoutATorchItFallsBackToTheDashWithOneLineSayingWhy) {
  const Files none{};
  const Files broken{{{"/site/torch/version.py", "debug = False\n"}}};
  const std::vector<WorkersTorch> unknown = {
      find_workers_torch("python3", std::vector<std::string>{"/usr/lib/python3.11"}, none),
      find_workers_torch("python3", make_error("python3: not found"), none),
      find_workers_torch("", std::vector<std::string>{}, none),
      find_workers_torch("python3", std::vector<std::string>{"/site"}, broken)};
  std::vector<LocalRankChoice> fallbacks;
  for (const auto& torch : unknown) {
    EXPECT_EQ(torch.major(), 0);  // unknown: the workers get torch 2.x's environment
    fallbacks.push_back(choose_local_rank_arg(torch));
  }
  const std::vector<std::string> why = {"no torch/version.py on python3's sys.path", "python3: not found",
                                        "no Python interpreter", "declares no __version__"};
  for (size_t i = 0; i < fallbacks.size(); ++i) {
    EXPECT_EQ(fallbacks[i].arg, "--local-rank");
    EXPECT_NE(fallbacks[i].line.find(why[i]), std::string::npos) << fallbacks[i].line;
    EXPECT_NE(fallbacks[i].line.find("--local-rank-style=underscore"), std::string::npos) << fallbacks[i].line;
    EXPECT_EQ(fallbacks[i].line.find('\n'), std::string::npos);
  }
}

LaunchConfig config_for(const std::vector<std::string>& args) { return testing::parse_ok(args); }

TEST(PythonInvocation, FindsTheWorkersInterpreterAndScript) {
  auto script = python_invocation(config_for({"dir/t.py", "a"}));
  EXPECT_EQ(script.interpreter, "python3");
  EXPECT_EQ(script.script, "dir/t.py");
  EXPECT_EQ(script.args_at, 1u);
  auto module = python_invocation(config_for({"-m", "pkg.train"}));
  EXPECT_TRUE(module.module);
  EXPECT_EQ(module.script, "");
  auto pod = python_invocation(config_for({"--no-python", "--", "/opt/venv/bin/python3.11", "-X", "dev", "t.py", "a"}));
  EXPECT_EQ(pod.interpreter, "/opt/venv/bin/python3.11");
  EXPECT_EQ(pod.options, (std::vector<std::string>{"-X", "dev"}));
  EXPECT_EQ(pod.script, "t.py");
  EXPECT_EQ(pod.args_at, 4u);
  auto program = python_invocation(config_for({"--no-python", "--", "./train.sh", "t.py"}));
  EXPECT_EQ(program.interpreter, "");
  EXPECT_EQ(program.args_at, 1u);
}

}  // namespace
}  // namespace kubedist::launcher
