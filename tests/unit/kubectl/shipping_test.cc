// What `run` ships of the working directory against hostile contents: credential files, a file too big to read,
// links out of the directory, fifos, oversized ignore files, file names with terminal escapes.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "kubectl/render/credentials.h"
#include "kubectl/render/plan.h"
#include "kubectl/render/shipment.h"
#include "kubectl/render/workdir.h"

namespace kubedist::kubectl {
namespace {

namespace fs = std::filesystem;

// path -> (type, link target) of a ustar archive; contents are checked by searching the whole archive.
std::map<std::string, std::pair<char, std::string>> entries(const std::string& tar) {
  std::map<std::string, std::pair<char, std::string>> out;
  for (size_t off = 0; off + 512 <= tar.size();) {
    const char* h = tar.data() + off;
    if (h[0] == '\0') break;
    std::string name(h, strnlen(h, 100)), prefix(h + 345, strnlen(h + 345, 155));
    const size_t size = std::stoul(std::string(h + 124, 11), nullptr, 8);
    out[prefix.empty() ? name : prefix + "/" + name] = {h[156], std::string(h + 157, strnlen(h + 157, 100))};
    off += 512 + (size + 511) / 512 * 512;
  }
  return out;
}

class Shipping : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("kubectl-shipping-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    dir_ = base_ / "proj";
    outside_ = base_ / "outside";
    fs::create_directories(dir_);
    fs::create_directories(outside_);
  }
  void TearDown() override { fs::remove_all(base_); }
  void write(const std::string& rel, const std::string& data) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << data;
  }
  fs::path base_, dir_, outside_;
};

const std::vector<std::string> kCredentials = {
    ".aws/credentials",  ".docker/config.json", ".env",     ".env.production", ".envrc",   ".git-credentials",
    ".kube/config",      ".netrc",              ".npmrc",   ".pypirc",         ".ssh/id_rsa", "conf/server.pem",
    "conf/tls.key",      "credentials.json",    "deploy/kubeconfig", "id_ed25519", "keys/store.p12",
};

TEST_F(Shipping, CredentialFilesStayHomeWithoutAnyIgnoreFileAndAreNamed) {
  for (const auto& c : kCredentials) write(c, "SECRET " + c);
  write("train.py", "print(1)");
  write("id_utils.py", "x");       // a module, not an ssh key
  write("conf/model.yaml", "y");
  write(".docker/daemon.json", "{}");
  write(".git", "gitdir: ../.git/worktrees/proj");  // a worktree's .git file: never shipped, not a credential
  auto a = archive_workdir(dir_.string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->tar.find("SECRET"), std::string::npos);
  auto e = entries(a->tar);
  for (const char* shipped : {"train.py", "id_utils.py", "conf/model.yaml", ".docker/daemon.json"}) {
    EXPECT_EQ(e.count(shipped), 1u) << shipped;
  }
  EXPECT_EQ(e.count(".git"), 0u);
  EXPECT_EQ(e.count(".ssh/"), 0u);  // a credential directory is left home whole, not even listed
  const std::vector<std::string> withheld = {".aws/", ".docker/config.json", ".env", ".env.production", ".envrc",
                                             ".git-credentials", ".kube/", ".netrc", ".npmrc", ".pypirc", ".ssh/",
                                             "conf/server.pem", "conf/tls.key", "credentials.json",
                                             "deploy/kubeconfig", "id_ed25519", "keys/store.p12"};
  EXPECT_EQ(a->withheld, withheld);
  EXPECT_EQ(a->files, 4u);
  EXPECT_TRUE(looks_like_credential("a/b/.netrc", false));
  EXPECT_TRUE(looks_like_credential("x/.ssh", true));
  EXPECT_FALSE(looks_like_credential("x/.ssh", false));  // a file or link of that name is no directory of keys
  EXPECT_FALSE(looks_like_credential("docker/config.json", false));
  EXPECT_FALSE(looks_like_credential("keyboard.py", false));
}

