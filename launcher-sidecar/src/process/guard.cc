#include "process/guard.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/descendants.h"

namespace kubedist::launcher {

int run_guard(pid_t supervisor, const sigset_t& forwarded) {
  sigset_t wanted = forwarded;
  sigaddset(&wanted, SIGCHLD);
  for (;;) {
    siginfo_t info{};
    int sig = sigwaitinfo(&wanted, &info);
    if (sig < 0) continue;  // EINTR
    if (sig != SIGCHLD) {
      kill(supervisor, sig);
      continue;
    }
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid != supervisor) continue;  // an orphan re-parented to us
      kill_and_reap_descendants(kKillPatienceMs);  // what the supervisor could not stop (it was SIGKILLed, say)
      return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    }
  }
}

bool become_supervisor(pid_t guard) {
  setpgid(0, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans of our workers come to us, not to the guard
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // Our own group is a background one on a terminal: with `stty tostop` our writes to it would stop us.
  signal(SIGTTOU, SIG_IGN);
  return getppid() == guard;
}

bool guard_died(pid_t guard) { return getppid() != guard; }

}  // namespace kubedist::launcher
