#include "io/trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

namespace kubedist::launcher {

Result<EventTrace> EventTrace::open(const std::string& path, int node_rank) {
  EventTrace trace;
  trace.fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (trace.fd_ < 0) return make_error("--rdzv-trace " + path + ": " + std::strerror(errno));
  trace.node_rank_ = node_rank;
  return trace;
}

EventTrace::EventTrace(EventTrace&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), node_rank_(other.node_rank_) {}

EventTrace& EventTrace::operator=(EventTrace&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    node_rank_ = other.node_rank_;
  }
  return *this;
}

EventTrace::~EventTrace() {
  if (fd_ >= 0) ::close(fd_);
}

void EventTrace::stamp(std::string_view event) const {
  if (fd_ < 0) return;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const long long ns = static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
  const std::string line = std::to_string(ns) + " " + std::to_string(node_rank_) + " " + std::string(event) + "\n";
  // A benchmark's record: a short or failed write loses a line, which the benchmark notices (a node without it).
  [[maybe_unused]] ssize_t n = ::write(fd_, line.data(), line.size());
}

}  // namespace kubedist::launcher
