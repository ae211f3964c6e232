#include "io/event_loop.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace kubedist::launcher {

EventLoop::EventLoop() : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {
  if (epoll_fd_ < 0) {
    std::perror("kubedist-launcher: epoll_create1");
    std::exit(1);
  }
}

EventLoop::~EventLoop() { close(epoll_fd_); }

void EventLoop::watch(int fd, std::uint32_t events, std::function<void(std::uint32_t)> on_ready) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  int op = handlers_.count(fd) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  epoll_ctl(epoll_fd_, op, fd, &ev);
  handlers_[fd] = std::make_shared<std::function<void(std::uint32_t)>>(std::move(on_ready));
}

void EventLoop::modify(int fd, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
}

void EventLoop::unwatch(int fd) {
  if (handlers_.erase(fd)) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

EventLoop::TimerId EventLoop::at(Clock::time_point when, std::function<void()> fn) {
  TimerId id = next_timer_id_++;
  timers_.emplace(when, std::make_pair(id, std::move(fn)));
  return id;
}

void EventLoop::cancel(TimerId id) {
  for (auto it = timers_.begin(); it != timers_.end(); ++it) {
    if (it->second.first == id) {
      timers_.erase(it);
      return;
    }
  }
}

void EventLoop::defer(std::function<void()> fn) { deferred_.push_back(std::move(fn)); }

void EventLoop::run_due_timers() {
  auto now = Clock::now();
  while (!timers_.empty() && timers_.begin()->first <= now) {
    auto fn = std::move(timers_.begin()->second.second);
    timers_.erase(timers_.begin());
    fn();
  }
}

void EventLoop::run() {
  running_ = true;
  epoll_event events[32];
  while (running_) {
    while (!deferred_.empty() && running_) {
      auto batch = std::move(deferred_);
      deferred_.clear();
      for (auto& fn : batch) fn();
    }
    if (!running_) break;
    int timeout_ms = -1;
    if (!timers_.empty()) {
      auto wait = timers_.begin()->first - Clock::now();
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
      timeout_ms = ms < 0 ? 0 : static_cast<int>(ms);
    }
    if (!deferred_.empty()) timeout_ms = 0;
    int n = epoll_wait(epoll_fd_, events, 32, timeout_ms);
    if (n < 0 && errno != EINTR) {
      std::perror("kubedist-launcher: epoll_wait");
      std::exit(1);
    }
    for (int i = 0; i < n && running_; ++i) {
      auto it = handlers_.find(events[i].data.fd);
      if (it == handlers_.end()) continue;  // unwatched by an earlier handler in this batch
      auto handler = it->second;          // keeps the handler alive while it runs
      (*handler)(events[i].events);
    }
    if (running_) run_due_timers();
  }
}

}  // namespace kubedist::launcher
