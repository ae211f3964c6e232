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
// A port that was free on addr a moment ago (bind to port 0 and read it back).
Result<int> pick_free_port(const std::string& addr);

}  // namespace kubedist::launcher
