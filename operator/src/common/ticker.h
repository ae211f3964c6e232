// Ticker: a function run on a thread of its own, at once and then every period, until stop(). An exception from it
// is logged under `component` and the next tick comes as usual (no thread to spare, no memory: try again later).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace kubedist {

class Ticker {
 public:
  Ticker(std::string component, std::chrono::milliseconds period, std::function<void()> tick)
      : component_(std::move(component)), period_(period), tick_(std::move(tick)) {}
  ~Ticker() { stop(); }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;
  void start();
  void stop();
  // True from stop() on: a long tick may end early.
  bool stopping() const { return stopping_; }

 private:
  const std::string component_;
  const std::chrono::milliseconds period_;
  const std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace kubedist
