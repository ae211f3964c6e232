// Which arguments ask for install mode (`kubedist-launcher --install DIR`), and which are a usage error.
#include "install.h"

#include <gtest/gtest.h>

#include "launch_config.h"

namespace kubedist::launcher {
namespace {

using Args = std::vector<std::string>;

TEST(InstallRequest, NamesTheDirectoryInEitherSpelling) {
  for (const Args& args : {Args{"--install", "/kubedist/bin"}, Args{"--install=/kubedist/bin"}}) {
    auto r = install_request(args);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(r->ok()) << r->error();
    EXPECT_EQ(r->value(), "/kubedist/bin");
  }
}

TEST(InstallRequest, IsNotAskedForByOrdinaryLaunches) {
  for (const Args& args : {Args{}, Args{"train.py", "--install", "x"}, Args{"--no-python", "--", "--install"},
                           Args{"--installed"}}) {
    EXPECT_FALSE(install_request(args).has_value()) << (args.empty() ? "" : args[0]);
  }
}

TEST(InstallRequest, WithoutADirectoryOrWithMoreArgumentsIsAUsageError) {
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"--install"}, "--install needs a directory"},
      {{"--install="}, "--install needs a directory"},
      {{"--install", "/d", "train.py"}, "--install DIR takes nothing else, got 'train.py'"},
      {{"--install=/d", "--nnodes=2"}, "--install DIR takes nothing else, got '--nnodes=2'"},
  };
  for (const auto& [args, message] : cases) {
    auto r = install_request(args);
    ASSERT_TRUE(r.has_value()) << message;
    ASSERT_FALSE(r->ok()) << message;
    EXPECT_EQ(r->error(), message);
  }
}

TEST(InstallRequest, AfterOtherFlagsTheLaunchParserSaysItMustComeFirst) {
  auto r = parse_launch_config({"--nnodes=2", "--install", "/d"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "--install must come first and alone: --install DIR");
}

}  // namespace
}  // namespace kubedist::launcher
