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
  void promote_due_locked(Clock::time_point now);

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;
  std::set<std::string> dirty_;       // in ready_ or to be re-queued after processing
  std::set<std::string> processing_;
  std::map<std::string, Clock::time_point> delayed_;  // key -> when it becomes ready
  std::map<std::string, int> failures_;
  bool shutting_down_ = false;
};

}  // namespace kubedist::controller
