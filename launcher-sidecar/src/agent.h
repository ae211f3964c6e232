// Agent: the supervisor of this node: joins rounds, runs a WorkerGroup per round, stops and restarts it, and
// decides the launcher's exit code. All of it runs on one EventLoop.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/event_loop.h"
#include "cli/launch_config.h"
#include "io/log_mux.h"
#include "io/metrics.h"
#include "io/trace.h"
#include "progress/local_progress.h"
#include "progress/progress_channel.h"
#include "rendezvous/member.h"
#include "process/terminal.h"
#include "workers/worker_group.h"

namespace kubedist::launcher {

class Agent {
 public:
  // run_dir holds attempt_N/LOCAL_RANK/{error.json,stdout.log,stderr.log}.
  Agent(EventLoop& loop, LaunchConfig config, Env base_env, int local_world_size, std::string run_dir,
        LauncherMetrics& metrics, TerminalState terminal = {}, EventTrace trace = {});
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;
  MemberEvents member_events();
  void start(RendezvousMember& member);
  // A SIGCHLD arrived: reaps every child (workers and orphans re-parented to us) without blocking.
  void reap_children();
  // SIGTERM/SIGINT/SIGHUP to the launcher: passed on to the workers; the launcher exits once they are gone. On
  // SIGTERM, workers that answer checkpoint requests (kubedist.checkpoint) first save one (just in time), within
  // contract::checkpoint_wait_seconds(); a second signal stops them at once.
  void shutdown(int signal);
  std::optional<int> exit_code() const { return exit_code_; }

 private:
  enum class State { Joining, Running, Stopping, Done, Exiting };
  void on_round(const Assignment& a);
  void on_stop();
  void on_end(int exit_code, const std::string& reason);
  void on_worker_failure(const WorkerExit& exit);
  void on_workers_stopped();
  void stop_workers(int signal);
  // Just in time: writes the request file for this round's workers; false if it cannot.
  bool request_checkpoint(const std::string& reason);
  void on_checkpoint_answers();
  // A requested checkpoint is awaited while its deadline is set.
  bool awaiting_checkpoint() const { return checkpoint_timer_ != 0; }
  // The end of a shutdown: leave the rendezvous, stop the workers with shutdown_signal_ (or exit if none run).
  void stop_for_shutdown();
  void finish(int code);
  void write_termination_log(int code);
  void join();
  // Reads --topology-domain-file: its first word if it is a domain ("-" or nothing: none).
  std::string read_domain() const;
  void wait_for_domain_then_join();
  // Progress: a worker's report arrived; node 0 hears of it at most every kForwardEvery (at once for a round's
  // first); DUMP takes the workers' stacks; node 0's hang message goes to the termination log at once.
  void on_report(int local_rank, std::string_view datagram, size_t size);
  void forward_progress();
  void on_dump(int round);
  void poll_stacks();
  void on_hang(const std::string& message);
  // Whether a progress report to local_rank's socket was sent by its worker or a process below it (pid as this PID
  // namespace sees it; 0: none); remembered per sender for the round's workers.
  bool report_from_worker(int local_rank, pid_t sender);
  void on_foreign_report(int local_rank, pid_t sender);

  EventLoop& loop_;
  LaunchConfig config_;
  Env base_env_;
  int local_world_size_;
  std::string run_dir_;
  LauncherMetrics& metrics_;
  TerminalState terminal_;
  EventTrace trace_;
  LogMux logs_;
  RendezvousMember* member_ = nullptr;
  std::unique_ptr<WorkerGroup> group_;
  State state_ = State::Joining;
  Assignment assignment_;
  // The topology domain (--topology-domain-file) as this node last read it, and how long start() still waits for
  // the file to say one (the operator writes it once the pod is bound).
  std::string domain_;
  int domain_polls_left_ = 0;
  int stand_in_slot_ = -1;  // a spare (--spare) standing in: the slot its ROUND named (JOINs name it from then on)
  bool started_once_ = false;
  std::optional<std::chrono::steady_clock::time_point> failure_seen_at_;
  std::optional<int> pending_end_;
  std::string failure_line_;  // this round's first local worker failure, for the termination log
  std::string end_reason_;    // why the job ended, when no local worker failed (another node's did)
  int shutdown_signal_ = 0;
  std::string request_file_;                // the workers' KUBEDIST_CHECKPOINT_REQUEST, in run_dir_
  EventLoop::TimerId checkpoint_timer_ = 0;  // a requested checkpoint awaited: the deadline
  int checkpoint_timeout_s_ = 0;            // KUBEDIST_CHECKPOINT_TIMEOUT (0: none)
  std::optional<int> exit_code_;

  ProgressChannel channel_;
  std::map<pid_t, bool> senders_;  // report_from_worker's verdicts for the current workers
  bool foreign_said_ = false;      // on_foreign_report warns once
  LocalProgress local_;
  std::string python_dir_;               // where the helper is (PYTHONPATH's last entry); "" if nowhere
  std::vector<std::string> stack_files_;  // this round's, by local rank ("" if none)
  EventLoop::TimerId forward_timer_ = 0;
  std::chrono::steady_clock::time_point last_forward_;
  bool forwarded_this_round_ = false;
  // A DUMP being answered: the workers signalled, their faulthandler output awaited.
  struct StackTarget {
    int rank = 0;
    std::string file;
    long before = 0;  // the file's size before the signal
    long last = -1;
    int stable = 0;   // polls the size stayed the same after growing
    bool signalled = false;
  };
  struct StackRequest {
    int round = 0;
    int polls = 0;
    std::vector<StackTarget> targets;
  };
  std::optional<StackRequest> stacks_;
  EventLoop::TimerId stacks_timer_ = 0;
};

}  // namespace kubedist::launcher
