// Stacks: what a worker's Python stacks (faulthandler's dump, which the progress helper arms) say about where it
// is stuck, in a few words for the hang's message (pure).
#pragma once

#include <string>

namespace kubedist::launcher {

struct StackSummary {
  std::string host;   // the node's host name (the pod's), filled in by the launcher that took the stack
  std::string where;  // "in all_reduce (train.py:57)": the innermost call, and the program's own innermost line
  std::string trace;  // "all_reduce distributed_c10d.py:1536 < main train.py:57 < <module> train.py:80"
  bool operator==(const StackSummary&) const = default;
};

// From faulthandler's dump of every thread ("Thread 0x... (most recent call first):", "  File "x.py", line 3 in f"
// lines): the main thread's (the one whose outermost frame is a module's top level, else the dumping thread, else
// the first). `where` empty when the dump holds no frame.
StackSummary summarize_stacks(const std::string& dump);

}  // namespace kubedist::launcher
