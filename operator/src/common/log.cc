#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "common/utf8.h"

namespace kubedist {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }

bool parse_log_level(const std::string& s, LogLevel* out) {
  if (s == "debug") *out = LogLevel::kDebug;
  else if (s == "info") *out = LogLevel::kInfo;
  else if (s == "warn" || s == "warning") *out = LogLevel::kWarn;
  else if (s == "error") *out = LogLevel::kError;
  else return false;
  return true;
}

void log(LogLevel level, const std::string& component, const std::string& message) {
  if (static_cast<int>(level) < g_level) return;
  static const char* names[] = {"debug", "info", "warn", "error"};
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  // One fprintf per line keeps lines whole across threads.
  // Messages quote workers and API answers: a log collector that reads lines as UTF-8 gets valid text.
  std::string escaped;
  for (char c : valid_utf8(message)) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c == '\n' ? ' ' : c;
  }
  std::fprintf(stderr, "%s.%03dZ level=%s component=%s msg=\"%s\"\n", ts, static_cast<int>(ms),
               names[static_cast<int>(level)], component.c_str(), escaped.c_str());
}

}  // namespace kubedist