TEST_F(Shipping, OnlyANegationInAKubedistignoreShipsACredential) {
  write(".env.example", "TEMPLATE=1");
  write(".env", "SECRET=1");
  write(".ssh/known_hosts", "host key");
  write(".ssh/id_rsa", "SECRET key");
  write("sub/ca.pem", "CERT");
  write("train.py", "x");
  // A .gitignore negation is about git: it does not ship a credential.
  write(".gitignore", "!.env.example\n!.env\n");
  auto a = archive_workdir(dir_.string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(entries(a->tar).count(".env.example"), 0u);
  EXPECT_EQ(a->withheld, (std::vector<std::string>{".env", ".env.example", ".ssh/", "sub/ca.pem"}));

  // !.ssh/ ships the directory, but its key still only by a name of its own; a later rule wins, as in git.
  write(".kubedistignore", "!.env.example\n!.ssh/\n!.env\n.env\n");
  write("sub/.kubedistignore", "!ca.pem\n");
  a = archive_workdir(dir_.string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto e = entries(a->tar);
  EXPECT_EQ(e.count(".env.example"), 1u);
  EXPECT_EQ(e.count(".ssh/known_hosts"), 1u);
  EXPECT_EQ(e.count("sub/ca.pem"), 1u);
  EXPECT_EQ(e.count(".ssh/id_rsa"), 0u);
  EXPECT_EQ(e.count(".env"), 0u);  // ignored by the last rule: left home silently, as any ignored file
  EXPECT_EQ(a->tar.find("SECRET"), std::string::npos);
  EXPECT_EQ(a->withheld, std::vector<std::string>{".ssh/id_rsa"});
}

// In a death test's child: archives dir with at most 1 GiB of address space, prints the error, exits 0 on one.
[[noreturn]] void archive_under_a_memory_cap(const std::string& dir) {
  const rlimit cap{uint64_t{1} << 30, uint64_t{1} << 30};
  ::setrlimit(RLIMIT_AS, &cap);
  auto a = archive_workdir(dir);
  std::cerr << (a.ok() ? std::string("shipped") : a.error().message) << std::endl;
  std::_Exit(a.ok() ? 1 : 0);
}

// A 10 GiB file (sparse: it takes no disk) must be refused from its size alone: the archive is built in a child
// whose address space is capped at 1 GiB, so reading the file whole would fail there.
TEST_F(Shipping, SizesComeFromStatAndAHugeFileIsNeverRead) {
  write("train.py", "x");
  write("weights.bin", "");
  fs::resize_file(dir_ / "weights.bin", uint64_t{10} << 30);
  const std::string dir = dir_.string();
  EXPECT_EXIT(archive_under_a_memory_cap(dir), ::testing::ExitedWithCode(0),
              "is over 10.0 GiB to ship, the limit is 6.0 MiB \\(largest: weights.bin \\(10.0 GiB\\)");
}

TEST_F(Shipping, LinksAreShippedAsLinksAndNeverFollowedOutOfTheDirectory) {
  std::ofstream(outside_ / "secret.txt") << "SECRET outside";
  write("train.py", "x");
  write("src/m.py", "m");
  fs::create_directories(dir_ / "sub");
  fs::create_directory_symlink(outside_, dir_ / "data");                  // absolute, out
  fs::create_symlink("../outside/secret.txt", dir_ / "peek.txt");          // relative, out
  fs::create_symlink("/etc/passwd", dir_ / "passwd");                      // absolute, out
  fs::create_symlink(dir_ / "train.py", dir_ / "abs_in.py");              // absolute, in: made relative
  fs::create_symlink(dir_ / "src/m.py", dir_ / "sub/abs_m.py");           // the same one level down
  fs::create_symlink("../src/m.py", dir_ / "sub/rel_m.py");                // relative, in: as it is
  fs::create_directory_symlink("src", dir_ / "lib");                       // a directory, in
  fs::create_symlink("sub/../data/secret.txt", dir_ / "through.txt");      // in by its name, out through data
  fs::create_symlink("loop", dir_ / "loop");                               // resolves nowhere
  fs::create_symlink("/nonexistent/kubedist/x", dir_ / "gone");            // dangling, out
  fs::create_symlink("not-yet.py", dir_ / "later.py");                     // dangling, in
  fs::create_symlink("peek.txt", dir_ / "chain.txt");                      // in by its name, out through peek.txt
  ASSERT_EQ(::mkfifo((dir_ / "queue").c_str(), 0600), 0);                  // would block a reader
  auto a = archive_workdir(dir_.string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->tar.find("SECRET"), std::string::npos);
  EXPECT_EQ(a->tar.find("root:"), std::string::npos);
  auto e = entries(a->tar);
  using Link = std::pair<char, std::string>;
  EXPECT_EQ(e["data"], Link('2', outside_.string()));
  EXPECT_EQ(e["peek.txt"], Link('2', "../outside/secret.txt"));
  EXPECT_EQ(e["passwd"], Link('2', "/etc/passwd"));
  EXPECT_EQ(e["abs_in.py"], Link('2', "train.py"));
  EXPECT_EQ(e["sub/abs_m.py"], Link('2', "../src/m.py"));
  EXPECT_EQ(e["sub/rel_m.py"], Link('2', "../src/m.py"));
  EXPECT_EQ(e["lib"], Link('2', "src"));
  EXPECT_EQ(e["through.txt"], Link('2', "sub/../data/secret.txt"));
  EXPECT_EQ(e["later.py"], Link('2', "not-yet.py"));
  EXPECT_EQ(e.count("data/secret.txt"), 0u);
  EXPECT_EQ(e.count("lib/m.py"), 0u);
  EXPECT_EQ(e.count("queue"), 0u);
  EXPECT_EQ(a->outside_links,
            (std::vector<std::string>{"chain.txt -> peek.txt", "data -> " + outside_.string(),
                                      "gone -> /nonexistent/kubedist/x", "loop -> loop", "passwd -> /etc/passwd",
                                      "peek.txt -> ../outside/secret.txt", "through.txt -> sub/../data/secret.txt"}));
}

TEST_F(Shipping, TheWorkingDirectoryReachedThroughALinkIsNotOutOfItself) {
  write("train.py", "x");
  fs::create_symlink(dir_ / "train.py", dir_ / "abs.py");
  fs::create_directory_symlink(dir_, base_ / "via");
  auto a = archive_workdir((base_ / "via").string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(entries(a->tar)["abs.py"], (std::pair<char, std::string>('2', "train.py")));
  EXPECT_TRUE(a->outside_links.empty());
}

TEST_F(Shipping, AnIgnoreFileOverItsLimitIsRefusedNotRead) {
  write("train.py", "x");
  write(".gitignore", std::string(kMaxIgnoreFileBytes + 1, '#'));
  auto a = archive_workdir(dir_.string());
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find(".gitignore is over 1.0 MiB"), std::string::npos) << a.error().message;
}

TEST_F(Shipping, AnIgnoreFileIsReadThroughALinkInsideTheDirectoryOnly) {
  write("train.py", "x");
  write("shared.ignore", "*.ckpt\n");
  write("sub/model.ckpt", "weights");
  write("sub/kept.py", "k");
  fs::create_symlink("../shared.ignore", dir_ / "sub/.gitignore");  // a shared .gitignore, inside
  auto a = archive_workdir(dir_.string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto e = entries(a->tar);
  EXPECT_EQ(e.count("sub/model.ckpt"), 0u);
  EXPECT_EQ(e.count("sub/kept.py"), 1u);
  EXPECT_EQ(e["sub/.gitignore"], (std::pair<char, std::string>('2', "../shared.ignore")));

  std::ofstream(outside_ / "rules") << "*.ckpt\n";
  fs::create_symlink(outside_ / "rules", dir_ / ".kubedistignore");  // out of the directory: not read
  a = archive_workdir(dir_.string());
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message, (dir_ / ".kubedistignore").string() +
                                   " is a link out of the working directory: not read; copy the file in instead");
}

TEST_F(Shipping, WhatIsShippedIsSaidWithTheLargestFilesFirstAndWhatStayedHome) {
  for (int i = 1; i <= 12; ++i) write("f" + std::to_string(i) + ".py", std::string(100 * i, 'x'));
  write("big.bin", std::string(3 << 20, 'b'));
  write("\x1b]0;owned\x07.py", std::string(5000, 't'));  // a hostile file name is shown, never sent to the terminal
  write(".env", "SECRET=1");
  fs::create_symlink("/data/set", dir_ / "data");
  auto a = archive_workdir(dir_.string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  const auto lines = describe_shipment(*a, dir_.string());
  ASSERT_EQ(lines.size(), 14u);
  EXPECT_EQ(lines[0], "shipping " + dir_.string() + ": 14 files, " + byte_size((3 << 20) + 7800 + 5000));
  EXPECT_EQ(lines[1], "  big.bin  3.0 MiB");
  EXPECT_EQ(lines[2], "  \\x1b]0;owned\\x07.py  4.9 KiB");
  EXPECT_EQ(lines[3], "  f12.py  1.2 KiB");
  EXPECT_EQ(lines[10], "  f5.py  500 B");
  EXPECT_EQ(lines[11], "  and 4 more (1000 B)");  // f4, f3, f2, f1
  EXPECT_EQ(lines[12], "left home, as they look like credentials: .env (to ship one on purpose, add !PATH to "
                       ".kubedistignore)");
  EXPECT_EQ(lines[13], "1 link points out of " + dir_.string() + ", shipped as a link and not followed (in the pods "
                       "it resolves there, not to your files): data -> /data/set");
  for (const auto& l : lines) EXPECT_EQ(l.find('\x1b'), std::string::npos) << l;

  a->sizes.resize(2);  // a smaller directory: every file named, no "more", nothing else to say
  a->files = 2;
  a->withheld.clear();
  a->outside_links.clear();
  EXPECT_EQ(describe_shipment(*a, "/w"),
            (std::vector<std::string>{"shipping /w: 2 files, 3.0 MiB", "  big.bin  3.0 MiB",
                                      "  \\x1b]0;owned\\x07.py  4.9 KiB"}));
}

TEST_F(Shipping, RunSaysWhatItShipsBeforeCreatingAnything) {
  write("train.py", "print(1)");
  write("\x1b[2Jx.py", "tiny");
  write(".aws/credentials", "SECRET");
  RunOptions o;
  o.command = {"torchrun", "train.py"};
  auto plan = plan_run(o, dir_.string(), "ns");
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->shipment, (std::vector<std::string>{
                                "shipping " + dir_.string() + ": 2 files, 12 B",
                                "  train.py  8 B",
                                "  \\x1b[2Jx.py  4 B",
                                "left home, as they look like credentials: .aws/ (to ship one on purpose, add !PATH "
                                "to .kubedistignore)"}));
}

}  // namespace
}  // namespace kubedist::kubectl
