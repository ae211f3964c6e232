// One event of a Kubernetes watch stream, read into its parts, and what the stream should do after it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kubedist::kube {

// An object's cache key: "namespace/name".
std::string object_key(const nlohmann::json& obj);

struct WatchEvent {
  // kIgnored: an unknown type, or an object without metadata: nothing to apply.
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError, kIgnored };
  Type type = Type::kIgnored;
  nlohmann::json object;         // the object; for kError the Status the server sent
  std::string resource_version;  // the object's metadata.resourceVersion (not for kError)
  int error_code = 0;            // kError: the Status code (410: our resourceVersion is too old)
  std::string error_message;     // kError: the Status message

  static WatchEvent parse(nlohmann::json event);
  // The type an event's "type" names: kIgnored for an unknown one (kError for ERROR).
  static Type type_of(std::string_view type);
};

// A watch event that a decoder of its kind read straight into the cache's projection T, without the JSON tree
// (Informer::set_decoder): the event without its object, the object's key, and its projection.
template <typename T>
struct DecodedEvent {
  WatchEvent event;            // event.object stays null
  std::string key;             // "namespace/name" (for kAdded, kModified, kDeleted)
  std::optional<T> projected;  // nullopt: the object could not be projected (skipped, as Store::project skips it)
};

// After an event: read on, open a new watch from the last resourceVersion, or list everything again.
enum class AfterEvent { kContinue, kRewatch, kRelist };

}  // namespace kubedist::kube
