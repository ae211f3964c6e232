#include "rendezvous/host.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <limits>
#include <utility>

#include "contract/status_line.h"
#include "io/log_mux.h"
#include "io/net.h"
#include "rendezvous/wire.h"

namespace kubedist::launcher {
namespace {
constexpr MemberId kLocalMember = std::numeric_limits<MemberId>::max();
constexpr size_t kMaxPendingReplies = 64 * 1024;  // a STATUS asker that never reads gets closed
// How long a hang waits for the nodes' stacks (each node waits up to 2 s for its workers' faulthandler).
constexpr auto kStacksWait = std::chrono::seconds(3);

std::string peer_of(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  char ip[INET_ADDRSTRLEN] = "?";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}
}  // namespace

HostGuard HostGuard::for_nodes(int max_nodes) {
  HostGuard guard;
  guard.max_members = std::max<size_t>(64, 4 * static_cast<size_t>(std::max(max_nodes, 1)));
  return guard;
}

class RendezvousHost::LocalMember : public RendezvousMember {
 public:
  explicit LocalMember(RendezvousHost& host) : host_(host) {}
  ~LocalMember() override { host_.local_events_ = {}; }
  void join(const JoinRequest& request) override {
    host_.own_->coordinator.join(kLocalMember, request, RendezvousCoordinator::Clock::now());
    host_.flush();
  }
  void failed(int round, int exit_code, const std::string& summary) override {
    host_.own_->coordinator.failed(kLocalMember, round, exit_code, summary, RendezvousCoordinator::Clock::now());
    host_.flush();
  }
  void done(int round) override {
    host_.own_->coordinator.done(kLocalMember, round, RendezvousCoordinator::Clock::now());
    host_.flush();
  }
  void leave() override {
    host_.own_->coordinator.leave(kLocalMember, RendezvousCoordinator::Clock::now(), true);
    host_.flush();
  }
  void progress(int round, const NodeProgress& progress) override { host_.on_progress(kLocalMember, round, progress); }
  void stacks(int round, const std::map<int, StackSummary>& stacks) override {
    host_.on_stacks(kLocalMember, round, stacks);
  }

