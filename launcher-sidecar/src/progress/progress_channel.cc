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
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
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
  // A bounded batch per wakeup: a flooding worker cannot keep the loop from everything else.
  for (int i = 0; i < 256; ++i) {
    const ssize_t n = recv(fds_[static_cast<size_t>(local_rank)], buf, sizeof buf, MSG_TRUNC);
    if (n < 0) return;  // EAGAIN: drained (the loop calls again when more arrives)
    const size_t got = std::min(static_cast<size_t>(n), sizeof buf);
    on_report_(local_rank, std::string_view(buf, got), static_cast<size_t>(n));
  }
}

}  // namespace kubedist::launcher
