// Structured logs: one line per event, "time level component message", to stderr.
#pragma once

#include <string>

namespace kubedist {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void set_log_level(LogLevel level);
bool parse_log_level(const std::string& s, LogLevel* out);
void log(LogLevel level, const std::string& component, const std::string& message);

inline void log_debug(const std::string& c, const std::string& m) { log(LogLevel::kDebug, c, m); }
inline void log_info(const std::string& c, const std::string& m) { log(LogLevel::kInfo, c, m); }
inline void log_warn(const std::string& c, const std::string& m) { log(LogLevel::kWarn, c, m); }
inline void log_error(const std::string& c, const std::string& m) { log(LogLevel::kError, c, m); }

}  // namespace kubedist
