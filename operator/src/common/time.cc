#include "common/time.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace kubedist {

UnixSeconds now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string format_rfc3339(UnixSeconds t) {
  // RFC 3339 has four digits of year, and the CRD's date-time format refuses anything else on every write: a time
  // computed from a bad age still gives one it takes.
  constexpr UnixSeconds kFirst = -30'610'224'000;  // 1000-01-01T00:00:00Z (strftime pads no year below)
  constexpr UnixSeconds kLast = 253'402'300'799;   // 9999-12-31T23:59:59Z
  std::time_t tt = static_cast<std::time_t>(std::clamp(t, kFirst, kLast));
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<UnixSeconds> parse_rfc3339(const std::string& s) {
  int y, mo, d, h, mi, sec;
  int n = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19) {
    return std::nullopt;
  }
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  }
  long offset = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i + 6 == s.size() && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(s.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    offset = (s[i] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != s.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return static_cast<UnixSeconds>(timegm(&tm)) - offset;
}

}  // namespace kubedist
