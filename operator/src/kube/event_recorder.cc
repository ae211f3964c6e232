#include "kube/event_recorder.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <tuple>

#include "common/log.h"
#include "common/time.h"
#include "common/utf8.h"

namespace kubedist::kube {

std::string event_message(const std::string& message) { return cut_utf8(message, kMaxEventMessage, "..."); }

namespace {
constexpr const char* kCombinedPrefix = "(combined from similar events): ";  // client-go's words
}  // namespace

void EventRecorder::record(const ObjectRef& object, const std::string& type, const std::string& reason,
                           const std::string& raw_message) {
  // Messages quote what workers wrote (termination messages, hang stacks): made valid and cut at a character
  // boundary, or the Event could not be sent at all.
  const std::string raw = event_message(raw_message);
  log(type == "Warning" ? LogLevel::kWarn : LogLevel::kInfo, "event",
      object.kind + " " + object.ns + "/" + object.name + " " + reason + ": " + raw);
  const std::string similar_key =
      object.ns + '\n' + object.name + '\n' + object.uid + '\n' + object.kind + '\n' + type + '\n' + reason;
  std::optional<Recorded> seen;
  std::string key, message;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::tie(message, key) = aggregate(similar_key, raw);
    if (auto it = recorded_.find(key); it != recorded_.end()) {
      ++it->second.count;
      by_use_.erase(it->second.used);
      it->second.used = ++uses_;
      by_use_[it->second.used] = key;
      seen = it->second;
    }
  }
  if (!seen) {
    create(object, type, reason, message, key);
    return;
  }
  const std::string path = "/api/v1/namespaces/" + object.ns + "/events/" + seen->name;
  auto r = client_.merge_patch(
      path, {{"count", seen->count}, {"lastTimestamp", format_rfc3339(now_unix())}, {"message", message}});
  if (r) return;
  if (r.error().kind == Error::Kind::kNotFound) {  // expired (the API server keeps Events an hour) or deleted
    create(object, type, reason, message, key);
    return;
  }
  log_warn("event", "could not count event " + reason + " on " + object.name + " again: " + r.error().message);
}

std::pair<std::string, std::string> EventRecorder::aggregate(const std::string& similar_key,
                                                             const std::string& message) {
  const int64_t now = now_unix();
  Similar& similar = similar_[similar_key];
  if (now - similar.last > kSimilarWindowS) similar.messages.clear();
  similar.last = now;
  if (similar.messages.size() < kSimilarEvents) similar.messages.insert(message);
  if (similar.messages.size() < kSimilarEvents) return {message, similar_key + '\n' + message};
  return {event_message(kCombinedPrefix + message), similar_key + "\n(combined)"};
}

void EventRecorder::create(const ObjectRef& object, const std::string& type, const std::string& reason,
                           const std::string& message, const std::string& key) {
  const std::string now = format_rfc3339(now_unix());
  uint64_t unique = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    unique = ++uses_;
  }
  // A name of our own (client-go's: the object's name and the time in hex), so that a repeat can patch it.
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(nanos) + unique);
  // A name is at most 253 characters, each dot-separated part ending in a letter or digit: a long object name is
  // cut (client-go leaves this to generateName, which cuts too).
  std::string base = object.name.substr(0, 253 - std::strlen(suffix));
  while (!base.empty() && (base.back() == '-' || base.back() == '.')) base.pop_back();
  const std::string name = base + suffix;
  const nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", object.ns}}},
      {"involvedObject",
       {{"apiVersion", object.api_version},
        {"kind", object.kind},
        {"namespace", object.ns},
        {"name", object.name},
        {"uid", object.uid}}},
      {"type", type},
      {"reason", reason},
      {"message", message},
      {"source", {{"component", component_}}},
      {"reportingComponent", component_},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1},
  };
  auto r = client_.create_unparsed("/api/v1/namespaces/" + object.ns + "/events", event);
  if (!r) {
    log_warn("event", "could not record event " + reason + " on " + object.name + ": " + r.error().message);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  remember_locked(key, Recorded{name, 1, 0});
}

void EventRecorder::remember_locked(const std::string& key, Recorded recorded) {
  if (auto it = recorded_.find(key); it != recorded_.end()) by_use_.erase(it->second.used);
  recorded.used = ++uses_;
  by_use_[recorded.used] = key;
  recorded_[key] = std::move(recorded);
  while (recorded_.size() > max_remembered_ && !by_use_.empty()) {
    recorded_.erase(by_use_.begin()->second);
    by_use_.erase(by_use_.begin());
  }
  if (similar_.size() > max_remembered_) similar_.clear();  // bounded: the windows start again
}

}  // namespace kubedist::kube
