#include "agent.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "contract/pod_env.h"
#include "process/descendants.h"
#include "progress/python_helper.h"
#include "progress/stacks.h"
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

constexpr auto kForwardEvery = std::chrono::milliseconds(250);
constexpr auto kDomainPoll = std::chrono::milliseconds(100);
constexpr int kDomainPolls = 300;  // 30 s for the operator's annotation to reach the pod's file
constexpr auto kStackPoll = std::chrono::milliseconds(100);
constexpr int kStackPolls = 20;  // 2 s for the workers' faulthandler to write

void truncate_file(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
}

long file_size(const std::string& path) {
  struct stat st {};
  return !path.empty() && stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : -1;
}

std::string dir_of_self() {
  char path[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "";
  std::string p(path, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
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
      logs_(loop),
      channel_(
          loop, [this](int lr, std::string_view data, size_t size) { on_report(lr, data, size); },
          [this](int lr, pid_t sender) { return report_from_worker(lr, sender); },
          [this](int lr, pid_t sender) { on_foreign_report(lr, sender); }) {
  request_file_ = run_dir_ + "/checkpoint-request";
  if (const auto it = base_env_.find(contract::kCheckpointTimeout); it != base_env_.end()) {
    const long seconds = std::strtol(it->second.c_str(), nullptr, 10);
    if (seconds > 0 && seconds <= 86400) checkpoint_timeout_s_ = static_cast<int>(seconds);
  }
  if (auto opened = channel_.open(local_world_size_); !opened) {
    say("warning: workers cannot report progress: " + opened.error());
    return;
  }
  // The helper goes where the run's files go, else beside the launcher (in a pod: the launcher's emptyDir).
  std::string why;
  for (const std::string& dir : {run_dir_ + "/python", dir_of_self() + "/python"}) {
    auto installed = install_python_helper(dir);
    if (installed) {
      python_dir_ = *installed;
      return;
    }
    why += (why.empty() ? "" : "; ") + installed.error();
  }
  say("warning: `from kubedist import progress` will not work in the workers: " + why);
}

Agent::~Agent() {
  if (checkpoint_timer_) loop_.cancel(checkpoint_timer_);
  if (forward_timer_) loop_.cancel(forward_timer_);
  if (stacks_timer_) loop_.cancel(stacks_timer_);
}

MemberEvents Agent::member_events() {
  return MemberEvents{[this](const Assignment& a) { on_round(a); }, [this] { on_stop(); },
                      [this](int code, const std::string& reason) { on_end(code, reason); },
                      [this](int round) { on_dump(round); }, [this](const std::string& m) { on_hang(m); }};
}

void Agent::start(RendezvousMember& member) {
  member_ = &member;
  if (config_.spare)
    say("node rank " + std::to_string(config_.node_rank) + " is a spare: it runs no worker until a lost node's place "
        "is open");
  domain_polls_left_ = config_.topology_domain_file.empty() ? 0 : kDomainPolls;
  wait_for_domain_then_join();
}

std::string Agent::read_domain() const {
  if (config_.topology_domain_file.empty()) return "";
  std::istringstream in(read_file_prefix(config_.topology_domain_file, 256));
  std::string word;
  in >> word;
  return word;
}

void Agent::wait_for_domain_then_join() {
  const std::string word = read_domain();
  if (word.empty() && domain_polls_left_ > 0) {
    if (domain_polls_left_-- == kDomainPolls) {
      say("waiting up to " + std::to_string(kDomainPolls * kDomainPoll.count() / 1000) +
          " s for this node's topology domain in " + config_.topology_domain_file);
    }
    loop_.after(kDomainPoll, [this] { wait_for_domain_then_join(); });
    return;
  }
  if (word.empty() && !config_.topology_domain_file.empty()) {
    say("no topology domain in " + config_.topology_domain_file + " after " +
        std::to_string(kDomainPolls * kDomainPoll.count() / 1000) + " s: this node's group rank follows its node rank");
  } else if (!word.empty() && word != contract::kNoTopologyDomain && !contract::is_topology_domain(word)) {
    say("ignoring the topology domain '" + word.substr(0, 80) + "' in " + config_.topology_domain_file +
        ": not a node label's value");
  }
  join();
}

void Agent::join() {
  state_ = State::Joining;
  trace_.stamp("join");
  JoinRequest request{config_.run_id, config_.node_rank, local_world_size_, coordinator_settings(config_)};
  request.spare = config_.spare && stand_in_slot_ < 0;
  request.stand_in = stand_in_slot_;
  const std::string word = read_domain();  // read again at each JOIN: a domain known later is used from then on
  if (contract::is_topology_domain(word) && word != domain_) {
    domain_ = word;
    say("this node's topology domain is " + domain_ + " (its group rank follows it)");
  }
  request.domain = domain_;
  member_->join(request);
}

void Agent::on_round(const Assignment& a) {
  if (state_ != State::Joining) return;
  trace_.stamp("assigned " + std::to_string(a.round));  // before its workers: the rendezvous alone
  if (a.stand_in_slot >= 0 && a.stand_in_slot != stand_in_slot_) {
    stand_in_slot_ = a.stand_in_slot;
    say("this spare stands in for node rank " + std::to_string(a.stand_in_slot) + " (group rank " +
        std::to_string(a.group_rank) + ") from round " + std::to_string(a.round));
  }
  assignment_ = a;
  failure_line_.clear();
  const std::string attempt_dir = run_dir_ + "/attempt_" + std::to_string(a.restart_count);
  std::vector<WorkerLaunch> launches;
  std::vector<int> ranks;
  stack_files_.assign(static_cast<size_t>(local_world_size_), "");
  forwarded_this_round_ = false;
  for (int lr = 0; lr < local_world_size_; ++lr) {
    WorkerLaunch w;
    const std::string dir = attempt_dir + "/" + std::to_string(lr);
    const bool dir_ok = make_dirs(dir);
    w.local_rank = lr;
    w.rank = a.rank_offset + lr;
    ranks.push_back(w.rank);
    w.error_file = dir + "/error.json";
    w.spec = render_worker(config_, a, local_world_size_, lr, w.error_file, base_env_);
    if (dir_ok) stack_files_[static_cast<size_t>(lr)] = dir + "/stacks.txt";
    add_progress_env(w.spec.env, channel_.address(lr), stack_files_[static_cast<size_t>(lr)], python_dir_,
                     request_file_);
    w.out = route_for(config_, lr, w.rank, 1, dir, host_name());
    w.err = route_for(config_, lr, w.rank, 2, dir, host_name());
    w.stdin_mode = stdin_for(terminal_, lr);
    if (static_cast<size_t>(lr) < config_.worker_cpus.size()) w.cpus = config_.worker_cpus[static_cast<size_t>(lr)];
    launches.push_back(std::move(w));
  }
  // The round's workers append to these; a round that reuses an attempt's directory starts them anew.
  for (int stream : {1, 2})
    if (const std::string file = filtered_file(config_, stream, attempt_dir); !file.empty()) truncate_file(file);
  if (!request_file_.empty()) unlink(request_file_.c_str());  // new workers: no request yet
  local_.start_round(ranks);
  metrics_.rank_step_seconds.clear();
  senders_.clear();  // new workers, new pids
  group_ = std::make_unique<WorkerGroup>(
      loop_, logs_,
      WorkerGroup::Events{[this](const WorkerExit& e) { on_worker_failure(e); },
                          [this] {
                            // The workers' last reports (a checkpoint completed just before the end) reach node
                            // 0 before DONE, whatever the forwarding interval.
                            if (forward_timer_) loop_.cancel(forward_timer_);
                            forward_timer_ = 0;
                            forward_progress();
                            state_ = State::Done;
                            metrics_.workers_running = 0;
                            member_->done(assignment_.round);
                            if (awaiting_checkpoint())  // nothing left to save (deferred: this is the group's call)
                              loop_.defer([this] {
                                if (awaiting_checkpoint()) stop_for_shutdown();
                              });
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

void Agent::on_report(int local_rank, std::string_view datagram, size_t size) {
  const std::string warning = local_.take(local_rank, datagram, size, std::chrono::steady_clock::now());
  if (!warning.empty()) say("warning: " + warning);
  if (awaiting_checkpoint() && local_.all_answered()) on_checkpoint_answers();
  metrics_.progress_reports_dropped_total = local_.dropped();
  metrics_.progress_reports_malformed_total = local_.malformed();
  if (!local_.changed() || forward_timer_ || state_ != State::Running) return;
  const auto now = std::chrono::steady_clock::now();
  const auto delay = forwarded_this_round_ ? last_forward_ + kForwardEvery - now : std::chrono::nanoseconds(0);
  forward_timer_ = loop_.after(std::max(delay, std::chrono::steady_clock::duration(0)), [this] {
    forward_timer_ = 0;
    forward_progress();
  });
}

bool Agent::report_from_worker(int local_rank, pid_t sender) {
  const pid_t worker = group_ ? group_->pid_of(local_rank) : 0;
  if (worker <= 0 || sender <= 0) return false;
  if (sender == worker) return true;
  if (auto known = senders_.find(sender); known != senders_.end()) return known->second;
  if (senders_.size() >= 4096) senders_.clear();  // bounded: a sender is walked again at worst
  return senders_[sender] = descends_from(sender, worker, proc_parent);
}

void Agent::on_foreign_report(int local_rank, pid_t sender) {
  ++metrics_.progress_reports_foreign_total;
  if (foreign_said_) return;
  foreign_said_ = true;
  say("warning: ignoring progress reports to local rank " + std::to_string(local_rank) + "'s socket from " +
      (sender > 0 ? "pid " + std::to_string(sender) : std::string("a process of another PID namespace")) +
      ", which is not that rank's worker or a process it started (another container of the pod, or a hostNetwork "
      "process of the node, can reach the socket); counted in kubedist_launcher_progress_reports_foreign_total");
}

void Agent::forward_progress() {
  if (state_ != State::Running || !local_.changed()) return;
  last_forward_ = std::chrono::steady_clock::now();
  forwarded_this_round_ = true;
  metrics_.rank_step_seconds = local_.step_seconds();
  member_->progress(assignment_.round, local_.summary());
}

void Agent::on_dump(int round) {
  if (stacks_) return;  // one at a time
  if (state_ != State::Running || round != assignment_.round || !group_) return member_->stacks(round, {});
  StackRequest req;
  req.round = round;
  for (const auto& t : local_.stack_targets()) {
    StackTarget target;
    target.rank = t.rank;
    target.file = stack_files_[static_cast<size_t>(t.local_rank)];
    target.before = std::max(0L, file_size(target.file));
    // Only a process of this worker (its process group) that armed faulthandler on that signal: any other
    // signal could kill it, and a pid from a report is no proof of who it is.
    const pid_t worker = group_->pid_of(t.local_rank);
    if (t.pid > 0 && t.signal > 0 && worker > 0 && !target.file.empty() && getpgid(t.pid) == worker)
      target.signalled = kill(t.pid, t.signal) == 0;
    req.targets.push_back(target);
  }
  stacks_ = std::move(req);
  stacks_timer_ = loop_.after(kStackPoll, [this] { poll_stacks(); });
}

void Agent::poll_stacks() {
  stacks_timer_ = 0;
  if (!stacks_) return;
  StackRequest& req = *stacks_;
  bool waiting = false;
  for (auto& t : req.targets) {
    if (!t.signalled) continue;
    const long size = file_size(t.file);
    if (size > t.before && size == t.last) ++t.stable;
    else t.stable = 0;
    t.last = size;
    waiting = waiting || t.stable < 2;  // written, and no more for 200 ms
  }
  if (waiting && ++req.polls < kStackPolls) {
    stacks_timer_ = loop_.after(kStackPoll, [this] { poll_stacks(); });
    return;
  }
  std::map<int, StackSummary> stacks;
  const std::string host = host_name();
  for (const auto& t : req.targets) {
    StackSummary s;
    if (t.signalled) {
      const std::string dump = read_file_prefix(t.file, 1 << 20);
      const std::string mine = static_cast<size_t>(t.before) < dump.size() ? dump.substr(static_cast<size_t>(t.before)) : "";
      s = summarize_stacks(mine);
      if (!mine.empty()) write_all(2, "kubedist-launcher: rank " + std::to_string(t.rank) + "'s stacks:\n" + mine);
    }
    s.host = host;
    stacks[t.rank] = s;
  }
  const int round = req.round;
  stacks_.reset();
  member_->stacks(round, stacks);
}

void Agent::on_hang(const std::string& message) {
  // Now, not only when the launcher exits: the pod may be killed in a hang's aftermath, and whoever looks at it
  // should read why.
  if (config_.termination_log.empty()) return;
  auto written = kubedist::launcher::write_termination_log(config_.termination_log, one_line("hang: " + message));
  if (!written) say("warning: " + written.error());
}

void Agent::on_worker_failure(const WorkerExit& e) {
  if (e.had_terminal && (e.signal == SIGINT || e.signal == SIGQUIT)) {
    // Ctrl-C (or Ctrl-\) reached only the worker holding the terminal: the user stops the job, no restart.
    say("rank " + std::to_string(e.rank) + " was interrupted from the terminal: stopping");
    return shutdown(e.signal);
  }
  say("worker failed: " + describe_exit(e));
  const std::string error_file = read_file_prefix(e.error_file, 1 << 20);
  failure_line_ = failure_summary(e, host_name(), error_file);
  std::string error = error_file.substr(0, 4096);
  if (!error.empty()) {
    while (!error.empty() && error.back() == '\n') error.pop_back();
    say("rank " + std::to_string(e.rank) + " error file " + e.error_file + ": " + error);
  }
  failure_seen_at_ = std::chrono::steady_clock::now();
  stop_workers(SIGTERM);
  // The other nodes say why the group stopped, and so does whichever pod the operator reads first: the root cause
  // (the first line of the exception @record wrote) travels with the failure.
  const std::string message = error_file_message(error_file);
  member_->failed(assignment_.round, e.exit_code,
                  one_line(message.empty() ? describe_exit(e) : describe_exit(e) + ": " + message, kRelayedFailureMax));
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
  if (awaiting_checkpoint()) {
    // The workers stopped for another reason while a checkpoint was awaited (a failure, a new round): the
    // shutdown goes on without it.
    say("the workers stopped before they answered the checkpoint request");
    return stop_for_shutdown();
  }
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
  if (awaiting_checkpoint()) {
    say(std::string("received ") + strsignal(signal) + " while the workers save a checkpoint: stopping them now");
    return stop_for_shutdown();
  }
  shutdown_signal_ = signal;
  // Just in time: the pod is about to go (evicted, drained, preempted, suspended, scaled down, deleted) and its
  // workers can save where they are: they do, then they stop. The rendezvous hears of it only after, so that no
  // other node restarts the group under the save.
  if (signal == SIGTERM && state_ == State::Running && group_ && local_.all_armed() &&
      request_checkpoint("termination"))
    return;
  stop_for_shutdown();
}

bool Agent::request_checkpoint(const std::string& reason) {
  const std::string tmp = request_file_ + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || !write_all(fd, reason + "\n") || close(fd) != 0 || rename(tmp.c_str(), request_file_.c_str()) != 0) {
    if (fd >= 0) unlink(tmp.c_str());
    say("warning: cannot ask the workers for a checkpoint (" + request_file_ + "): " + std::strerror(errno));
    return false;
  }
  local_.forget_answers();
  const int wait_s = contract::checkpoint_wait_seconds(checkpoint_timeout_s_);
  say("received SIGTERM: the workers save a checkpoint first (up to " + std::to_string(wait_s) +
      " s), then stop");
  checkpoint_timer_ = loop_.after(std::chrono::seconds(wait_s), [this, wait_s] {
    checkpoint_timer_ = 0;
    say("no checkpoint within " + std::to_string(wait_s) + " s: stopping the workers");
    stop_for_shutdown();
  });
  return true;
}

void Agent::on_checkpoint_answers() {
  const auto step = local_.answered_step();
  if (local_.any_failed() || !step) say("the workers' checkpoint failed (their log says why): stopping them");
  else say("the workers saved the checkpoint of step " + std::to_string(*step) + ": stopping them");
  stop_for_shutdown();
}

void Agent::stop_for_shutdown() {
  if (checkpoint_timer_) loop_.cancel(checkpoint_timer_);
  checkpoint_timer_ = 0;
  const int signal = shutdown_signal_;
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
