// The ranges the operator holds numbers from outside to before any arithmetic on them: node 0's STATUS line (any
// 18-digit count a launcher, or whoever answers on its port, sends) and a job's status as served (anyone with the
// status subresource can write it).
//
// Why: `step * 100` overflowed int64 for a step of 18 digits, and an age of 10^17 ms put lastStepTime in a year
// before 0000, which the CRD's date-time format refuses: every later status write of the job failed.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "contract/status_line.h"

namespace kubedist::trainingjob {

inline constexpr int64_t kMaxCount = 1'000'000'000'000'000;  // steps, totals, epochs, samples: x100 fits an int64
inline constexpr int64_t kMaxDurationMs = 100LL * 366 * 24 * 3600 * 1000;  // ages and busy times: 100 years
inline constexpr double kMaxRate = 1e9;  // steps a second, step seconds, ratios
inline constexpr int64_t kMaxRestarts = 1'000'000'000;  // restart counts: a launcher's delta added still fits an int

// The most a job's spec.template may hold, in bytes of its JSON (the API server takes 1.5 MB objects): the operator
// keeps one parsed copy per job and renders every pod from it, so a bigger one is refused (InvalidSpec) before it is
// kept. A legitimate pod template is a few KB; large data belongs in a ConfigMap or a volume.
inline constexpr size_t kMaxTemplateBytes = 256 * 1024;

// About how many bytes v takes as JSON (strings and keys at their length, every other value at least 1), counting
// no further than `limit` + 1: enough to tell whether it is over `limit` without writing it out.
size_t json_bytes_up_to(const nlohmann::json& v, size_t limit);

// v clamped to [lo, hi].
int64_t bounded(int64_t v, int64_t lo, int64_t hi);
// v clamped to [0, hi]; a NaN reads as 0.
double bounded(double v, double hi);

// A restart count as read from a status: in [0, kMaxRestarts], 0 when absent or too large for an int64.
int restart_count(std::optional<int64_t> n);

// p with each count in [0, kMaxCount] (-1, "not reported", kept), each age and duration in [0, kMaxDurationMs] and
// each rate in [0, kMaxRate].
contract::StatusProgress bounded(contract::StatusProgress p);

}  // namespace kubedist::trainingjob
