// Records core/v1 Events on objects so that `kubectl describe` explains every decision.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

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
  // max_remembered: how many recorded Events are remembered for aggregation (client-go's cache holds 4096).
  EventRecorder(Api& client, std::string component, size_t max_remembered = 4096)
      : client_(client), component_(std::move(component)), max_remembered_(max_remembered) {}
  // Best effort: a failure to record is logged, never fatal. Every event is also logged. An Event like one recorded
  // before (the same object, type, reason and message) is counted on that one (count, lastTimestamp), as client-go's
  // recorder does: a decision repeated on every pass (a retried write, each poll) is one Event, not one per pass.
  // And as client-go's aggregator does, once kSimilarEvents different messages of one object, type and reason came
  // with less than kSimilarWindowS between them, every further one is counted on one Event of that object, type and
  // reason whose message is "(combined from similar events): " and the latest message.
  void record(const ObjectRef& object, const std::string& type, const std::string& reason, const std::string& message);
  static constexpr size_t kSimilarEvents = 10;
  static constexpr int64_t kSimilarWindowS = 600;

 private:
  struct Recorded {
    std::string name;  // the Event's metadata.name
    int count = 1;
    uint64_t used = 0;  // when it was last recorded, in records: the least recently used is forgotten first
  };
  // The different messages of one object, type and reason lately, up to kSimilarEvents.
  struct Similar {
    std::set<std::string> messages;
    int64_t last = 0;  // when the latest came (unix seconds)
  };
  // The message to record and the key it is counted under: the message's own, or the combined one's.
  std::pair<std::string, std::string> aggregate(const std::string& similar_key, const std::string& message);
  // Creates a new Event; remembers it under key when that worked.
  void create(const ObjectRef& object, const std::string& type, const std::string& reason, const std::string& message,
              const std::string& key);
  void remember_locked(const std::string& key, Recorded recorded);

  Api& client_;
  const std::string component_;
  const size_t max_remembered_;
  std::mutex mu_;
  std::map<std::string, Recorded> recorded_;  // by object, type, reason and message
  std::map<uint64_t, std::string> by_use_;    // recorded_'s keys by their last use
  std::map<std::string, Similar> similar_;    // by object, type and reason (forgotten with recorded_'s bound)
  uint64_t uses_ = 0;
};

}  // namespace kubedist::kube
