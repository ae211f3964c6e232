#include "cli/log_line_prefix.h"

#include <cctype>
#include <optional>

namespace kubedist::launcher {
namespace {

bool identifier_char(char c, bool first) {
  return c == '_' || std::isalpha(static_cast<unsigned char>(c)) || (!first && std::isdigit(static_cast<unsigned char>(c)));
}

// One placeholder at tmpl[at] == '$': its name ("" when none: a lone '$', or "$$"), and its length.
struct Placeholder {
  std::string name;
  size_t length = 1;
  bool escaped_dollar = false;
};

Placeholder placeholder_at(const std::string& tmpl, size_t at) {
  Placeholder p;
  if (at + 1 < tmpl.size() && tmpl[at + 1] == '$') {
    p.escaped_dollar = true;
    p.length = 2;
    return p;
  }
  if (at + 1 < tmpl.size() && tmpl[at + 1] == '{') {
    const size_t close = tmpl.find('}', at + 2);
    if (close == std::string::npos) return p;
    const std::string name = tmpl.substr(at + 2, close - at - 2);
    if (name.empty() || !identifier_char(name[0], true)) return p;
    for (char c : name)
      if (!identifier_char(c, false)) return p;
    p.name = name;
    p.length = close - at + 1;
    return p;
  }
  size_t end = at + 1;
  while (end < tmpl.size() && identifier_char(tmpl[end], end == at + 1)) ++end;
  if (end == at + 1) return p;
  p.name = tmpl.substr(at + 1, end - at - 1);
  p.length = end - at;
  return p;
}

std::optional<std::string> value_of(const std::string& name, const PrefixMacros& m) {
  if (name == "role_name") return m.role_name;
  if (name == "local_rank") return std::to_string(m.local_rank);
  if (name == "rank") return std::to_string(m.rank);
  if (name == "hostname") return m.hostname;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_prefix_template(const std::string& tmpl) {
  if (tmpl.find_first_of("\r\n") != std::string::npos) return "a prefix cannot hold a line break";
  for (size_t at = tmpl.find('$'); at != std::string::npos; at = tmpl.find('$', at + 1)) {
    const Placeholder p = placeholder_at(tmpl, at);
    if (!p.name.empty() && !value_of(p.name, PrefixMacros{}))
      return "unknown macro '" + tmpl.substr(at, p.length) + "' (use ${role_name}, ${local_rank}, ${rank}, ${hostname})";
    at += p.length - 1;
  }
  return std::nullopt;
}

std::string render_prefix(const std::string& tmpl, const PrefixMacros& macros) {
  std::string out;
  size_t at = 0;
  while (at < tmpl.size()) {
    if (tmpl[at] != '$') {
      out += tmpl[at++];
      continue;
    }
    const Placeholder p = placeholder_at(tmpl, at);
    const auto value = p.name.empty() ? std::nullopt : value_of(p.name, macros);
    if (p.escaped_dollar) out += '$';
    else if (value) out += *value;
    else out += tmpl.substr(at, p.length);
    at += p.length;
  }
  return out;
}

}  // namespace kubedist::launcher
