// RendezvousCoordinator: the pure state machine behind the rendezvous service that node rank 0 hosts.
//
// Protocol (the wire form is in wire.h; the same messages pass in-process for node 0's own agent):
//   member -> service  JOIN run_id node_rank nproc   ready for a round (first time, or after its workers stopped);
//                      [settings]                    with the joiner's settings, for a run the host does not know
//                      FAILED round exit_code text   a worker of this round failed on that node
//                      DONE round                    every worker of this round on that node exited 0
//                      LEAVE                         the node leaves on purpose (its pod is being removed)
//                      CARRY run_id cause=n...       before its JOIN, to a node 0 whose STATUS says carried=: the
//                                                     restart counts it last saw of the node 0 before (carry())
//                      (closing the connection)      the node left: its launcher died or lost the network
//   operator -> service RELEASE node_rank why         that launcher's node goes away (contract/notice.h): release()
//   anyone  -> service  STATUS                        one STATUS report line back (round, restarts by cause,
//                                                     nodes, world size); the operator polls this
//                      PROGRESS round ranks...       how far this node's workers are (progress/job_progress.h)
//                      STACKS round stacks...        the stacks DUMP asked for
//   service -> member  ROUND assignment              start workers: round, restart count, group rank/size, ranks
//                                                     [, the workers' store the host chose: address and port]
//                      STOP round                    stop your workers, then JOIN again
//                      DUMP round                    the job hangs: take your workers' stacks and send STACKS
//                      FAIL exit_code text           the job is over: exit with this code (0: finished)
// Rounds: the service gathers JOINs. A round forms at once when MAX nodes have joined; with MIN..MAX-1 nodes it
// forms after the last-call period, once every connected node has joined (nodes still stopping their workers are
// waited for). Group ranks are dense, ordered by node rank, so node rank 0 is group rank 0; global ranks follow
// group ranks, each node adding its own nproc. While a round runs, a worker failure (FAILED), a node leaving
// before it is DONE, or a new node joining while the round is below MAX starts a new round: every member is told
// to STOP and JOIN again, and the restart count (TORCHELASTIC_RESTART_COUNT) grows by one. Failures and leaves are
// charged to --max-restarts: with none left the job ends with the failing worker's exit code. A joiner is not
// charged (torchrun: membership changes do not count as retries). A joiner that finds the group at MAX, or nodes
// already DONE, waits; if the job then finishes without it, it is told so with exit code 1, never a success.
// Below MIN nodes the service waits join_timeout for nodes to (re)join, then ends the job
// with a message saying how many nodes were missing. When every node of the round is DONE the job has finished.
// A failure or loss after some node is already DONE ends the job (the finished nodes are gone).
// Spares (JOIN ... spare, the TrainingJob's spec.spares): a spare joins and waits outside the group, with no
// workers and no rank. It never makes a group larger: it only takes the place (the slot: the group rank, and so the
// global ranks) of a member lost from a round (node_lost), at the next round, so that the group re-forms at full
// size at once. A round formed counts each ready spare only against such an open slot; a spare that took one is a
// member from then on (a stand-in, reported as slot:node rank), and the lost node, if it comes back, waits as a
// spare. The ROUND a stand-in gets names its slot, and its later JOINs name it (JOIN ... stand_in=K), so that a
// new node 0, which knows nothing of the old one's stand-ins, gives it the same place again (a lost node with that
// node rank waits as a spare, unless it is in the running group). A spare that waits when the job finishes ends
// with 0 (it was not needed), never "not admitted".
// A member that leaves on purpose (LEAVE: its pod is evicted or deleted) opens its place to a ready spare too when
// the job is rigid (MIN = MAX: a rigid job is never scaled down, so a LEAVE is always a node going away); an
// elastic job shrinks instead, as without spares, unless the operator said first that the node goes away
// (RELEASE: cordoned, NotReady, a termination taint), which hands the member's place to a spare while its workers
// still run. A released launcher waits as a spare and is never given a place again.
// Every restart has a cause: worker_crash (FAILED), node_lost (a node vanished without LEAVE), scale (a node
// joined the running group, or left it with LEAVE) or hang (the job's step stopped advancing: the host's
// JobProgress decides, hang() restarts, charged like a failure). STATUS reports the counts by cause.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "contract/notice.h"
#include "contract/restart_cause.h"
#include "contract/status_line.h"
#include "workers/worker_env.h"

