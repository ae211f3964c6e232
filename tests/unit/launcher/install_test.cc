// Which arguments ask for install mode (`kubedist-launcher --install DIR`), and which are a usage error.
#include "install.h"

#include <gtest/gtest.h>

#include "cli/launch_config.h"

namespace kubedist::launcher {
namespace {

using Args = std::vector<std::string>;

TEST(InstallRequest, NamesTheDirectoryInEitherSpelling) {
  for (const Args& args : {Args{"--install", "/kubedist/bin"}, Args{"--install=/kubedist/bin"}}) {
    auto r = install_request(args);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(r->ok()) << r->error();
    EXPECT_EQ(r->value().dir, "/kubedist/bin");
    EXPECT_EQ(r->value().rdzv_secret_from, "");
  }
}

TEST(InstallRequest, NamesTheNamespaceSecretAndTheJobToDeriveFor) {
  for (const Args& args : {Args{"--install", "/b", "--rdzv-secret-from", "/ns/secret", "--rdzv-job", "u-1"},
                           Args{"--install=/b", "--rdzv-job=u-1", "--rdzv-secret-from=/ns/secret"}}) {
    auto r = install_request(args);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(r->ok()) << r->error();
    EXPECT_EQ(r->value().dir, "/b");
    EXPECT_EQ(r->value().rdzv_secret_from, "/ns/secret");
    EXPECT_EQ(r->value().rdzv_job, "u-1");
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
      {{"--install", "/d", "train.py"},
       "--install DIR takes nothing else but --rdzv-secret-from FILE --rdzv-job UID, got 'train.py'"},
      {{"--install=/d", "--nnodes=2"},
       "--install DIR takes nothing else but --rdzv-secret-from FILE --rdzv-job UID, got '--nnodes=2'"},
      {{"--install", "/d", "--rdzv-secret-from", "/s"}, "--install: --rdzv-secret-from FILE and --rdzv-job UID go together"},
      {{"--install", "/d", "--rdzv-job=u"}, "--install: --rdzv-secret-from FILE and --rdzv-job UID go together"},
      {{"--install", "/d", "--rdzv-secret-from"}, "--rdzv-secret-from needs a file"},
      {{"--install", "/d", "--rdzv-secret-from=/s", "--rdzv-job="}, "--rdzv-job needs the job's uid"},
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
  EXPECT_EQ(r.error(), "--install must come first: --install DIR [--rdzv-secret-from FILE --rdzv-job UID]");
}

}  // namespace
}  // namespace kubedist::launcher
