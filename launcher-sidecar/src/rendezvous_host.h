// RendezvousHost: the rendezvous service node rank 0 runs (coordinator + TCP listener + node 0's own member).
// It listens on --rdzv-endpoint, by default MASTER_ADDR:MASTER_PORT+1 (MASTER_PORT itself belongs to the workers'
// process group store). A single-node job (--nnodes=1) needs no listener.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <memory>
#include <string>

#include "event_loop.h"
#include "listener.h"
#include "rendezvous_auth.h"
#include "rendezvous_coordinator.h"
#include "rendezvous_member.h"
#include "result.h"

namespace kubedist::launcher {

// Who the host lets in and how much it holds for them: anyone who can reach the port must not be able to join the
// job, stop it, or exhaust the launcher.
struct HostGuard {
  std::string secret;                             // "": no authentication (see rendezvous_auth.h)
  size_t max_line = 64 * 1024;                    // a longer line closes the connection, unbuffered
  size_t max_connections = 64;                    // beyond: the oldest non-member goes, else the new one
  std::chrono::milliseconds idle_timeout{15000};  // to become a member (JOIN...), or be closed
  static HostGuard for_nodes(int max_nodes);      // max_connections: 4 per node, at least 64
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
  const RendezvousCoordinator& coordinator() const { return coordinator_; }

 private:
  class LocalMember;
  struct Connection {
    std::string in;
    std::string out;
    std::string peer;                    // ip:port, for the log
    std::optional<AuthSession> auth;     // with a secret
    bool active = false;                 // sent a valid member message (JOIN...): never idle-closed or pushed out
    EventLoop::TimerId idle_timer = 0;   // until then
    EventLoop::Clock::time_point since;  // accepted at
  };
  void accept_connection(int fd);
  bool evict_oldest_idle();
  void send_line(int fd, const std::string& line);  // seals it when there is a secret
  void refuse(int fd, const std::string& why);      // logs why and closes
  void note(int& count, const std::string& what);   // logs a frequent event at counts 1, 2, 4, 8...
  void flush();  // delivers the coordinator's messages and re-arms its deadline timer
  void connection_ready(int fd, std::uint32_t events);
  void drop(int fd);
  void handle_line(int fd, const std::string& line);

  EventLoop& loop_;
  RendezvousCoordinator coordinator_;
  HostGuard guard_;
  Listener listener_;
  int idle_closed_ = 0, over_limit_ = 0;
  std::map<int, Connection> connections_;  // member id = fd for TCP members
  MemberEvents local_events_;
  EventLoop::TimerId deadline_timer_ = 0;
};

}  // namespace kubedist::launcher
