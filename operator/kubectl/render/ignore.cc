#include "kubectl/render/ignore.h"

namespace kubedist::kubectl {
namespace {

bool match_at(const std::string& p, size_t pi, const std::string& s, size_t si) {
  while (pi < p.size()) {
    const char c = p[pi];
    if (c == '*') {
      if (pi + 1 < p.size() && p[pi + 1] == '*') {  // "**": any run of characters, '/' included
        size_t next = pi + 2;
        if (next < p.size() && p[next] == '/') {  // "**/": zero or more whole directories
          for (size_t k = si; k <= s.size(); ++k) {
            if ((k == si || s[k - 1] == '/') && match_at(p, next + 1, s, k)) return true;
          }
          return false;
        }
        for (size_t k = si; k <= s.size(); ++k)
          if (match_at(p, next, s, k)) return true;
        return false;
      }
      for (size_t k = si; k <= s.size(); ++k) {
        if (match_at(p, pi + 1, s, k)) return true;
        if (k < s.size() && s[k] == '/') return false;
      }
      return false;
    }
    if (si >= s.size()) return false;
    if (c == '?') {
      if (s[si] == '/') return false;
    } else if (c == '[') {
      size_t end = p.find(']', pi + 2);
      if (end == std::string::npos) {
        if (s[si] != '[') return false;
      } else {
        bool negate = p[pi + 1] == '!' || p[pi + 1] == '^';
        bool found = false;
        for (size_t k = pi + 1 + (negate ? 1 : 0); k < end; ++k) {
          if (k + 2 < end && p[k + 1] == '-') {
            found = found || (s[si] >= p[k] && s[si] <= p[k + 2]);
            k += 2;
          } else {
            found = found || s[si] == p[k];
          }
        }
        if (found == negate || s[si] == '/') return false;
        pi = end;
      }
    } else if (c == '\\' && pi + 1 < p.size()) {
      if (s[si] != p[++pi]) return false;
    } else if (c != s[si]) {
      return false;
    }
    ++pi;
    ++si;
  }
  return si == s.size();
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& text) { return match_at(pattern, 0, text, 0); }

void IgnoreRules::add(const std::string& base, const std::string& text) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    while (!line.empty() && line.back() == ' ' && !(line.size() > 1 && line[line.size() - 2] == '\\')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    Rule r;
    r.base = base;
    if (line[0] == '!') {
      r.negate = true;
      line.erase(0, 1);
    } else if (line[0] == '\\') {
      line.erase(0, 1);
    }
    if (!line.empty() && line.back() == '/') {
      r.dir_only = true;
      line.pop_back();
    }
    if (line.empty()) continue;
    r.anchored = line.find('/') != std::string::npos;
    if (line[0] == '/') line.erase(0, 1);
    r.pattern = line;
    rules_.push_back(std::move(r));
  }
}

bool IgnoreRules::ignored(const std::string& path, bool is_dir) const { return verdict(path, is_dir).value_or(false); }

std::optional<bool> IgnoreRules::verdict(const std::string& path, bool is_dir) const {
  std::optional<bool> result;
  for (const auto& r : rules_) {
    std::string rel = path;
    if (!r.base.empty()) {
      if (path.rfind(r.base + "/", 0) != 0) continue;
      rel = path.substr(r.base.size() + 1);
    }
    if (r.dir_only && !is_dir) continue;
    const auto slash = rel.rfind('/');
    const std::string subject = r.anchored ? rel : (slash == std::string::npos ? rel : rel.substr(slash + 1));
    if (glob_match(r.pattern, subject)) result = !r.negate;
  }
  return result;
}

}  // namespace kubedist::kubectl
