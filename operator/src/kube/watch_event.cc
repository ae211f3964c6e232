#include "kube/watch_event.h"

namespace kubedist::kube {

std::string object_key(const nlohmann::json& obj) {
  // Never throws: it also names malformed objects in logs.
  auto text = [&](const char* field) -> std::string {
    if (!obj.is_object()) return "";
    auto md = obj.find("metadata");
    if (md == obj.end() || !md->is_object()) return "";
    auto it = md->find(field);
    return it != md->end() && it->is_string() ? it->get<std::string>() : "";
  };
  return text("namespace") + "/" + text("name");
}

WatchEvent WatchEvent::parse(nlohmann::json event) {
  WatchEvent out;
  if (!event.is_object()) return out;
  const std::string type = event.value("type", "");
  if (auto it = event.find("object"); it != event.end()) out.object = std::move(*it);
  if (type == "ERROR") {
    out.type = Type::kError;
    if (out.object.is_object()) {
      out.error_code = out.object.value("code", 0);
      out.error_message = out.object.value("message", "");
    }
    return out;
  }
  if (!out.object.is_object() || !out.object.contains("metadata") || !out.object["metadata"].is_object()) return out;
  out.resource_version = out.object["metadata"].value("resourceVersion", "");
  out.type = type_of(type);
  return out;
}

WatchEvent::Type WatchEvent::type_of(std::string_view type) {
  if (type == "ADDED") return Type::kAdded;
  if (type == "MODIFIED") return Type::kModified;
  if (type == "DELETED") return Type::kDeleted;
  if (type == "BOOKMARK") return Type::kBookmark;
  if (type == "ERROR") return Type::kError;
  return Type::kIgnored;
}

}  // namespace kubedist::kube
