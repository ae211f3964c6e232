#include "workers/worker_group.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "process/descendants.h"
#include "util/fs_util.h"

namespace kubedist::launcher {
namespace {

std::string iso_time(std::chrono::system_clock::time_point t) {
  auto secs = std::chrono::system_clock::to_time_t(t);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string dirname_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Opens the pipe and log file for a captured stream; returns the fd the child writes to (or -1: inherit).
Result<int> open_route(const StreamRoute& route, LogMux& logs) {
  if (!route.capture) return -1;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return make_error(std::string("pipe: ") + std::strerror(errno));
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  int file_fd = -1;
  if (!route.file.empty()) {
    make_dirs(dirname_of(route.file));
    file_fd = open(route.file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (file_fd < 0) {
      close(fds[0]);
      close(fds[1]);
      return make_error("cannot open log file " + route.file + ": " + std::strerror(errno));
    }
  }
  int filter_fd = -1;
  if (!route.filter_file.empty()) {
    // Appended to by every worker of the round; the agent empties it when the round starts.
    filter_fd = open(route.filter_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (filter_fd < 0) {
      close(fds[0]);
      close(fds[1]);
      if (file_fd >= 0) close(file_fd);
      return make_error("cannot open log file " + route.filter_file + ": " + std::strerror(errno));
    }
  }
  logs.add(fds[0], file_fd, route.console_fd, route.prefix, filter_fd, route.filters);
  return fds[1];
}

// In the child, between fork and exec: only async-signal-safe calls.
// in_fd: -1 inherits stdin, -2 closes it (no /dev/null to read), else the fd to read.
[[noreturn]] void exec_worker(pid_t parent, StdinMode stdin_mode, int in_fd, int out_fd, int err_fd,
                              char* const argv[], char* const envp[], const cpu_set_t* cpus) {
  setpgid(0, 0);                        // own process group: stop() signals the worker and its children
  // Before exec, so that every thread the worker starts inherits it (numactl --physcpubind, as torchrun runs it).
  if (cpus && sched_setaffinity(0, sizeof *cpus, cpus) != 0) {
    const char* msg = "kubedist-launcher: --numa-binding: cannot bind the worker to its CPUs\n";
    ssize_t ignored = write(2, msg, strlen(msg));
    (void)ignored;
    _exit(127);
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);     // the launcher dying (even by SIGKILL) takes its workers along
  if (getppid() != parent) _exit(125);  // the launcher died before prctl took effect
  // Before exec, as the parent does after fork: whichever runs first, the worker never reads in the background.
  if (stdin_mode == StdinMode::Terminal) give_terminal(getpid());
  if (in_fd >= 0) dup2(in_fd, 0);
  if (in_fd == -2) close(0);
  if (out_fd >= 0) dup2(out_fd, 1);
  if (err_fd >= 0) dup2(err_fd, 2);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  if (stdin_mode == StdinMode::Terminal) {
    // Ctrl-Z would stop the worker while the shell waits for the launcher, which does not stop: a frozen
    // terminal. An ignored SIGTSTP stays ignored across exec.
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGTSTP, &ign, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execvpe(argv[0], argv, envp);
  int err = errno;
  const char* parts[] = {"kubedist-launcher: cannot run '", argv[0], "': ", strerror(err), "\n"};
  for (const char* p : parts) {
    ssize_t ignored = write(2, p, strlen(p));
    (void)ignored;
  }
  _exit(127);
}

}  // namespace

std::string describe_exit(const WorkerExit& e) {
  std::string what = e.signal ? "was killed by signal " + std::to_string(e.signal) + " (" + strsignal(e.signal) + ")"
                              : "exited with code " + std::to_string(e.exit_code);
  return "rank " + std::to_string(e.rank) + " (local rank " + std::to_string(e.local_rank) + ", pid " +
         std::to_string(e.pid) + ") " + what + " at " + iso_time(e.when);
}

WorkerGroup::WorkerGroup(EventLoop& loop, LogMux& logs, Events events, pid_t terminal_home)
    : loop_(loop), logs_(logs), events_(std::move(events)), terminal_home_(terminal_home) {}

WorkerGroup::~WorkerGroup() {
  if (kill_timer_) loop_.cancel(kill_timer_);
  signal_all(SIGKILL);
  kill_descendants();
  return_terminal();
}

void WorkerGroup::return_terminal() {
  if (!terminal_given_) return;
  terminal_given_ = false;
  give_terminal(terminal_home_);
}

Result<bool> WorkerGroup::start(const std::vector<WorkerLaunch>& launches) {
  const pid_t parent = getpid();
  for (const auto& w : launches) {
    auto out = open_route(w.out, logs_);
    if (!out) return make_error(out.error());
    auto err = open_route(w.err, logs_);
    if (!err) {
      if (*out >= 0) close(*out);
      return make_error(err.error());
    }
    std::vector<std::string> env_strings = env_to_strings(w.spec.env);
    std::vector<char*> argv, envp;
    for (const auto& a : w.spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    int in_fd = -1;
    if (w.stdin_mode == StdinMode::DevNull) {
      in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (in_fd < 0) in_fd = -2;
    }
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int cpu : w.cpus)
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &cpus);
    pid_t pid = fork();
    if (pid == 0)
      exec_worker(parent, w.stdin_mode, in_fd, *out, *err, argv.data(), envp.data(), w.cpus.empty() ? nullptr : &cpus);
    if (in_fd >= 0) close(in_fd);
    if (*out >= 0) close(*out);
    if (*err >= 0) close(*err);
    if (pid < 0) return make_error(std::string("fork: ") + std::strerror(errno));
    setpgid(pid, pid);  // also here, so that a stop() right after start() cannot miss the group
    const bool terminal = w.stdin_mode == StdinMode::Terminal;
    if (terminal) {
      give_terminal(pid);
      terminal_given_ = true;
    }
    workers_.push_back(Worker{pid, w.local_rank, w.rank, w.error_file, true, terminal});
    ++running_;
  }
  return true;
}

bool WorkerGroup::on_child_exit(pid_t pid, int status) {
  for (auto& w : workers_) {
    if (w.pid != pid || !w.alive) continue;
    w.alive = false;
    --running_;
    WorkerExit exit{w.local_rank, w.rank, pid, 0, 0, std::chrono::system_clock::now(), w.error_file, w.terminal};
    if (w.terminal) return_terminal();
    if (WIFSIGNALED(status)) {
      exit.signal = WTERMSIG(status);
      exit.exit_code = 128 + exit.signal;
    } else {
      exit.exit_code = WEXITSTATUS(status);
    }
    if (stopping_) {
      if (running_ == 0) {
        if (kill_timer_) loop_.cancel(kill_timer_);
        kill_timer_ = 0;
        signal_all(SIGKILL);  // whatever the workers left behind in their groups,
        kill_descendants();   // and outside them (setsid()): nothing of this round survives into the next
        events_.on_stopped();
      }
    } else if (exit.exit_code != 0 && !failed_) {
      failed_ = true;
      events_.on_failure(exit);
    } else if (running_ == 0 && !failed_) {
      events_.on_success();
    }
    return true;
  }
  return false;
}

void WorkerGroup::stop(int signal, std::chrono::milliseconds grace) {
  if (stopping_) {
    signal_all(signal);  // a second request (say SIGINT after SIGTERM) is passed on too
    return;
  }
  stopping_ = true;
  signal_all(signal);
  if (running_ == 0) {
    loop_.defer([this] { events_.on_stopped(); });
    return;
  }
  kill_timer_ = loop_.after(grace, [this] {
    kill_timer_ = 0;
    signal_all(SIGKILL);
  });
}

pid_t WorkerGroup::pid_of(int local_rank) const {
  for (const auto& w : workers_)
    if (w.local_rank == local_rank && w.alive) return w.pid;
  return 0;
}

void WorkerGroup::signal_all(int signal) {
  for (const auto& w : workers_) kill(-w.pid, signal);
}

}  // namespace kubedist::launcher
