// RendezvousHost: the rendezvous service node rank 0 runs (coordinator + TCP listener + node 0's own member).
// It listens on --rdzv-endpoint, by default MASTER_ADDR:MASTER_PORT+1 (MASTER_PORT itself belongs to the workers'
// process group store). A single-node job (--nnodes=1) needs no listener.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "io/admission.h"
#include "io/event_loop.h"
#include "io/listener.h"
#include "io/net.h"
#include "progress/job_progress.h"
#include "rendezvous/auth.h"
#include "rendezvous/coordinator.h"
#include "rendezvous/member.h"
#include "util/result.h"

namespace kubedist::launcher {

// Who the host lets in and how much it holds for them: anyone who can reach the port must not be able to join the
// job, stop it, or exhaust the launcher.
struct HostGuard {
  std::string secret;                             // "": no authentication (see auth.h)
  size_t max_line = 64 * 1024;                    // a longer line closes the connection, unbuffered
  // Connections are members (sent a valid JOIN, FAILED, DONE or LEAVE) or strangers (everyone else: joiners that
  // have not spoken yet, STATUS askers, floods), each with a room of its own (io/admission.h): strangers never
  // take the members' room, and a stranger at the bound pushes out the oldest of the address that holds the most.
  size_t max_members = 64;                        // beyond: the connection is refused
  size_t max_strangers = 64;
  std::chrono::milliseconds idle_timeout{15000};  // to become a member (JOIN...), or be closed
  static HostGuard for_nodes(int max_nodes);      // max_members: 4 per node, at least 64
};

class RendezvousHost {
 public:
  RendezvousHost(EventLoop& loop, CoordinatorSettings settings, HostGuard guard = {});
  ~RendezvousHost();
  RendezvousHost(const RendezvousHost&) = delete;
  RendezvousHost& operator=(const RendezvousHost&) = delete;

  // Accepts other nodes on bind_addr:port (IPv4, "" for any address).
  Result<bool> listen(const std::string& bind_addr, int port);
  // Node 0's own agent, talking to the coordinator without a socket.
  std::unique_ptr<RendezvousMember> local_member(MemberEvents events);
  // Every round then names the workers' store: addr (this host as the other nodes reach it) and a port free on
  // this host, chosen anew for each round, as torchrun's c10d rendezvous does on the node of group rank 0. Every
  // launcher on this host joins as node rank 0, so one of them is group rank 0. A launcher given --master-addr
  // or --master-port keeps its own.
  void announce_store(std::string addr);
  const RendezvousCoordinator& coordinator() const { return own_->coordinator; }
  // Node 0 judges this job's progress from every node's reports (STATUS carries it) and restarts the group when it
  // hangs (settings.hang_timeout), after asking every node for its workers' stacks.
  void watch_progress(ProgressSettings settings);
  const JobProgress& progress() const { return progress_; }
  // What a STATUS request would be answered now, for this launcher's own job.
  contract::StatusReport status_report() const;
  // Runs of other jobs hosted here that are not over yet: this launcher keeps serving them after its own job.
  std::vector<std::string> other_runs_active() const;
  // Called (once) when the last active run of another job is over.
  void on_other_runs_over(std::function<void()> fn) { others_over_ = std::move(fn); }

 private:
  class LocalMember;
  struct Run {
    explicit Run(CoordinatorSettings settings);
    RendezvousCoordinator coordinator;
    EventLoop::TimerId deadline_timer = 0;  // for coordinator.next_deadline()
    int store_round = -1;                   // the round store_port was chosen for
    int store_port = 0;
    PortReservation store_reservation;      // store_port, held until the next round's (io/net.h)
    int restarts_said = 0;                  // the restarts this log has told of (flush)
  };
  // A hang being handled: the stacks asked of each node of the round, until they answer or kStacksWait passes.
  struct HangCheck {
    int round = 0;
    std::vector<StuckRank> stuck;
    std::chrono::milliseconds stalled{0};
    std::vector<MemberId> waiting;
    std::map<int, StackSummary> stacks;
    EventLoop::TimerId deadline = 0;
  };
  struct Connection {
    std::string in;
    std::string out;
    std::string peer;                    // ip:port, for the log
    std::optional<AuthSession> auth;     // with a secret
    EventLoop::TimerId idle_timer = 0;   // until it is a member (admission_)
    Run* run = nullptr;                  // set by its first JOIN
    bool progress = false;               // sent PROGRESS: it knows DUMP too
    bool asked_status = false;           // sent STATUS: it reads STATUS lines, so each ROUND comes with one
  };
  void accept_connection(int fd, std::uint32_t source);
  void send_line(int fd, const std::string& line);  // seals it when there is a secret
  void send_lines(int fd, const std::vector<std::string>& lines);  // in one write
  void refuse(int fd, const std::string& why);      // logs why and closes
  void note(int& count, const std::string& what);   // logs a frequent event at counts 1, 2, 4, 8...
  void add_store(Run& run, Assignment& a);
  void flush();  // delivers every run's messages and re-arms their deadline timers
  void flush(Run& run);
  void connection_ready(int fd, std::uint32_t events);
  void drop(int fd);
  void handle_line(int fd, const std::string& line);
  void on_progress(MemberId id, int round, const NodeProgress& progress);
  void on_stacks(MemberId id, int round, const std::map<int, StackSummary>& stacks);
  void follow_rounds();   // tells progress_ of the own run's restarts and rounds
  void arm_hang_check();
  void start_hang_check();
  void finish_hang_check();

  EventLoop& loop_;
  std::map<std::string, std::unique_ptr<Run>> runs_;  // by run id
  Run* own_;                                         // this launcher's job
  HostGuard guard_;
  Admission admission_;
  Listener listener_;
  int idle_closed_ = 0, over_limit_ = 0;
  bool strangers_read_this_turn_ = false;  // accept_connection read the strangers' input once this turn
  std::map<int, Connection> connections_;  // member id = fd for TCP members
  MemberEvents local_events_;
  std::function<void()> others_over_;
  std::string store_addr_;  // empty: rounds name no store (the launchers' --master-addr/--master-port hold)
  JobProgress progress_;
  int seen_restarts_ = 0, seen_round_ = -1;
  EventLoop::TimerId hang_timer_ = 0;
  std::optional<HangCheck> hang_;
};

}  // namespace kubedist::launcher
