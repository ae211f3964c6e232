#include "process/terminal.h"

#include <signal.h>
#include <unistd.h>

namespace kubedist::launcher {

TerminalState probe_terminal() {
  TerminalState t;
  t.is_tty = isatty(0) == 1;
  t.launcher_pgrp = getpgrp();
  t.foreground = t.is_tty && tcgetpgrp(0) == t.launcher_pgrp;
  return t;
}

StdinMode stdin_for(const TerminalState& terminal, int local_rank) {
  if (!terminal.is_tty) return StdinMode::Inherit;
  return terminal.foreground && local_rank == 0 ? StdinMode::Terminal : StdinMode::DevNull;
}

void give_terminal(pid_t pgrp) {
  // A group that is not the foreground one gets SIGTTOU for tcsetpgrp unless it blocks or ignores it.
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(0, pgrp);
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace kubedist::launcher
