#include "controller/work_queue.h"

#include <algorithm>

#include "common/backoff.h"

namespace kubedist::controller {

void WorkQueue::add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_ || dirty_.count(key) != 0) return;
  delayed_.erase(key);
  dirty_.insert(key);
  if (processing_.count(key) == 0) {
    ready_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::add_after(const std::string& key, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) {
    add(key);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_ || dirty_.count(key) != 0) return;
  const auto when = Clock::now() + delay;
  auto it = delayed_.find(key);
  if (it == delayed_.end() || when < it->second) delayed_[key] = when;
  cv_.notify_one();
}

void WorkQueue::add_rate_limited(const std::string& key) {
  std::chrono::milliseconds delay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    delay = BackoffPolicy{options_.base_delay, options_.max_delay}.delay(failures_[key]++);
  }
  add_after(key, delay);
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

int WorkQueue::failures(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::promote_due_locked(Clock::time_point now) {
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    const std::string key = it->first;
    it = delayed_.erase(it);
    if (dirty_.count(key) != 0) continue;
    dirty_.insert(key);
    if (processing_.count(key) == 0) ready_.push_back(key);
  }
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (shutting_down_) return std::nullopt;
    promote_due_locked(Clock::now());
    if (!ready_.empty()) {
      std::string key = ready_.front();
      ready_.pop_front();
      dirty_.erase(key);
      processing_.insert(key);
      return key;
    }
    if (delayed_.empty()) {
      cv_.wait(lock);
    } else {
      auto next = std::min_element(delayed_.begin(), delayed_.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      cv_.wait_until(lock, next->second);
    }
  }
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) != 0) {
    ready_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

size_t WorkQueue::depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size() + delayed_.size();
}

}  // namespace kubedist::controller
