// Small readers of API JSON fields that the parsers share (parse_spec.cc, status_json.cc, facts.cc, kueue.cc).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kubedist::trainingjob {

// obj[key] when it is a string, else "" (absent, null or another type).
inline std::string string_at(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace kubedist::trainingjob
