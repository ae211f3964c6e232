// Small readers of API JSON fields, shared by every parser (api/, gang/, kueue/): lenient, a field that is absent
// or of another type reads as empty.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/utf8.h"

namespace kubedist::trainingjob {

// obj[key] when it is a string, else "" (absent, null or another type).
inline std::string string_at(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return std::string();
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// obj[key] when it is a string, else "": a view into obj, for comparing without a copy.
inline std::string_view text_at(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>()) : std::string_view();
}

// obj[key] when it is an integer, else 0.
inline int int_at(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int>() : 0;
}

// &obj[key] when it is an object, else null.
inline const nlohmann::json* object_at(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? &*it : nullptr;
}

// obj[key] when it is an object, else an empty object: for reading a sub-object through a reference.
inline const nlohmann::json& object_or_empty(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json* found = object_at(obj, key);
  return found != nullptr ? *found : empty;
}

// The condition of this type in a served conditions list, else null.
inline const nlohmann::json* condition_at(const nlohmann::json& conditions, const std::string& type) {
  if (!conditions.is_array()) return nullptr;
  for (const auto& c : conditions) {
    if (c.is_object() && string_at(c, "type") == type) return &c;
  }
  return nullptr;
}

// The first non-empty line of text, valid UTF-8 (invalid bytes replaced by U+FFFD), at most max bytes (cut at a
// character boundary): what the operator keeps of a message someone else wrote.
inline std::string first_line(std::string_view text, size_t max) {
  size_t start = text.find_first_not_of("\r\n");
  if (start == std::string_view::npos) return "";
  return cut_utf8(text.substr(start, text.find_first_of("\r\n", start) - start), max);
}

// obj[key] when it is an integer that fits an int64, else nullopt.
inline std::optional<int64_t> int64_at(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return it->get<int64_t>();
}

// obj[key] when it is a finite number, else nullopt.
inline std::optional<double> number_at(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

}  // namespace kubedist::trainingjob
