// One event of a Kubernetes watch stream, read into its parts, and what the stream should do after it.
#pragma once

#include <string>

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
};

// After an event: read on, open a new watch from the last resourceVersion, or list everything again.
enum class AfterEvent { kContinue, kRewatch, kRelist };

}  // namespace kubedist::kube
