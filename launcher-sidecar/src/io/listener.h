// Listener: a listening TCP socket on the event loop that hands every accepted connection to a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "io/event_loop.h"
#include "util/result.h"

namespace kubedist::launcher {

class Listener {
 public:
  // fd: the new non-blocking connection; source: the peer's IPv4 address (host byte order).
  using OnAccept = std::function<void(int fd, std::uint32_t source)>;
  explicit Listener(EventLoop& loop) : loop_(loop) {}
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // addr "" for any address, port 0 for any free port. Accepts at most a batch per turn of the loop, so that a
  // connection flood leaves the other sockets their turns; out of file descriptors, it pauses accepting briefly
  // (the kernel keeps the backlog) instead of spinning on a listener that stays readable.
  Result<bool> open(const std::string& addr, int port, OnAccept on_accept);
  int port() const { return port_; }

 private:
  void accept_batch();
  void pause(int err);
  EventLoop& loop_;
  int fd_ = -1;
  int port_ = 0;
  OnAccept on_accept_;
  EventLoop::TimerId resume_timer_ = 0;
  int pauses_ = 0;
};

}  // namespace kubedist::launcher
