#include "io/listener.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/net.h"

namespace kubedist::launcher {

Listener::~Listener() {
  if (fd_ < 0) return;
  loop_.unwatch(fd_);
  close(fd_);
}

Result<bool> Listener::open(const std::string& addr, int port, std::function<void(int fd)> on_accept) {
  auto fd = listen_tcp(addr, port);
  if (!fd) return make_error(fd.error());
  fd_ = *fd;
  port_ = bound_port(fd_);
  on_accept_ = std::move(on_accept);
  loop_.watch(fd_, EPOLLIN, [this](std::uint32_t) {
    int c;
    while ((c = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) on_accept_(c);
  });
  return true;
}

}  // namespace kubedist::launcher
