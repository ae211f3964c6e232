// find_program: where execvp would find the interpreter, checked before any worker starts.
#include "util/fs_util.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

class FindProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kubedist-fs-util-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    make_file("bin/tool", 0755);
    make_file("bin/plain", 0644);
    make_dirs(dir_ + "/bin/adir");
    make_dirs(dir_ + "/empty");
  }
  void TearDown() override { remove_tree(dir_); }
  void make_file(const std::string& rel, mode_t mode) {
    make_dirs(dir_ + "/" + rel.substr(0, rel.rfind('/')));
    std::ofstream(dir_ + "/" + rel) << "#!/bin/sh\n";
    chmod((dir_ + "/" + rel).c_str(), mode);
  }
  std::string dir_;
};

TEST_F(FindProgram, SearchesPathInOrderForAnExecutableFile) {
  const std::string path = dir_ + "/empty:" + dir_ + "/bin";
  auto found = find_program("tool", path.c_str());
  ASSERT_TRUE(found.ok()) << found.error();
  EXPECT_EQ(*found, dir_ + "/bin/tool");
  EXPECT_FALSE(find_program("plain", path.c_str()).ok());  // not executable
  EXPECT_FALSE(find_program("adir", path.c_str()).ok());   // a directory
  auto missing = find_program("nothere", path.c_str());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("nothere: not found on PATH"), std::string::npos) << missing.error();
}

TEST_F(FindProgram, TakesAPathAsItIsAndSaysWhyItCannotRun) {
  EXPECT_EQ(*find_program(dir_ + "/bin/tool", ""), dir_ + "/bin/tool");
  auto missing = find_program(dir_ + "/bin/nothere", "/bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("No such file or directory"), std::string::npos) << missing.error();
  auto dir = find_program(dir_ + "/bin/adir", "/bin");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().find("Is a directory"), std::string::npos) << dir.error();
  EXPECT_FALSE(find_program(dir_ + "/bin/plain", "/bin").ok());
  EXPECT_FALSE(find_program("", "/bin").ok());
}

TEST_F(FindProgram, WithoutPathUsesGlibcsDefault) {
  auto sh = find_program("sh", nullptr);
  ASSERT_TRUE(sh.ok()) << sh.error();
  EXPECT_TRUE(*sh == "/bin/sh" || *sh == "/usr/bin/sh") << *sh;
}

}  // namespace
}  // namespace kubedist::launcher
