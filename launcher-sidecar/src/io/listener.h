// Listener: a listening TCP socket on the event loop that hands every accepted connection to a callback.
#pragma once

#include <functional>
#include <string>

#include "io/event_loop.h"
#include "util/result.h"

namespace kubedist::launcher {

class Listener {
 public:
  explicit Listener(EventLoop& loop) : loop_(loop) {}
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // addr "" for any address, port 0 for any free port; on_accept gets each new non-blocking connection.
  Result<bool> open(const std::string& addr, int port, std::function<void(int fd)> on_accept);
  int port() const { return port_; }

 private:
  EventLoop& loop_;
  int fd_ = -1;
  int port_ = 0;
  std::function<void(int)> on_accept_;
};

}  // namespace kubedist::launcher
