#include "common/ticker.h"

#include <exception>

#include "common/log.h"

namespace kubedist {

void Ticker::start() {
  stopping_ = false;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      try {
        tick_();
      } catch (const std::exception& e) {
        log_error(component_, std::string("failed: ") + e.what());
      }
      lock.lock();
      wake_.wait_for(lock, period_, [this] { return stopping_.load(); });
    }
  });
}

void Ticker::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kubedist
