// Descendants: every process below this one, found through /proc, and how to kill them all (also those that
// left their process group or session, which a process-group kill misses).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kubedist::launcher {

struct ProcEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  bool zombie = false;  // exited, waiting to be reaped: nothing left to kill
};

// The live (non-zombie) processes whose parent chain leads to root, root excluded.
std::set<pid_t> live_descendants(pid_t root, const std::vector<ProcEntry>& table);

// The pids in a /proc/PID/task/TID/children file ("12 13 "): a process's children, which the walk reads instead of
// the whole of /proc where the kernel provides them.
std::vector<pid_t> children_listed(const std::string& children_file);

// The parent of pid as /proc/PID/stat says, nullopt when it is gone or unreadable.
std::optional<pid_t> proc_parent(pid_t pid);

// Whether pid is ancestor or one of its descendants, walking parent_of up at most 64 steps (pid 0 or 1, or an
// unreadable parent, ends the walk: no).
bool descends_from(pid_t pid, pid_t ancestor, const std::function<std::optional<pid_t>(pid_t)>& parent_of);

// True when /proc belongs to this process's PID namespace (its PIDs are ours to signal). In a new PID namespace
// without its own /proc mount the numbers are the outer namespace's, and signalling them would hit strangers.
bool proc_is_ours();

// SIGKILLs every descendant of this process (found through the children files, else every /proc entry), scanning again until a scan finds nothing new (a process that
// forked just before its SIGKILL shows its child in the next scan). Does not reap. Without a usable /proc it
// does nothing and returns false.
bool kill_descendants();

// For a process that is about to exit and must leave nothing below it (the guard once the supervisor is gone, the
// supervisor once the guard is): kill_descendants, then reaps and scans again until this process has no child at
// all. A subreaper's descendants come to it as their parents die, so no child means no descendant: one scan can
// miss a process re-parented while it ran, the next one finds it. Gives up after `patience` (a process stuck in
// the kernel), saying how many are left. False without a usable /proc.
bool kill_and_reap_descendants(int patience_ms);

}  // namespace kubedist::launcher