 private:
  RendezvousHost& host_;
};

RendezvousHost::Run::Run(CoordinatorSettings settings)
    : coordinator(std::move(settings), RendezvousCoordinator::Clock::now()) {}

RendezvousHost::RendezvousHost(EventLoop& loop, CoordinatorSettings settings, HostGuard guard)
    : loop_(loop),
      guard_(std::move(guard)),
      admission_({guard_.max_strangers, guard_.max_members}),
      listener_(loop),
      progress_(ProgressSettings{}, JobProgress::Clock::now()) {
  std::string id = settings.run_id;
  own_ = runs_.emplace(id, std::make_unique<Run>(std::move(settings))).first->second.get();
}

RendezvousHost::~RendezvousHost() {
  for (auto& [id, run] : runs_)
    if (run->deadline_timer) loop_.cancel(run->deadline_timer);
  if (hang_timer_) loop_.cancel(hang_timer_);
  if (hang_ && hang_->deadline) loop_.cancel(hang_->deadline);
  while (!connections_.empty()) {
    int fd = connections_.begin()->first;
    if (connections_.begin()->second.idle_timer) loop_.cancel(connections_.begin()->second.idle_timer);
    loop_.unwatch(fd);
    close(fd);
    connections_.erase(fd);
  }
}

Result<bool> RendezvousHost::listen(const std::string& bind_addr, int port) {
  auto ok = listener_.open(bind_addr, port, [this](int fd, std::uint32_t source) { accept_connection(fd, source); });
  if (!ok) return make_error("rendezvous: " + ok.error());
  return true;
}

void RendezvousHost::accept_connection(int fd, std::uint32_t source) {
  detect_dead_peer(fd);  // a member whose node vanished is lost within kDeadPeerSeconds, not never
  std::string peer = peer_of(fd);
  Admission::Decision d = admission_.arrive(source);
  if (d.evict && !strangers_read_this_turn_) {
    // Joiners arriving in a burst (a job's pods starting together) fill the strangers' room before their JOINs are
    // read: read what the strangers sent first, so that a JOIN waiting in a socket makes a member rather than an
    // eviction. Once per turn of the loop, so that a flood costs one pass over the strangers per accepted batch.
    strangers_read_this_turn_ = true;
    loop_.defer([this] { strangers_read_this_turn_ = false; });
    for (int stranger : admission_.stranger_fds()) connection_ready(stranger, EPOLLIN);
    d = admission_.arrive(source);
  }
  if (d.evict) {
    // A flood of silent connections must not lock out a joiner that has not spoken yet: the flood's own oldest goes.
    note(over_limit_, "closed the connection from " + connections_[*d.evict].peer + " (not a member) for one from " +
                          peer + ": " + std::to_string(guard_.max_strangers) + " non-members are connected");
    drop(*d.evict);
  }
  if (!d.admit) {
    close(fd);
    return;
  }
  admission_.add(fd, source, Admission::Clock::now());
  Connection& c = connections_[fd];
  c.peer = std::move(peer);
  c.idle_timer = loop_.after(guard_.idle_timeout, [this, fd] {
    connections_[fd].idle_timer = 0;
    note(idle_closed_, "closed the connection from " + connections_[fd].peer + ": not a member after " +
                           std::to_string(guard_.idle_timeout.count()) + " ms");
    drop(fd);
  });
  loop_.watch(fd, EPOLLIN, [this, fd](std::uint32_t ev) { connection_ready(fd, ev); });
  if (!guard_.secret.empty()) {
    std::string challenge = new_challenge();
    c.auth.emplace(guard_.secret, challenge, AuthSession::Side::Host);
    c.out = encode_hello(challenge);
    connection_ready(fd, EPOLLOUT);
  }
}

void RendezvousHost::note(int& count, const std::string& what) {
  ++count;
  if ((count & (count - 1)) == 0)
    write_all(2, "kubedist-launcher: rendezvous: " + what + " (" + std::to_string(count) + " so far)\n");
}

void RendezvousHost::refuse(int fd, const std::string& why) {
  write_all(2, "kubedist-launcher: rendezvous: refused " + connections_[fd].peer + ": " + why + "\n");
  // Best effort. After the HELLO it is signed like every other line, so that a member acts only on a refusal that
  // node 0 really sent (a forged one cannot make it give up); a forger learns nothing it did not know.
  auto& c = connections_[fd];
  const std::string line = c.auth ? c.auth->seal(encode_refused(why)) : encode_refused(why);
  (void)!send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  drop(fd);
}

void RendezvousHost::send_line(int fd, const std::string& line) { send_lines(fd, {line}); }

void RendezvousHost::send_lines(int fd, const std::vector<std::string>& lines) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  for (const auto& line : lines) it->second.out += it->second.auth ? it->second.auth->seal(line) : line;
  connection_ready(fd, EPOLLOUT);
}

std::vector<std::string> RendezvousHost::other_runs_active() const {
  std::vector<std::string> active;
  for (auto& [id, run] : runs_)
    if (run.get() != own_ && !run->coordinator.over()) active.push_back(id);
  return active;
}

void RendezvousHost::announce_store(std::string addr) { store_addr_ = std::move(addr); }

void RendezvousHost::add_store(Run& run, Assignment& a) {
  if (store_addr_.empty()) return;
  if (run.store_round != a.round) {
    // Free on every address (the rank-0 worker's TCPStore listens on all of them), and held for it until the
    // next round: no other socket of this host takes it while the workers start.
    auto reserved = PortReservation::take("");
    if (!reserved)
      write_all(2, "kubedist-launcher: rendezvous: no free port for the workers' store: " + reserved.error() + "\n");
    run.store_round = a.round;
    run.store_port = reserved ? reserved->port() : 29500;
    run.store_reservation = reserved ? std::move(reserved.value()) : PortReservation();
  }
  a.master_addr = store_addr_;
  a.master_port = run.store_port;
}

std::unique_ptr<RendezvousMember> RendezvousHost::local_member(MemberEvents events) {
  local_events_ = std::move(events);
  return std::make_unique<LocalMember>(*this);
}

void RendezvousHost::watch_progress(ProgressSettings settings) {
  progress_ = JobProgress(settings, JobProgress::Clock::now());
  arm_hang_check();
}

void RendezvousHost::follow_rounds() {
  const RendezvousCoordinator& c = own_->coordinator;
  const auto now = JobProgress::Clock::now();
  if (c.restart_count() != seen_restarts_) {
    seen_restarts_ = c.restart_count();
    progress_.incident(now);
  }
  if (c.running() && c.round() != seen_round_) {
    seen_round_ = c.round();
    progress_.start_round(seen_round_, now);
  }
}

