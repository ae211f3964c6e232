// Terminal: who reads the launcher's stdin when it is a terminal. Workers have process groups of their own, and
// a process reading its terminal from a group that is not the foreground one is stopped (SIGTTIN): a worker at
// a `breakpoint()` or `input()` would hang silently. So local rank 0 gets the terminal (its group becomes the
// foreground one while it runs) and the other local ranks read /dev/null, as mpirun does.
#pragma once

#include <sys/types.h>

namespace kubedist::launcher {

enum class StdinMode {
  Inherit,   // stdin is not a terminal (a pipe, a file, /dev/null in a pod): every worker shares it, as in torchrun
  Terminal,  // the worker's process group becomes the terminal's foreground group
  DevNull,   // reads see end-of-file at once
};

struct TerminalState {
  bool is_tty = false;         // stdin is a terminal
  bool foreground = false;     // ... and the launcher's process group is its foreground group
  pid_t launcher_pgrp = 0;     // the group to give the terminal back to
};

// Looks at stdin from the launcher's own (original) process group.
TerminalState probe_terminal();

// In the background a read from the terminal would stop the worker, so no worker gets it there.
StdinMode stdin_for(const TerminalState& terminal, int local_rank);

// tcsetpgrp on stdin; safe from a background group (SIGTTOU is ignored by the caller or blocked here).
void give_terminal(pid_t pgrp);

}  // namespace kubedist::launcher
