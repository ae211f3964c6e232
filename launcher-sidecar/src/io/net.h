// Socket helpers for IPv4 TCP (non-blocking, close-on-exec).
#pragma once

#include <netinet/in.h>

#include <optional>
#include <string>

#include "util/result.h"

namespace kubedist::launcher {

std::optional<in_addr> parse_ipv4(const std::string& text);
// Listens on addr:port ("" or "0.0.0.0" for any address; port 0 for any free port).
Result<int> listen_tcp(const std::string& addr, int port);
int bound_port(int fd);
// Starts a non-blocking connect; the fd becomes writable when it completes (check connect_error()).
Result<int> start_connect(in_addr addr, int port);
int connect_error(int fd);
// A peer that vanishes without a word (its node lost power, its cable was cut: no FIN, no RST) is found out by the
// kernel: keepalive probes every 2 s after 5 s of silence, and the connection given up once nothing was acknowledged
// for kDeadPeerSeconds; the next read then fails (ETIMEDOUT) as a closed connection would. torchrun's agents
// count 3 missed heartbeats of 5 s for the same.
inline constexpr int kDeadPeerSeconds = 15;
void detect_dead_peer(int fd);
// True when addr belongs to this host (binding to it succeeds).
bool is_local_address(in_addr addr);
// A free port held for a server that another process starts later (the rank-0 worker's TCPStore): a socket bound
// to it with SO_REUSEADDR and never listening. While it is held, the kernel gives the port to no other bind to port
// 0 and to no outgoing connection (a store client retrying its connect on this host could otherwise be given the
// port as its own and connect to itself), yet a server that sets SO_REUSEADDR, as every TCPStore does, binds and
// listens on it. Released when destroyed.
class PortReservation {
 public:
  PortReservation() = default;
  static Result<PortReservation> take(const std::string& addr);
  PortReservation(PortReservation&& other) noexcept;
  PortReservation& operator=(PortReservation&& other) noexcept;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  ~PortReservation();
  int port() const { return port_; }

 private:
  PortReservation(int fd, int port) : fd_(fd), port_(port) {}
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace kubedist::launcher