void RendezvousHost::on_progress(MemberId id, int round, const NodeProgress& progress) {
  const int node_rank = own_->coordinator.node_rank_of(id);
  if (node_rank < 0) return;
  progress_.update(round, node_rank, progress, JobProgress::Clock::now());
  arm_hang_check();
}

void RendezvousHost::arm_hang_check() {
  if (hang_timer_) loop_.cancel(hang_timer_);
  hang_timer_ = 0;
  if (hang_) return;
  if (const auto at = progress_.next_hang_check()) {
    hang_timer_ = loop_.at(*at, [this] {
      hang_timer_ = 0;
      if (progress_.hang_due(JobProgress::Clock::now())) return start_hang_check();
      arm_hang_check();
    });
  }
}

void RendezvousHost::start_hang_check() {
  RendezvousCoordinator& c = own_->coordinator;
  if (!c.running()) return;
  const auto now = JobProgress::Clock::now();
  HangCheck h;
  h.round = c.round();
  h.stuck = progress_.stuck_ranks(now);
  h.stalled = progress_.since_last_step(now);
  progress_.hang_handling();
  write_all(2, "kubedist-launcher: no step for " + std::to_string(h.stalled.count() / 1000) +
                   " s (--hang-timeout " + std::to_string(progress_.settings().hang_timeout.count() / 1000) +
                   " s): taking the workers' stacks\n");
  RendezvousMessage dump;
  dump.kind = RendezvousMessage::Kind::Dump;
  dump.round = h.round;
  for (MemberId id : c.round_members()) {
    if (id == kLocalMember) {
      if (!local_events_.on_dump) continue;
      h.waiting.push_back(id);
      loop_.defer([this, round = h.round] {
        if (local_events_.on_dump) local_events_.on_dump(round);
      });
      continue;
    }
    auto it = connections_.find(static_cast<int>(id));
    if (it == connections_.end() || !it->second.progress) continue;  // an older launcher: no stacks to ask for
    h.waiting.push_back(id);
    send_line(it->first, encode_message(dump));
  }
  h.deadline = loop_.after(kStacksWait, [this] {
    hang_->deadline = 0;
    finish_hang_check();
  });
  hang_ = std::move(h);
  if (hang_->waiting.empty()) finish_hang_check();
}

void RendezvousHost::on_stacks(MemberId id, int round, const std::map<int, StackSummary>& stacks) {
  if (!hang_ || round != hang_->round) return;
  for (const auto& [rank, s] : stacks) hang_->stacks[rank] = s;
  auto& waiting = hang_->waiting;
  waiting.erase(std::remove(waiting.begin(), waiting.end(), id), waiting.end());
  if (waiting.empty()) finish_hang_check();
}

void RendezvousHost::finish_hang_check() {
  if (!hang_) return;
  HangCheck h = std::move(*hang_);
  hang_.reset();
  if (h.deadline) loop_.cancel(h.deadline);
  RendezvousCoordinator& c = own_->coordinator;
  if (!c.running() || c.round() != h.round) return arm_hang_check();  // the group re-formed meanwhile anyway
  const auto now = JobProgress::Clock::now();
  const std::string message = hang_message(h.stuck, h.stacks, h.stalled, progress_.settings().hang_timeout);
  progress_.hang_detected(message, now);
  write_all(2, "kubedist-launcher: hang: " + message + "\n");
  if (local_events_.on_hang) loop_.defer([this, message] {
    if (local_events_.on_hang) local_events_.on_hang(message);
  });
  c.hang(message, now);
  flush();
}

void RendezvousHost::flush() {
  for (auto& [id, run] : runs_) flush(*run);
  follow_rounds();
  arm_hang_check();
  if (others_over_ && other_runs_active().empty()) loop_.defer(std::exchange(others_over_, nullptr));
}

