#include "io/listener.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/log_mux.h"
#include "io/net.h"

namespace kubedist::launcher {
namespace {
constexpr int kAcceptBatch = 64;
constexpr auto kPauseWhenOutOfFds = std::chrono::milliseconds(100);
}  // namespace

Listener::~Listener() {
  if (resume_timer_) loop_.cancel(resume_timer_);
  if (fd_ < 0) return;
  if (!resume_timer_) loop_.unwatch(fd_);
  close(fd_);
}

Result<bool> Listener::open(const std::string& addr, int port, OnAccept on_accept) {
  auto fd = listen_tcp(addr, port);
  if (!fd) return make_error(fd.error());
  fd_ = *fd;
  port_ = bound_port(fd_);
  on_accept_ = std::move(on_accept);
  loop_.watch(fd_, EPOLLIN, [this](std::uint32_t) { accept_batch(); });
  return true;
}

void Listener::accept_batch() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    const int c = accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) {
      on_accept_(c, ntohl(peer.sin_addr.s_addr));
      continue;
    }
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) pause(errno);
    return;  // EAGAIN: drained; ECONNABORTED and the like: the next turn tries again
  }
}

void Listener::pause(int err) {
  ++pauses_;
  if ((pauses_ & (pauses_ - 1)) == 0)
    write_all(2, "kubedist-launcher: port " + std::to_string(port_) + ": cannot accept (" + std::strerror(err) +
                     "): pausing 100 ms (" + std::to_string(pauses_) + " so far)\n");
  loop_.unwatch(fd_);
  resume_timer_ = loop_.after(kPauseWhenOutOfFds, [this] {
    resume_timer_ = 0;
    loop_.watch(fd_, EPOLLIN, [this](std::uint32_t) { accept_batch(); });
  });
}

}  // namespace kubedist::launcher
