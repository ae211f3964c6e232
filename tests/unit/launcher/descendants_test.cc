#include "process/descendants.h"

#include <gtest/gtest.h>
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

}  // namespace
}  // namespace kubedist::launcher
