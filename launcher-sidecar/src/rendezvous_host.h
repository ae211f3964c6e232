// RendezvousHost: the rendezvous service node rank 0 runs (coordinator + TCP listener + node 0's own member).
// It listens on --rdzv-endpoint, by default MASTER_ADDR:MASTER_PORT+1 (MASTER_PORT itself belongs to the workers'
// process group store). A single-node job (--nnodes=1) needs no listener.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "event_loop.h"
#include "listener.h"
#include "rendezvous_coordinator.h"
#include "rendezvous_member.h"
#include "result.h"

namespace kubedist::launcher {

class RendezvousHost {
 public:
  RendezvousHost(EventLoop& loop, CoordinatorSettings settings);
  ~RendezvousHost();
  RendezvousHost(const RendezvousHost&) = delete;
  RendezvousHost& operator=(const RendezvousHost&) = delete;

  // Accepts other nodes on bind_addr:port (IPv4, "" for any address).
  Result<bool> listen(const std::string& bind_addr, int port);
  // Every round then names the workers' store: addr (this host as the other nodes reach it) and port, or with
  // port 0 a port free on this host, chosen anew for each round (torchrun's c10d rendezvous does the same on the
  // node of group rank 0; the host is node rank 0, so group rank 0 whenever it takes part).
  void announce_store(std::string addr, int port);
  // Node 0's own agent, talking to the coordinator without a socket.
  std::unique_ptr<RendezvousMember> local_member(MemberEvents events);
  const RendezvousCoordinator& coordinator() const { return coordinator_; }

 private:
  class LocalMember;
  struct Connection {
    std::string in;
    std::string out;
  };
  void add_store(Assignment& a);
  void flush();  // delivers the coordinator's messages and re-arms its deadline timer
  void connection_ready(int fd, std::uint32_t events);
  void drop(int fd);
  void handle_line(int fd, const std::string& line);

  EventLoop& loop_;
  RendezvousCoordinator coordinator_;
  Listener listener_;
  std::map<int, Connection> connections_;  // member id = fd for TCP members
  MemberEvents local_events_;
  EventLoop::TimerId deadline_timer_ = 0;
  std::string store_addr_;  // empty: rounds name no store (the launchers' --master-addr/--master-port hold)
  int store_fixed_port_ = 0;
  int store_round_ = -1;    // the round store_port_ was chosen for
  int store_port_ = 0;
};

}  // namespace kubedist::launcher