namespace kubedist::launcher {

using MemberId = std::uint64_t;

// The launcher's exit code when the job ends for a hang (restarts spent): GNU timeout's, "timed out".
inline constexpr int kHangExitCode = 124;

struct CoordinatorSettings {
  std::string run_id;
  int min_nodes = 1;
  int max_nodes = 1;
  int max_restarts = 0;
  std::chrono::milliseconds last_call{1000};
  std::chrono::milliseconds join_timeout{600000};
  bool permanent_exit_codes = false;  // a worker exit code 1-127 ends the job at once (restartPolicy ExitCode)
};

// The settings this launcher's flags give its own rendezvous (nnodes, restarts, timeouts, restart policy).
CoordinatorSettings coordinator_settings(const LaunchConfig& config);

struct JoinRequest {
  std::string run_id;
  int node_rank = 0;
  int nproc = 1;
  // The joiner's own settings: a host that does not know run_id yet starts that run's rendezvous with them, so
  // that two jobs with different --rdzv-id on one endpoint each get their own group (as with torchrun's c10d).
  std::optional<CoordinatorSettings> settings = std::nullopt;
  // A spare (--spare): waits outside the group until a lost member's place is open (see the protocol above).
  bool spare = false;
  // A spare that stood in: the slot its ROUND named (Assignment::stand_in_slot), -1 otherwise.
  int stand_in = -1;
  // The node's topology domain (--topology-domain-file; empty: none): one domain's nodes take consecutive group
  // ranks, node 0's domain first (see form_round).
  std::string domain{};
};

struct RendezvousMessage {
  enum class Kind { Round, Stop, Fail, Dump } kind = Kind::Round;
  Assignment assignment;  // Round
  int round = 0;          // Stop, Dump (take your workers' stacks: the job hangs; see progress/job_progress.h)
  int exit_code = 0;      // Fail
  std::string reason;     // Fail
};

// Causes of a restart, the keys of RendezvousReport::restarts_by_cause (the operator's restart reasons).
using contract::kCauseHang;
using contract::kCauseNodeLost;
using contract::kCauseScale;
using contract::kCauseWorkerCrash;

// What STATUS answers: the state of the rendezvous at one moment (its line: contract/status_line.h).
using RendezvousReport = contract::StatusReport;

struct Outgoing {
  MemberId to;
  RendezvousMessage message;
};

class RendezvousCoordinator {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RendezvousCoordinator(CoordinatorSettings settings, Clock::time_point now);

  void join(MemberId id, const JoinRequest& request, Clock::time_point now);
  // graceful: the node said LEAVE (a scale-down), else it vanished (node lost).
  void leave(MemberId id, Clock::time_point now, bool graceful = false);
  void failed(MemberId id, int round, int exit_code, const std::string& summary, Clock::time_point now);
  void done(MemberId id, int round, Clock::time_point now);
  // The job's step stopped advancing (see JobProgress): a new round, cause hang, charged to --max-restarts; with
  // none left the job ends with kHangExitCode. Ignored unless a round is running.
  void hang(const std::string& reason, Clock::time_point now);
  // A member's restart counts by cause as the node 0 before this one last reported them: taken (the highest of each
  // cause) until the first round forms, so that report() goes on from them; ignored after (a member that merely
  // lost its connection carries this rendezvous' own counts).
  void carry(const std::map<std::string, int>& counts);
  // The operator's RELEASE (contract/notice.h): node rank `notice.node_rank`'s node goes away. A member placed in
  // the last round gives its place (slot) to a ready spare at once: a new round, cause node_lost, charged like a
  // loss; it waits as a spare from then on. A spare is marked: it never stands in. Kept, changing nothing, when no
  // other spare waits ready, for the member holding slot 0 (it hosts the rendezvous), once a node has finished, or
  // for a node rank no launcher of this job has.
  contract::ReleaseAnswer release(const contract::ReleaseNotice& notice, Clock::time_point now);
  void tick(Clock::time_point now);  // call at next_deadline()
  std::optional<Clock::time_point> next_deadline() const;
  std::vector<Outgoing> take_outbox();

