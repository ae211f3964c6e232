#include "agent.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "workers/failure_summary.h"
#include "util/fs_util.h"
#include "workers/output_routes.h"

namespace kubedist::launcher {
namespace {

void say(const std::string& line) { write_all(2, "kubedist-launcher: " + line + "\n"); }

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "unknown-host";
}

}  // namespace

Agent::Agent(EventLoop& loop, LaunchConfig config, Env base_env, int local_world_size, std::string run_dir,
             LauncherMetrics& metrics, TerminalState terminal, EventTrace trace)
    : loop_(loop),
      config_(std::move(config)),
      base_env_(std::move(base_env)),
      local_world_size_(local_world_size),
      run_dir_(std::move(run_dir)),
      metrics_(metrics),
      terminal_(terminal),
      trace_(std::move(trace)),
      logs_(loop) {}

MemberEvents Agent::member_events() {
  return MemberEvents{[this](const Assignment& a) { on_round(a); }, [this] { on_stop(); },
                      [this](int code, const std::string& reason) { on_end(code, reason); }};
}

void Agent::start(RendezvousMember& member) {
  member_ = &member;
  join();
}

void Agent::join() {
  state_ = State::Joining;
  trace_.stamp("join");
  member_->join(JoinRequest{config_.run_id, config_.node_rank, local_world_size_, coordinator_settings(config_)});
}

void Agent::on_round(const Assignment& a) {
  if (state_ != State::Joining) return;
  trace_.stamp("assigned " + std::to_string(a.round));  // before its workers: the rendezvous alone
  assignment_ = a;
  failure_line_.clear();
  const std::string attempt_dir = run_dir_ + "/attempt_" + std::to_string(a.restart_count);
  std::vector<WorkerLaunch> launches;
  for (int lr = 0; lr < local_world_size_; ++lr) {
    WorkerLaunch w;
    const std::string dir = attempt_dir + "/" + std::to_string(lr);
    make_dirs(dir);
    w.local_rank = lr;
    w.rank = a.rank_offset + lr;
    w.error_file = dir + "/error.json";
    w.spec = render_worker(config_, a, local_world_size_, lr, w.error_file, base_env_);
    w.out = route_for(config_, lr, w.rank, 1, dir);
    w.err = route_for(config_, lr, w.rank, 2, dir);
    w.stdin_mode = stdin_for(terminal_, lr);
    launches.push_back(std::move(w));
  }
  group_ = std::make_unique<WorkerGroup>(
      loop_, logs_,
      WorkerGroup::Events{[this](const WorkerExit& e) { on_worker_failure(e); },
                          [this] {
                            state_ = State::Done;
                            metrics_.workers_running = 0;
                            member_->done(assignment_.round);
                          },
                          [this] { loop_.defer([this] { on_workers_stopped(); }); }},
      terminal_.launcher_pgrp);
  state_ = State::Running;
  auto started = group_->start(launches);
  metrics_.rendezvous_rounds_total++;
  metrics_.rendezvous_round = a.round;
  metrics_.workers_running = group_->running();
  if (started_once_) metrics_.worker_restarts_total++;
  started_once_ = true;
  if (failure_seen_at_) {
    metrics_.last_recovery_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - *failure_seen_at_).count();
    failure_seen_at_.reset();
  }
  if (!started) {
    say("cannot start workers: " + started.error());
    failure_seen_at_ = std::chrono::steady_clock::now();
    stop_workers(SIGTERM);
    member_->failed(a.round, 1, "cannot start workers: " + started.error());
  }
}

void Agent::on_worker_failure(const WorkerExit& e) {
  if (e.had_terminal && (e.signal == SIGINT || e.signal == SIGQUIT)) {
    // Ctrl-C (or Ctrl-\) reached only the worker holding the terminal: the user stops the job, no restart.
    say("rank " + std::to_string(e.rank) + " was interrupted from the terminal: stopping");
    return shutdown(e.signal);
  }
  say("worker failed: " + describe_exit(e));
  failure_line_ = failure_summary(e, host_name(), read_file_prefix(e.error_file, 1 << 20));
  std::string error = read_file_prefix(e.error_file, 4096);
  if (!error.empty()) {
    while (!error.empty() && error.back() == '\n') error.pop_back();
    say("rank " + std::to_string(e.rank) + " error file " + e.error_file + ": " + error);
  }
  failure_seen_at_ = std::chrono::steady_clock::now();
  stop_workers(SIGTERM);
  member_->failed(assignment_.round, e.exit_code, describe_exit(e));
}

void Agent::on_stop() {
  if (state_ != State::Running) return;  // already stopping, or not started: the next JOIN follows anyway
  failure_seen_at_ = std::chrono::steady_clock::now();
  stop_workers(SIGTERM);
}

void Agent::stop_workers(int signal) {
  state_ = State::Stopping;
  group_->stop(signal, std::chrono::milliseconds(static_cast<long>(config_.stop_timeout * 1000)));
}

void Agent::on_workers_stopped() {
  metrics_.workers_running = 0;
  group_.reset();
  if (shutdown_signal_) return finish(128 + shutdown_signal_);
  if (pending_end_) return finish(*pending_end_);
  join();
}

void Agent::on_end(int code, const std::string& reason) {
  if (code != 0) {
    say(reason);
    end_reason_ = reason;
  }
  if (state_ == State::Running) {
    pending_end_ = code;
    return stop_workers(SIGTERM);
  }
  if (state_ == State::Stopping) {
    pending_end_ = code;
    return;
  }
  finish(code);
}

void Agent::shutdown(int signal) {
  shutdown_signal_ = signal;
  // Leaving on purpose (the operator scales down or removes the pod): the other nodes re-form the group and
  // count a scale restart, not a lost node. Also while joining or stopping: a ROUND may be on its way to us.
  if (member_ != nullptr && state_ != State::Done && state_ != State::Exiting) member_->leave();
  if (group_ && (state_ == State::Running || state_ == State::Stopping)) {
    say(std::string("received ") + strsignal(signal) + ": stopping workers");
    state_ = State::Stopping;
    group_->stop(signal, std::chrono::milliseconds(static_cast<long>(config_.stop_timeout * 1000)));
    return;
  }
  finish(128 + signal);
}

void Agent::reap_children() {
  int status = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    if (group_) group_->on_child_exit(pid, status);
  }
}

void Agent::finish(int code) {
  if (exit_code_) return;
  state_ = State::Exiting;
  group_.reset();  // SIGKILLs whatever is left in the workers' process groups and below us
  logs_.drain_all();
  write_termination_log(code);
  exit_code_ = code;
  loop_.stop();
}

// The job failed (not stopped by a signal to the launcher): say why where Kubernetes looks. A file that cannot be
// written costs a warning, never the exit code.
void Agent::write_termination_log(int code) {
  if (code == 0 || shutdown_signal_ || config_.termination_log.empty()) return;
  std::string line = failure_line_.empty() ? one_line(end_reason_) : failure_line_;
  if (line.empty()) line = "kubedist-launcher exited with code " + std::to_string(code);
  auto written = kubedist::launcher::write_termination_log(config_.termination_log, line);
  if (!written) say("warning: " + written.error());
}

}  // namespace kubedist::launcher
