#include "io/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kubedist::launcher {

std::optional<in_addr> parse_ipv4(const std::string& text) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) == 1) return a;
  return std::nullopt;
}

namespace {

// addr:port to bind to ("" for any address); `what` starts the error ("cannot listen").
Result<sockaddr_in> bind_address(const std::string& addr, int port, const std::string& what) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (addr.empty()) {
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (auto a = parse_ipv4(addr)) {
    sa.sin_addr = *a;
  } else {
    return make_error(what + " on '" + addr + "': not an IPv4 address");
  }
  return sa;
}

}  // namespace

Result<int> listen_tcp(const std::string& addr, int port) {
  auto bound = bind_address(addr, port, "cannot listen");
  if (!bound) return make_error(bound.error());
  sockaddr_in sa = *bound;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    std::string err = std::strerror(errno);
    close(fd);
    return make_error("cannot listen on " + (addr.empty() ? std::string("0.0.0.0") : addr) + ":" +
                      std::to_string(port) + ": " + err);
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return -1;
  return ntohs(sa.sin_port);
}

Result<int> start_connect(in_addr addr, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr = addr;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 && errno != EINPROGRESS) {
    std::string err = std::strerror(errno);
    close(fd);
    return make_error(err);
  }
  return fd;
}

void detect_dead_peer(int fd) {
  const int on = 1, idle = 5, interval = 2, count = kDeadPeerSeconds / interval;
  const unsigned user_timeout_ms = kDeadPeerSeconds * 1000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  // Data sent and never acknowledged (a round's assignment to a dead member) is given up within the same time.
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

int connect_error(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

bool is_local_address(in_addr addr) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = addr;
  bool local = bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  close(fd);
  return local;
}

Result<PortReservation> PortReservation::take(const std::string& addr) {
  auto bound = bind_address(addr, 0, "cannot reserve a port");
  if (!bound) return make_error(bound.error());
  sockaddr_in sa = *bound;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    std::string err = std::strerror(errno);
    close(fd);
    return make_error("cannot reserve a port: " + err);
  }
  return PortReservation(fd, bound_port(fd));
}

PortReservation::PortReservation(PortReservation&& other) noexcept : fd_(other.fd_), port_(other.port_) {
  other.fd_ = -1;
  other.port_ = 0;
}

PortReservation& PortReservation::operator=(PortReservation&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    port_ = other.port_;
    other.fd_ = -1;
    other.port_ = 0;
  }
  return *this;
}

PortReservation::~PortReservation() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace kubedist::launcher
