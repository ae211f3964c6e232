// Wall-clock instants as Kubernetes writes them (RFC 3339, UTC, whole seconds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kubedist {

using UnixSeconds = int64_t;

UnixSeconds now_unix();
std::string format_rfc3339(UnixSeconds t);  // 2026-01-02T03:04:05Z
std::optional<UnixSeconds> parse_rfc3339(const std::string& s);  // accepts fractional seconds and Z / ±hh:mm

}  // namespace kubedist
