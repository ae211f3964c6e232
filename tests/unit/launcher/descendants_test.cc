#include "process/descendants.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

namespace kubedist::launcher {
namespace {

TEST(LiveDescendants, FollowsTheParentChainBelowRootOnly) {
  // 10 is us; 11 a worker, 12 its child, 13 a grandchild that called setsid() (still below us by parent);
  // 20 a stranger with its own child 21.
  std::vector<ProcEntry> table{{1, 0, false},  {10, 1, false}, {11, 10, false}, {12, 11, false},
                               {13, 12, false}, {20, 1, false}, {21, 20, false}};
  EXPECT_EQ(live_descendants(10, table), (std::set<pid_t>{11, 12, 13}));
}

TEST(LiveDescendants, SkipsZombiesButNotTheirLiveChildren) {
  // A zombie cannot be killed; a live process listed below it (a stale scan) still is a descendant.
  std::vector<ProcEntry> table{{10, 1, false}, {11, 10, true}, {12, 11, false}};
  EXPECT_EQ(live_descendants(10, table), (std::set<pid_t>{12}));
}

TEST(LiveDescendants, IsEmptyWithoutChildrenAndSurvivesACycle) {
  EXPECT_TRUE(live_descendants(10, {{10, 1, false}, {20, 1, false}}).empty());
  // A table read while pids were reused may hold a cycle; the walk must still end.
  std::vector<ProcEntry> cycle{{11, 10, false}, {12, 11, false}, {11, 12, false}};
  EXPECT_EQ(live_descendants(10, cycle), (std::set<pid_t>{11, 12}));
}

TEST(ChildrenListed, ReadsTheKernelsChildrenFile) {
  EXPECT_EQ(children_listed("12 13 \n"), (std::vector<pid_t>{12, 13}));
  EXPECT_EQ(children_listed("4242"), (std::vector<pid_t>{4242}));
  EXPECT_TRUE(children_listed("").empty());
  EXPECT_TRUE(children_listed("\n").empty());
  EXPECT_EQ(children_listed("7 x 9"), (std::vector<pid_t>{7}));  // stops at what is no pid
}

TEST(DescendsFrom, FollowsTheParentChainToTheWorkerAndNoFurther) {
  const std::map<pid_t, pid_t> parents{{50, 40}, {40, 30}, {30, 1}, {60, 1}, {70, 71}, {71, 70}};
  const auto parent_of = [&](pid_t pid) -> std::optional<pid_t> {
    auto it = parents.find(pid);
    return it == parents.end() ? std::nullopt : std::optional<pid_t>(it->second);
  };
  EXPECT_TRUE(descends_from(30, 30, parent_of));   // the worker itself
  EXPECT_TRUE(descends_from(50, 30, parent_of));   // a process it started (a DataLoader worker's child)
  EXPECT_FALSE(descends_from(60, 30, parent_of));  // another process of the pod
  EXPECT_FALSE(descends_from(30, 50, parent_of));  // the worker's parent chain upward is not below it
  EXPECT_FALSE(descends_from(0, 30, parent_of));   // a sender of another PID namespace
  EXPECT_FALSE(descends_from(99, 30, parent_of));  // gone: its parent unreadable
  EXPECT_FALSE(descends_from(70, 30, parent_of));  // a cycle of reused pids ends the walk
  EXPECT_FALSE(descends_from(50, 1, parent_of));   // init is nobody's worker
}

TEST(DescendsFrom, ReadsThisProcesssOwnParentFromProc) {
  EXPECT_EQ(proc_parent(getpid()), getppid());
  EXPECT_TRUE(descends_from(getpid(), getppid(), proc_parent));
}

// In a process of its own, as the guard is: a subreaper with a worker that forked a child and a grandchild in a
// session of its own, then exited, so that the family was re-parented to it while it ran. Once the call returns
// nothing is left below it: no child to wait for, the grandchild gone.
TEST(KillAndReapDescendants, LeavesNoChildAndNoGrandchildBehind) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t guard = fork();
  ASSERT_GE(guard, 0);
  if (guard == 0) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int up[2];
    if (pipe(up) != 0) _exit(10);
    if (fork() == 0) {                 // the worker
      if (fork() == 0) {               // its child
        if (fork() == 0) {             // the grandchild, escaped into its own session
          setsid();
          const pid_t self = getpid();
          if (write(up[1], &self, sizeof self) != sizeof self) _exit(1);
          pause();
          _exit(0);
        }
        pause();
        _exit(0);
      }
      _exit(0);
    }
    pid_t grandchild = 0;
    if (read(up[0], &grandchild, sizeof grandchild) != sizeof grandchild) _exit(11);
    if (!kill_and_reap_descendants(2000)) _exit(12);
    if (waitpid(-1, nullptr, WNOHANG) != -1 || errno != ECHILD) _exit(13);  // nothing left to reap
    if (write(report[1], &grandchild, sizeof grandchild) != sizeof grandchild) _exit(14);
    _exit(0);
  }
  close(report[1]);
  int status = 0;
  ASSERT_EQ(waitpid(guard, &status, 0), guard);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  pid_t grandchild = 0;
  ASSERT_EQ(read(report[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  close(report[0]);
  EXPECT_EQ(kill(grandchild, 0), -1);  // reaped by the guard before it exited: no such process
  EXPECT_EQ(errno, ESRCH);
}

}  // namespace
}  // namespace kubedist::launcher
