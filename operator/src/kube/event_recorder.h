// Records core/v1 Events on objects so that `kubectl describe` explains every decision.
#pragma once

#include <cstddef>
#include <string>

#include "kube/api.h"

namespace kubedist::kube {

struct ObjectRef {
  std::string api_version;
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
};

// The longest Event message the recorder writes, in bytes (client-go's recorder keeps 1024 too).
inline constexpr size_t kMaxEventMessage = 1024;

// message as an Event carries it: valid UTF-8 (invalid bytes replaced by U+FFFD), at most kMaxEventMessage bytes,
// cut at a character boundary and ended with "..." when longer.
std::string event_message(const std::string& message);

class EventRecorder {
 public:
  EventRecorder(Api& client, std::string component) : client_(client), component_(std::move(component)) {}
  // Best effort: a failure to record is logged, never fatal. Every event is also logged.
  void record(const ObjectRef& object, const std::string& type, const std::string& reason, const std::string& message);

 private:
  Api& client_;
  const std::string component_;
};

}  // namespace kubedist::kube
