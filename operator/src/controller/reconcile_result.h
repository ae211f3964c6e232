// What one reconcile of a key asks of the controller: nothing, a later look, or a retry with backoff.
#pragma once

#include <chrono>
#include <string>

namespace kubedist::controller {

struct ReconcileResult {
  enum class Kind { kDone, kRequeueAfter, kError };
  Kind kind = Kind::kDone;
  std::chrono::milliseconds after{0};
  std::string error;

  static ReconcileResult done() { return {}; }
  static ReconcileResult requeue_after(std::chrono::milliseconds d) { return {Kind::kRequeueAfter, d, ""}; }
  static ReconcileResult failed(std::string e) { return {Kind::kError, {}, std::move(e)}; }
};

}  // namespace kubedist::controller
