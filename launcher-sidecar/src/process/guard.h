// Guard: the launcher runs as two processes so that killing either one, even with SIGKILL, leaves no process
// behind. The guard is the process that was started (PID 1 in a pod); it forks the supervisor, which runs
// everything else (rendezvous, workers). Both are child subreapers, so orphans stay below them:
// - the guard is SIGKILLed: the supervisor gets PR_SET_PDEATHSIG (SIGTERM), sees its parent changed, and
//   SIGKILLs every descendant (kill_descendants);
// - the supervisor is SIGKILLed: its workers die by their own PR_SET_PDEATHSIG, everything below them is
//   re-parented to the guard, which kills it and exits 128+9.
// The supervisor has its own process group, so a kill of the launcher's job (`kill -9 %1`) spares it.
// Needs no privilege (unlike a PID namespace or a cgroup), so it works for any container user.
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace kubedist::launcher {

// How long the side left alive waits for the descendants it SIGKILLed to be gone before it exits anyway.
inline constexpr int kKillPatienceMs = 5000;

// The guard's side: forwards every signal in `forwarded` (blocked by the caller) to the supervisor, reaps
// orphans, and when the supervisor exits kills what is left and returns its exit code (128+signal if killed).
int run_guard(pid_t supervisor, const sigset_t& forwarded);

// The supervisor's side, right after fork: own process group, subreaper, notified of the guard's death.
// False when the guard died already (before the notification was armed).
bool become_supervisor(pid_t guard);

// In the supervisor, on SIGTERM: true when it was the guard's death notice rather than a request to stop.
bool guard_died(pid_t guard);

}  // namespace kubedist::launcher
