#include "controller/controller.h"

#include <algorithm>
#include <chrono>

#include "common/log.h"

namespace kubedist::controller {

void Controller::start() {
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { work(); });
}

void Controller::stop() {
  queue_.shutdown();
  threads_.clear();  // joins: each worker ends when the queue hands it no more keys
}

std::pair<double, double> Controller::latency_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (durations_ms_.empty()) return {0, 0};
  std::vector<float> d = durations_ms_;
  std::sort(d.begin(), d.end());
  return {d[d.size() / 2], d[std::min(d.size() - 1, d.size() * 99 / 100)]};
}

std::optional<std::pair<std::string, std::chrono::milliseconds>> Controller::longest_in_flight(
    std::chrono::steady_clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<std::pair<std::string, std::chrono::milliseconds>> longest;
  for (const auto& [thread, flight] : in_flight_) {
    const auto& [key, since] = flight;
    const auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
    if (!longest || ran > longest->second) longest = {key, ran};
  }
  return longest;
}

void Controller::work() {
  while (auto key = queue_.get()) {
    const auto start = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_[std::this_thread::get_id()] = {*key, start};
    }
    ReconcileResult result;
    try {
      result = reconcile_(*key);
    } catch (const std::exception& e) {  // no exception may end a worker
      result = ReconcileResult::failed(Error{Error::Kind::kOther, std::string("unexpected exception: ") + e.what(), 0});
    }
    const auto took = std::chrono::steady_clock::now() - start;
    const float ms = std::chrono::duration<float, std::milli>(took).count();
    if (on_reconciled_) on_reconciled_(result, took);
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.erase(std::this_thread::get_id());
      if (durations_ms_.size() < 1'000'000) durations_ms_.push_back(ms);
    }
    ++reconciles_;
    switch (result.kind) {
      case ReconcileResult::Kind::kDone:
        queue_.forget(*key);
        break;
      case ReconcileResult::Kind::kRequeueAfter:
        queue_.forget(*key);
        queue_.add_after(*key, result.after);
        break;
      case ReconcileResult::Kind::kError:
        ++errors_;
        log_warn("controller", "reconcile " + *key + " failed (retry " + std::to_string(queue_.failures(*key) + 1) +
                                   "): " + result.error.message);
        queue_.add_rate_limited(*key);
        break;
    }
    queue_.done(*key);
  }
}

}  // namespace kubedist::controller
