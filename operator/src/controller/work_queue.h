// A rate-limited work queue of keys: deduplicates, backs off per key, never hands a key to two workers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace kubedist::controller {

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::chrono::milliseconds base_delay{50};   // first retry after an error
    std::chrono::milliseconds max_delay{60000}; // per-key backoff doubles up to this
  };

  WorkQueue() : WorkQueue(Options{}) {}
  explicit WorkQueue(Options options) : options_(options) {}

  // Queues key unless it is already waiting. A key being processed is queued again once done() is called.
  void add(const std::string& key);
  // Queues key like add(), unless it is backing off after errors (a failure count not yet forgotten): then it
  // keeps its backoff time, and a wake-up while it is processed queues it only if that reconcile succeeds. For
  // sources that wake keys on a timer of their own (the STATUS poller): each of their wake-ups would otherwise
  // retry a failing key at once, however long its backoff.
  void wake(const std::string& key);
  // Queues key after delay (an earlier pending time for the same key wins).
  void add_after(const std::string& key, std::chrono::milliseconds delay);
  // Queues key after its next backoff delay: base_delay * 2^failures, capped.
  void add_rate_limited(const std::string& key);
  // Clears key's failure count (call after a successful reconcile).
  void forget(const std::string& key);
  int failures(const std::string& key) const;

  // Blocks until a key is ready (and not being processed) or the queue shuts down (nullopt).
  std::optional<std::string> get();
  // Marks key as no longer processed; re-queues it if it was added meanwhile.
  void done(const std::string& key);
  void shutdown();

  size_t depth() const;  // keys ready or waiting for their time

 private:
  void add_locked(const std::string& key);
  void promote_due_locked(Clock::time_point now);
  // Sets or drops key's pending time, in both delayed_ and due_.
  void delay_locked(const std::string& key, Clock::time_point when);
  void undelay_locked(const std::string& key);
  // Wakes one idle worker for a ready key: an untimed waiter if there is one, else the timed one.
  void wake_one_locked();

  const Options options_;
  mutable std::mutex mu_;
  // Idle workers wait on cv_ without a deadline, except one (timed_waiter_) that waits on timer_cv_ until the earliest
  // pending time: at that time one worker wakes, not all of them (each wake-up is a context switch; with 16 workers
  // they cost more CPU than the reconciles did).
  std::condition_variable cv_;
  std::condition_variable timer_cv_;
  int untimed_waiters_ = 0;
  bool timed_waiter_ = false;
  std::deque<std::string> ready_;
  std::set<std::string> dirty_;       // in ready_ or to be re-queued after processing
  std::set<std::string> processing_;
  std::map<std::string, Clock::time_point> delayed_;  // key -> when it becomes ready
  std::set<std::pair<Clock::time_point, std::string>> due_;  // the same, earliest first
  std::map<std::string, int> failures_;
  std::set<std::string> woken_;  // wake()s of keys backing off that came while they were processed
  bool shutting_down_ = false;
};

}  // namespace kubedist::controller
