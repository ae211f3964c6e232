#include "process/descendants.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "util/fs_util.h"
#include "cli/local_world_size.h"  // list_directory

namespace kubedist::launcher {
namespace {

// /proc/PID/stat is "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so parse after the last ')'.
bool parse_stat(const std::string& stat, ProcEntry& entry) {
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 4 > stat.size()) return false;
  char state = stat[close + 2];
  char* end = nullptr;
  long ppid = std::strtol(stat.c_str() + close + 4, &end, 10);
  if (end == stat.c_str() + close + 4) return false;
  entry.ppid = static_cast<pid_t>(ppid);
  entry.zombie = state == 'Z' || state == 'X';
  return true;
}

// Every process's entry: what the subtree walk below falls back on.
std::vector<ProcEntry> read_proc_table() {
  std::vector<ProcEntry> table;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return table;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    ProcEntry entry;
    entry.pid = static_cast<pid_t>(pid);
    if (parse_stat(read_file_prefix(std::string("/proc/") + e->d_name + "/stat", 1024), entry)) table.push_back(entry);
  }
  closedir(dir);
  return table;
}

// The pids a children file ("/proc/P/task/T/children": "12 13 ") lists.
std::vector<pid_t> parse_children(const std::string& text) {
  std::vector<pid_t> pids;
  const char* p = text.c_str();
  for (;;) {
    char* end = nullptr;
    long pid = std::strtol(p, &end, 10);
    if (end == p) return pids;
    if (pid > 0) pids.push_back(static_cast<pid_t>(pid));
    p = end;
  }
}

// The entries of root's subtree, read through each process's children files, which cost what the subtree holds
// rather than every process on the machine: with a thousand launchers on one host, each scanning all of /proc at
// every round made a group's re-formation grow with the square of the nodes. nullopt where the kernel has no
// children files (CONFIG_PROC_CHILDREN).
std::optional<std::vector<ProcEntry>> read_subtree_table(pid_t root) {
  const std::string self_children = "/proc/" + std::to_string(root) + "/task/" + std::to_string(root) + "/children";
  if (access(self_children.c_str(), R_OK) != 0) return std::nullopt;
  std::vector<ProcEntry> table;
  std::set<pid_t> seen{root};
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    const std::string tasks = "/proc/" + std::to_string(parent) + "/task";
    for (const auto& tid : list_directory(tasks)) {
      for (pid_t child : parse_children(read_file_prefix(tasks + "/" + tid + "/children", 1 << 20))) {
        if (!seen.insert(child).second) continue;
        ProcEntry entry;
        entry.pid = child;
        if (!parse_stat(read_file_prefix("/proc/" + std::to_string(child) + "/stat", 1024), entry)) continue;  // gone
        table.push_back(entry);
        todo.push_back(child);
      }
    }
  }
  return table;
}

}  // namespace

std::optional<pid_t> proc_parent(pid_t pid) {
  ProcEntry entry;
  if (!parse_stat(read_file_prefix("/proc/" + std::to_string(pid) + "/stat", 1024), entry)) return std::nullopt;
  return entry.ppid;
}

bool descends_from(pid_t pid, pid_t ancestor, const std::function<std::optional<pid_t>(pid_t)>& parent_of) {
  if (ancestor <= 1) return false;
  for (int step = 0; step < 64 && pid > 1; ++step) {
    if (pid == ancestor) return true;
    const auto parent = parent_of(pid);
    if (!parent) return false;
    pid = *parent;
  }
  return false;
}

std::vector<pid_t> children_listed(const std::string& children_file) { return parse_children(children_file); }

std::set<pid_t> live_descendants(pid_t root, const std::vector<ProcEntry>& table) {
  std::multimap<pid_t, const ProcEntry*> children;
  for (const auto& e : table) children.emplace(e.ppid, &e);
  std::set<pid_t> found;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t parent = todo.back();
    todo.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      const ProcEntry& child = *it->second;
      if (child.pid == root || found.count(child.pid)) continue;  // a malformed table must not loop
      // A zombie has no children left (they were re-parented when it exited), and cannot be killed.
      if (!child.zombie) found.insert(child.pid);
      todo.push_back(child.pid);
    }
  }
  return found;
}

bool proc_is_ours() {
  char link[32] = {};
  ssize_t n = readlink("/proc/self", link, sizeof link - 1);
  return n > 0 && std::string(link, static_cast<size_t>(n)) == std::to_string(getpid());
}

bool kill_descendants() {
  if (!proc_is_ours()) return false;
  const pid_t self = getpid();
  std::set<pid_t> killed;
  for (;;) {
    bool fresh = false;
    auto subtree = read_subtree_table(self);
    for (pid_t pid : live_descendants(self, subtree ? *subtree : read_proc_table())) {
      if (!killed.insert(pid).second) continue;  // already dying: a process with SIGKILL pending cannot fork
      kill(pid, SIGKILL);
      fresh = true;
    }
    if (!fresh) return true;
  }
}

bool kill_and_reap_descendants(int patience_ms) {
  if (!kill_descendants()) return false;
  const timespec pause{0, 5'000'000};
  for (int waited_ms = 0;; waited_ms += 5) {
    int status = 0;
    pid_t reaped;
    while ((reaped = waitpid(-1, &status, WNOHANG)) > 0) {
    }
    if (reaped < 0 && errno == ECHILD) return true;
    if (waited_ms >= patience_ms) {
      const auto left = read_subtree_table(getpid());
      const std::string line = "kubedist-launcher: " + std::to_string(left ? left->size() : 0) +
                               " processes below the launcher were still exiting " + std::to_string(patience_ms) +
                               " ms after SIGKILL\n";
      ssize_t ignored = write(2, line.data(), line.size());  // one line, best effort: we exit next
      (void)ignored;
      return true;
    }
    nanosleep(&pause, nullptr);
    kill_descendants();  // whatever was re-parented to us since the last scan
  }
}

}  // namespace kubedist::launcher
