#include "progress/progress_channel.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "progress/worker_report.h"

namespace kubedist::launcher {

ProgressChannel::~ProgressChannel() {
  for (int fd : fds_) {
    loop_.unwatch(fd);
    close(fd);
  }
}

Result<bool> ProgressChannel::open(int local_ranks) {
  for (int lr = static_cast<int>(fds_.size()); lr < local_ranks; ++lr) {
    const std::string name = "kubedist-progress-" + std::to_string(getpid()) + "-" + std::to_string(lr);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(std::string("progress socket: ") + std::strerror(errno));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name.data(), name.size());  // sun_path[0] == 0: the abstract namespace
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    const int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0 ||
        bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
      const int err = errno;
      close(fd);
      return make_error("progress socket @" + name + ": " + std::strerror(err));
    }
    fds_.push_back(fd);
    names_.push_back("@" + name);
    loop_.watch(fd, EPOLLIN, [this, lr](std::uint32_t) { drain(lr); });
  }
  return true;
}

std::string ProgressChannel::address(int local_rank) const {
  return local_rank >= 0 && static_cast<size_t>(local_rank) < names_.size() ? names_[static_cast<size_t>(local_rank)]
                                                                          : "";
}

void ProgressChannel::drain(int local_rank) {
  char buf[kMaxReportBytes + 1];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  // A bounded batch per wakeup: a flooding worker cannot keep the loop from everything else.
  for (int i = 0; i < 256; ++i) {
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fds_[static_cast<size_t>(local_rank)], &msg, MSG_TRUNC);
    if (n < 0) return;  // EAGAIN: drained (the loop calls again when more arrives)
    pid_t sender = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_CREDENTIALS) continue;
      ucred cred{};
      std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
      sender = cred.pid;
    }
    if (sender_ok_ && !sender_ok_(local_rank, sender)) {
      if (on_foreign_) on_foreign_(local_rank, sender);
      continue;
    }
    const size_t got = std::min(static_cast<size_t>(n), sizeof buf);
    on_report_(local_rank, std::string_view(buf, got), static_cast<size_t>(n));
  }
}

}  // namespace kubedist::launcher