void RendezvousHost::flush(Run& run) {
  // Node 0's log says when and why the group re-forms (the other nodes only see their workers stopped).
  if (const int restarts = run.coordinator.restart_count(); restarts > run.restarts_said) {
    run.restarts_said = restarts;
    write_all(2, "kubedist-launcher: rendezvous: the group re-forms (restart " + std::to_string(restarts) +
                     "): " + run.coordinator.last_event() + "\n");
  }
  std::string status_line;  // the STATUS sent with this flush's ROUNDs: one report for every member
  for (auto& out : run.coordinator.take_outbox()) {
    if (out.message.kind == RendezvousMessage::Kind::Round) add_store(run, out.message.assignment);
    if (out.to == kLocalMember) {
      // Delivered on the next turn of the loop, so the agent never re-enters itself.
      loop_.defer([this, m = out.message] {
        if (m.kind == RendezvousMessage::Kind::Round && local_events_.on_round) local_events_.on_round(m.assignment);
        if (m.kind == RendezvousMessage::Kind::Stop && local_events_.on_stop) local_events_.on_stop();
        if (m.kind == RendezvousMessage::Kind::Fail && local_events_.on_end) local_events_.on_end(m.exit_code, m.reason);
      });
      continue;
    }
    const int fd = static_cast<int>(out.to);
    auto c = connections_.find(fd);
    if (out.message.kind == RendezvousMessage::Kind::Round && c != connections_.end() && c->second.asked_status) {
      // With the round, the restart counts it follows, in the same write: a member keeps them to carry to the node
      // 0 that replaces this one (coordinator.h, carry()), and has them before its workers of this round start.
      if (status_line.empty()) status_line = contract::encode_status_line(run.coordinator.report());
      send_lines(fd, {encode_message(out.message), status_line});
      continue;
    }
    send_line(fd, encode_message(out.message));
  }
  if (run.deadline_timer) loop_.cancel(run.deadline_timer);
  run.deadline_timer = 0;
  if (auto when = run.coordinator.next_deadline()) {
    run.deadline_timer = loop_.at(*when, [this, &run] {
      run.deadline_timer = 0;
      run.coordinator.tick(RendezvousCoordinator::Clock::now());
      flush();
    });
  }
}

void RendezvousHost::connection_ready(int fd, std::uint32_t events) {
  if (!connections_.count(fd)) return;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    char buf[4096];
    while (true) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
        return drop(fd);
      }
      connections_[fd].in.append(buf, static_cast<size_t>(n));
      // Lines are handled as they arrive, so no more than one line (bounded) is ever buffered; lines that arrived
      // before a close still count (a DONE, then the node exits).
      while (connections_.count(fd)) {
        std::string& in = connections_[fd].in;
        size_t nl = in.find('\n');
        if (nl == std::string::npos) break;
        std::string line = in.substr(0, nl);
        in.erase(0, nl + 1);
        if (line.size() > guard_.max_line) return refuse(fd, "a line longer than " + std::to_string(guard_.max_line) + " bytes");
        handle_line(fd, line);
      }
      if (!connections_.count(fd)) return;
      if (connections_[fd].in.size() > guard_.max_line)
        return refuse(fd, "a line longer than " + std::to_string(guard_.max_line) + " bytes");
    }
  }
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  if (!it->second.out.empty()) {
    ssize_t n = send(fd, it->second.out.data(), it->second.out.size(), MSG_NOSIGNAL);
    if (n > 0) it->second.out.erase(0, static_cast<size_t>(n));
  }
  loop_.modify(fd, it->second.out.empty() ? EPOLLIN : EPOLLIN | EPOLLOUT);
}

