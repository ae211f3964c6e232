#include "rendezvous_host.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <utility>

#include "log_mux.h"
#include "net.h"
#include "rendezvous_wire.h"

namespace kubedist::launcher {
namespace {
constexpr MemberId kLocalMember = std::numeric_limits<MemberId>::max();
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

 private:
  RendezvousHost& host_;
};

RendezvousHost::Run::Run(CoordinatorSettings settings)
    : coordinator(std::move(settings), RendezvousCoordinator::Clock::now()) {}

RendezvousHost::RendezvousHost(EventLoop& loop, CoordinatorSettings settings) : loop_(loop), listener_(loop) {
  std::string id = settings.run_id;
  own_ = runs_.emplace(id, std::make_unique<Run>(std::move(settings))).first->second.get();
}

RendezvousHost::~RendezvousHost() {
  for (auto& [id, run] : runs_)
    if (run->deadline_timer) loop_.cancel(run->deadline_timer);
  while (!connections_.empty()) {
    int fd = connections_.begin()->first;
    loop_.unwatch(fd);
    close(fd);
    connections_.erase(fd);
  }
}

std::vector<std::string> RendezvousHost::other_runs_active() const {
  std::vector<std::string> active;
  for (auto& [id, run] : runs_)
    if (run.get() != own_ && !run->coordinator.over()) active.push_back(id);
  return active;
}

Result<bool> RendezvousHost::listen(const std::string& bind_addr, int port) {
  auto ok = listener_.open(bind_addr, port, [this](int fd) {
    connections_[fd] = Connection{};
    loop_.watch(fd, EPOLLIN, [this, fd](std::uint32_t ev) { connection_ready(fd, ev); });
  });
  if (!ok) return make_error("rendezvous: " + ok.error());
  return true;
}

std::unique_ptr<RendezvousMember> RendezvousHost::local_member(MemberEvents events) {
  local_events_ = std::move(events);
  return std::make_unique<LocalMember>(*this);
}

void RendezvousHost::announce_store(std::string addr) { store_addr_ = std::move(addr); }

void RendezvousHost::add_store(Run& run, Assignment& a) {
  if (store_addr_.empty()) return;
  if (run.store_round != a.round) {
    // Free on every address: the rank-0 worker's TCPStore listens on all of them.
    auto port = pick_free_port("");
    if (!port) write_all(2, "kubedist-launcher: rendezvous: no free port for the workers' store: " + port.error() + "\n");
    run.store_round = a.round;
    run.store_port = port ? *port : 29500;
  }
  a.master_addr = store_addr_;
  a.master_port = run.store_port;
}

void RendezvousHost::flush() {
  for (auto& [id, run] : runs_) flush(*run);
  if (others_over_ && other_runs_active().empty()) loop_.defer(std::exchange(others_over_, nullptr));
}

void RendezvousHost::flush(Run& run) {
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
    int fd = static_cast<int>(out.to);
    auto it = connections_.find(fd);
    if (it == connections_.end()) continue;
    it->second.out += encode_message(out.message);
    connection_ready(fd, EPOLLOUT);
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
    bool closed = false;
    char buf[4096];
    while (true) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        connections_[fd].in.append(buf, static_cast<size_t>(n));
        continue;
      }
      closed = !(n < 0 && (errno == EAGAIN || errno == EINTR));
      break;
    }
    // Lines that arrived before a close still count (a DONE, then the node exits).
    while (connections_.count(fd)) {
      std::string& in = connections_[fd].in;
      size_t nl = in.find('\n');
      if (nl == std::string::npos) break;
      std::string line = in.substr(0, nl);
      in.erase(0, nl + 1);
      handle_line(fd, line);
    }
    if (closed) return drop(fd);
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
  auto request = parse_request(line);
  if (!request) {
    write_all(2, "kubedist-launcher: rendezvous: " + request.error() + "\n");
    return drop(fd);
  }
  const MemberRequest& r = request.value();
  MemberId id = static_cast<MemberId>(fd);
  Connection& c = connections_[fd];
  if (r.kind == MemberRequest::Kind::Status) {
    // A reader (the operator), not a member: answer for this launcher's job and let it close the connection.
    c.out += encode_report(own_->coordinator.report());
    connection_ready(fd, EPOLLOUT);
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
  if (!c.run) return;  // FAILED, DONE or LEAVE before any JOIN: nothing to say it about
  RendezvousCoordinator& coordinator = c.run->coordinator;
  switch (r.kind) {
    case MemberRequest::Kind::Join: coordinator.join(id, r.join, now); break;
    case MemberRequest::Kind::Failed: coordinator.failed(id, r.round, r.exit_code, r.summary, now); break;
    case MemberRequest::Kind::Done: coordinator.done(id, r.round, now); break;
    case MemberRequest::Kind::Leave: coordinator.leave(id, now, true); break;
    case MemberRequest::Kind::Status: break;
  }
  flush();
}

void RendezvousHost::drop(int fd) {
  if (!connections_.count(fd)) return;
  loop_.unwatch(fd);
  close(fd);
  Run* run = connections_[fd].run;
  connections_.erase(fd);
  if (!run) return;
  run->coordinator.leave(static_cast<MemberId>(fd), RendezvousCoordinator::Clock::now());
  flush();
}

}  // namespace kubedist::launcher
