// EventLoop: one epoll loop for fds (signalfd, pipes, sockets) and timers; the launcher never sleeps to poll.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace kubedist::launcher {

class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;
  using TimerId = std::uint64_t;

  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Calls on_ready(epoll events) whenever fd is ready for `events` (EPOLLIN, EPOLLOUT...).
  void watch(int fd, std::uint32_t events, std::function<void(std::uint32_t)> on_ready);
  void modify(int fd, std::uint32_t events);
  void unwatch(int fd);

  TimerId at(Clock::time_point when, std::function<void()> fn);
  TimerId after(Clock::duration delay, std::function<void()> fn) { return at(Clock::now() + delay, std::move(fn)); }
  void cancel(TimerId id);
  // Runs fn on the next turn of the loop, after the current handler returns (no reentrancy).
  void defer(std::function<void()> fn);

  void run();   // until stop()
  void stop() { running_ = false; }

 private:
  void run_due_timers();
  int epoll_fd_;
  bool running_ = false;
  TimerId next_timer_id_ = 1;
  std::map<int, std::shared_ptr<std::function<void(std::uint32_t)>>> handlers_;
  std::multimap<Clock::time_point, std::pair<TimerId, std::function<void()>>> timers_;
  std::vector<std::function<void()>> deferred_;
};

}  // namespace kubedist::launcher
