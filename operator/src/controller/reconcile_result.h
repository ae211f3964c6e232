// What one reconcile of a key asks of the controller: nothing, a later look, or a retry with backoff.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"

namespace kubedist::controller {

struct ReconcileResult {
  enum class Kind { kDone, kRequeueAfter, kError };
  Kind kind = Kind::kDone;
  std::chrono::milliseconds after{0};
  Error error;  // kError: what failed, with the kind and HTTP status of the cause

  static ReconcileResult done() { return {}; }
  static ReconcileResult requeue_after(std::chrono::milliseconds d) { return {Kind::kRequeueAfter, d, {}}; }
  static ReconcileResult failed(Error e) { return {Kind::kError, {}, std::move(e)}; }
  // cause, with what we were doing in front of its message: "create pod x: <message>".
  static ReconcileResult failed(const std::string& doing, const Error& cause) {
    return failed(Error{cause.kind, doing + ": " + cause.message, cause.http_status});
  }
};

}  // namespace kubedist::controller