  const std::string& run_id() const { return settings_.run_id; }
  bool over() const { return phase_ == Phase::Over; }
  bool running() const { return phase_ == Phase::Running; }
  int round() const { return round_; }
  // The members in the running round (not yet DONE), and a member's node rank (-1: not a member).
  std::vector<MemberId> round_members() const;
  int node_rank_of(MemberId id) const;
  int rounds_formed() const { return round_ + 1; }
  int restart_count() const { return restart_count_; }
  // Why the group last re-formed or the job ended ("node 1 left the job (...)").
  const std::string& last_event() const { return last_failure_; }
  RendezvousReport report() const;

 private:
  enum class Phase { Gathering, Running, Over };
  struct Member {
    JoinRequest info;       // info.spare: waits as a spare (cleared once it stands in for a lost member)
    bool joined = false;    // waiting for a round
    bool in_round = false;  // part of the running round
    bool done = false;
    bool placed = false;    // given a place in the last round formed
    int slot = 0;           // the place rounds order it by: its node rank, or the lost node's it stands in for
  };
  struct Gathered {         // who evaluate() can count on
    int regular = 0;         // members that are not spares
    int regular_joined = 0;  // of them, joined
    int usable = 0;          // regular_joined plus the ready spares the open slots take
  };
  Gathered gathered() const;
  // A spare that may take an open place: joined, and its node not released.
  bool can_stand_in(const Member& m) const;
  // The ready spares no open place has claimed yet: what a member going away may still count on.
  int unclaimed_spares() const;
  // A JOIN naming the slot it stood in for (JoinRequest::stand_in): the member takes it unless it was given away.
  void claim_slot(MemberId id, Member& m, int slot);
  void evaluate(Clock::time_point now);
  void form_round();
  // Orders a round's (slot, member) pairs for their group ranks: one topology domain's nodes together.
  void order_by_domain(std::vector<std::pair<int, MemberId>>& order);
  // charged: counts against --max-restarts (a failure or a leave; a joiner is free).
  void new_round(const std::string& reason, int exit_code, const char* cause, Clock::time_point now,
                 bool charged = true);
  void end(int exit_code, const std::string& reason);
  void send(MemberId to, RendezvousMessage m) { outbox_.push_back({to, std::move(m)}); }
  bool round_finished() const;

  CoordinatorSettings settings_;
  Phase phase_ = Phase::Gathering;
  std::map<MemberId, Member> members_;
  int round_ = -1;
  int restart_count_ = 0;     // rounds re-formed, for whatever cause
  int charged_restarts_ = 0;  // those charged to --max-restarts
  std::map<std::string, int> restarts_by_cause_{
      {kCauseWorkerCrash, 0}, {kCauseNodeLost, 0}, {kCauseScale, 0}, {kCauseHang, 0}};
  int round_nodes_ = 0;
  int round_world_size_ = 0;
  bool any_done_ = false;
  std::set<int> lost_nodes_;  // node ranks lost from a round (node_lost) that have not joined again: report()
  std::set<int> open_slots_;  // slots of members lost from a round that no member holds: what spares may take
  std::map<int, int> stand_ins_;  // slot -> node rank of the spare that holds it: report()
  // slot -> the topology domain of the node whose own place it is (JoinRequest::domain), as that node last said:
  // a spare standing in keeps the slot's domain, hence its group rank (form_round).
  std::map<int, std::string> slot_domains_;
  std::set<int> released_;  // node ranks the operator released (RELEASE) whose launcher is still connected
  std::map<std::string, int> carried_;  // carry(): counts of the node 0 before this one, added in report()
  Clock::time_point below_min_since_;
  std::optional<Clock::time_point> last_call_deadline_;
  bool awaiting_stoppers_ = false;
  std::string last_failure_;
  int last_exit_code_ = 1;
  std::vector<Outgoing> outbox_;
};

}  // namespace kubedist::launcher