void RendezvousHost::handle_line(int fd, const std::string& line) {
  auto now = RendezvousCoordinator::Clock::now();
  Connection& c = connections_[fd];
  std::string plain = line;
  if (c.auth) {
    auto opened = c.auth->open(line);
    if (!opened) return refuse(fd, opened.error());
    plain = *opened;
    if (auto nonce = parse_nonce(plain)) {
      // Only as the member's first line: later, it would change the MACs of lines already agreed on.
      if (c.auth->received() != 1 || c.auth->has_member_nonce()) return refuse(fd, "NONCE out of place");
      c.auth->adopt_member_nonce(*nonce);
      // Sealed with it already: the member knows from this line on that node 0 is fresh to it (client.cc).
      return send_line(fd, std::string(kNonceTaken));
    }
  }
  auto request = parse_request(plain);
  if (!request) {
    write_all(2, "kubedist-launcher: rendezvous: " + request.error() + "\n");
    return drop(fd);
  }
  // A member stays as long as the job; a STATUS asker (or the operator with a notice) is served but stays on the
  // idle clock (and may be pushed out), so that asking cannot hold a connection that a member needs.
  const bool asker = request->kind == MemberRequest::Kind::Status || request->kind == MemberRequest::Kind::Release;
  if (!asker && !admission_.member(fd)) {
    if (!admission_.promote(fd))
      return refuse(fd, std::to_string(guard_.max_members) + " members are connected, the most this job takes");
    if (c.idle_timer) loop_.cancel(c.idle_timer);
    c.idle_timer = 0;
  }
  const MemberRequest& r = request.value();
  MemberId id = static_cast<MemberId>(fd);
  if (r.kind == MemberRequest::Kind::Status) {
    // A reader (the operator, or a member as it connects): answer for this launcher's job.
    c.asked_status = true;
    if (c.out.size() > kMaxPendingReplies) return refuse(fd, "asks for STATUS without reading the answers");
    send_line(fd, contract::encode_status_line(status_report()));
    return;
  }
  if (r.kind == MemberRequest::Kind::Release) {
    // The operator's notice that a node goes away (contract/notice.h), for this launcher's own job: answered once
    // what it changed is sent, so that the operator's next STATUS shows it.
    if (c.out.size() > kMaxPendingReplies) return refuse(fd, "sends notices without reading the answers");
    const contract::ReleaseAnswer answer = own_->coordinator.release(r.release, now);
    write_all(2, "kubedist-launcher: rendezvous: the operator says node " + std::to_string(r.release.node_rank) +
                     "'s node goes away (" + contract::to_string(r.release.why) + "): " +
                     (answer.released ? "released" : "kept: " + answer.why) + "\n");
    flush();
    send_line(fd, contract::encode_release_answer(answer));
    return;
  }
  if (r.kind == MemberRequest::Kind::Carry) {
    // A member's counts from the node 0 before this one, sent before its JOIN: for this launcher's own job only.
    if (r.run_id == own_->coordinator.run_id()) own_->coordinator.carry(r.carried);
    return;
  }
  if (r.kind == MemberRequest::Kind::Join && !c.run) {
    auto it = runs_.find(r.join.run_id);
    if (it != runs_.end()) {
      c.run = it->second.get();
    } else if (r.join.settings) {  // another job on the same endpoint: a rendezvous of its own
      c.run = runs_.emplace(r.join.run_id, std::make_unique<Run>(*r.join.settings)).first->second.get();
    } else {
      c.run = own_;  // a joiner that sends no settings: only this job can take it (it refuses another run id)
    }
  }
  if (!c.run) return;  // FAILED, DONE, LEAVE, PROGRESS or STACKS before any JOIN: nothing to say it about
  if (r.kind == MemberRequest::Kind::Progress || r.kind == MemberRequest::Kind::Stacks) {
    if (c.run != own_) return;  // another job's on this endpoint: its progress is its own node 0's business
    c.progress = true;
    if (r.kind == MemberRequest::Kind::Progress) return on_progress(id, r.round, r.progress);
    return on_stacks(id, r.round, r.stacks);
  }
  RendezvousCoordinator& coordinator = c.run->coordinator;
  switch (r.kind) {
    case MemberRequest::Kind::Join: coordinator.join(id, r.join, now); break;
    case MemberRequest::Kind::Failed: coordinator.failed(id, r.round, r.exit_code, r.summary, now); break;
    case MemberRequest::Kind::Done: coordinator.done(id, r.round, now); break;
    case MemberRequest::Kind::Leave: coordinator.leave(id, now, true); break;
    case MemberRequest::Kind::Status:
    case MemberRequest::Kind::Progress:
    case MemberRequest::Kind::Stacks:
    case MemberRequest::Kind::Carry:
    case MemberRequest::Kind::Release: break;
  }
  flush();
}

void RendezvousHost::drop(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  if (it->second.idle_timer) loop_.cancel(it->second.idle_timer);
  Run* run = it->second.run;
  admission_.remove(fd);
  loop_.unwatch(fd);
  close(fd);
  connections_.erase(fd);
  if (!run) return;
  run->coordinator.leave(static_cast<MemberId>(fd), RendezvousCoordinator::Clock::now());
  flush();
  if (hang_) on_stacks(static_cast<MemberId>(fd), hang_->round, {});  // no stacks will come from it
}

contract::StatusReport RendezvousHost::status_report() const {
  contract::StatusReport report = own_->coordinator.report();
  report.progress = progress_.status(JobProgress::Clock::now());
  report.checkpoint = progress_.checkpoint(JobProgress::Clock::now());
  return report;
}

}  // namespace kubedist::launcher
