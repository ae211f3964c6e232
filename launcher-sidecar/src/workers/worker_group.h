// WorkerGroup: the worker processes of one round on this node: start, watch exits, stop (SIGTERM, grace, SIGKILL).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "io/event_loop.h"
#include "io/log_mux.h"
#include "util/result.h"
#include "process/terminal.h"
#include "workers/worker_env.h"

namespace kubedist::launcher {

// Where one of a worker's output streams goes.
struct StreamRoute {
  bool capture = false;  // false: the worker writes straight to the launcher's own fd
  std::string file;      // log file ("" for none), when captured
  int console_fd = -1;   // 1 or 2 to show it prefixed, -1 to hide it, when captured
  std::string prefix;
  // --duplicate-*-filters: the file (shared by the round's workers) that gets the prefixed lines containing one of
  // `filters`; "" for none.
  std::string filter_file;
  std::vector<std::string> filters;
};

struct WorkerLaunch {
  WorkerSpec spec;
  int local_rank = 0;
  int rank = 0;
  std::string error_file;
  StreamRoute out, err;
  StdinMode stdin_mode = StdinMode::Inherit;
  std::vector<int> cpus;  // --numa-binding: the CPUs it runs on (empty: the launcher's)
};

struct WorkerExit {
  int local_rank = 0;
  int rank = 0;
  pid_t pid = 0;
  int exit_code = 0;  // the exit status, or 128+signal when killed by a signal (as a shell reports it)
  int signal = 0;     // 0 unless killed by a signal
  std::chrono::system_clock::time_point when;
  std::string error_file;
  bool had_terminal = false;  // its process group was the terminal's foreground group (Ctrl-C reached only it)
};

// One line: "rank 3 (local rank 1, pid 42) exited with code 3 at 2026-01-01T00:00:00.000Z".
std::string describe_exit(const WorkerExit& exit);

class WorkerGroup {
 public:
  struct Events {
    std::function<void(const WorkerExit&)> on_failure;  // first non-zero exit while running
    std::function<void()> on_success;                   // every worker exited 0
    std::function<void()> on_stopped;                   // every worker is gone after stop()
  };
  // terminal_home: the process group that gets the terminal back when a worker that held it is gone.
  WorkerGroup(EventLoop& loop, LogMux& logs, Events events, pid_t terminal_home = 0);
  ~WorkerGroup();  // SIGKILLs every process group still alive and every descendant: no orphans
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  Result<bool> start(const std::vector<WorkerLaunch>& workers);
  bool on_child_exit(pid_t pid, int wait_status);  // true when pid was one of this group's workers
  // Sends `signal` to every worker's process group, then SIGKILL after `grace`; on_stopped when all are gone.
  void stop(int signal, std::chrono::milliseconds grace);
  int running() const { return running_; }
  // The pid of local_rank's worker while it runs (its process group's id too), else 0.
  pid_t pid_of(int local_rank) const;
  bool stopping() const { return stopping_; }

 private:
  struct Worker {
    pid_t pid = 0;
    int local_rank = 0;
    int rank = 0;
    std::string error_file;
    bool alive = false;
    bool terminal = false;
  };
  void return_terminal();
  void signal_all(int signal);
  EventLoop& loop_;
  LogMux& logs_;
  Events events_;
  std::vector<Worker> workers_;
  int running_ = 0;
  bool stopping_ = false;
  bool failed_ = false;
  EventLoop::TimerId kill_timer_ = 0;
  pid_t terminal_home_ = 0;
  bool terminal_given_ = false;
};

}  // namespace kubedist::launcher
