#include "controller/work_queue.h"

#include <algorithm>

#include "common/backoff.h"

namespace kubedist::controller {

void WorkQueue::delay_locked(const std::string& key, Clock::time_point when) {
  undelay_locked(key);
  delayed_[key] = when;
  due_.emplace(when, key);
}

void WorkQueue::undelay_locked(const std::string& key) {
  auto it = delayed_.find(key);
  if (it == delayed_.end()) return;
  due_.erase({it->second, key});
  delayed_.erase(it);
}

void WorkQueue::wake_one_locked() {
  if (untimed_waiters_ > 0) {
    cv_.notify_one();
  } else if (timed_waiter_) {
    timer_cv_.notify_one();
  }
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  add_locked(key);
}

void WorkQueue::add_locked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key) != 0) return;
  undelay_locked(key);
  dirty_.insert(key);
  if (processing_.count(key) == 0) {
    ready_.push_back(key);
    wake_one_locked();
  }
}

void WorkQueue::wake(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = failures_.find(key); it == failures_.end() || it->second == 0) {
    add_locked(key);
  } else if (processing_.count(key) != 0) {
    woken_.insert(key);  // done() decides: at once after a success, at the backoff time after another failure
  } else if (delayed_.count(key) == 0) {
    add_locked(key);  // backing off but with no time set (a failure not followed by add_rate_limited)
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
  if (it != delayed_.end() && it->second <= when) return;
  const bool earliest = due_.empty() || when < due_.begin()->first;
  delay_locked(key, when);
  if (!earliest) return;  // the timed waiter's deadline comes first anyway
  if (timed_waiter_) {
    timer_cv_.notify_one();
  } else if (untimed_waiters_ > 0) {
    cv_.notify_one();  // it becomes the timed waiter
  }
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
  while (!due_.empty() && due_.begin()->first <= now) {
    const std::string key = due_.begin()->second;
    due_.erase(due_.begin());
    delayed_.erase(key);
    if (dirty_.count(key) != 0) continue;
    dirty_.insert(key);
    if (processing_.count(key) == 0) ready_.push_back(key);
  }
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (shutting_down_) return std::nullopt;
    if (!due_.empty()) promote_due_locked(Clock::now());
    if (!ready_.empty()) {
      std::string key = ready_.front();
      ready_.pop_front();
      dirty_.erase(key);
      processing_.insert(key);
      if (!ready_.empty()) {
        wake_one_locked();  // more to do than this worker takes
      } else if (!due_.empty() && !timed_waiter_ && untimed_waiters_ > 0) {
        cv_.notify_one();  // this was the timed waiter: another one takes over the deadline
      }
      return key;
    }
    if (due_.empty() || timed_waiter_) {
      ++untimed_waiters_;
      cv_.wait(lock);
      --untimed_waiters_;
    } else {
      timed_waiter_ = true;
      timer_cv_.wait_until(lock, due_.begin()->first);
      timed_waiter_ = false;
    }
  }
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  // A wake-up during a reconcile that then succeeded (forget() cleared its failures): the reconcile may have read
  // the state from before the wake-up, so the key goes again.
  if (woken_.erase(key) != 0 && failures_.count(key) == 0 && !shutting_down_ && dirty_.insert(key).second) {
    undelay_locked(key);
  }
  if (dirty_.count(key) != 0) {
    ready_.push_back(key);
    wake_one_locked();
  }
}

void WorkQueue::shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
  timer_cv_.notify_all();
}

size_t WorkQueue::depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size() + delayed_.size();
}

}  // namespace kubedist::controller
