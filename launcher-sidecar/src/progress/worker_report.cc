#include "progress/worker_report.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "contract/status_line.h"

namespace kubedist::launcher {
namespace {

using nlohmann::json;

// A count in JSON: a non-negative integer (1e3 or 2.0 are not).
std::optional<std::int64_t> count_of(const json& v) {
  if (v.is_number_unsigned() && v.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return v.get<std::int64_t>();
  return std::nullopt;
}

}  // namespace

Result<WorkerReport> parse_worker_report(std::string_view datagram) {
  if (datagram.size() > kMaxReportBytes)
    return make_error("a report of " + std::to_string(datagram.size()) + " bytes (at most " +
                      std::to_string(kMaxReportBytes) + ")");
  while (!datagram.empty() && (datagram.back() == '\n' || datagram.back() == '\r')) datagram.remove_suffix(1);
  const json j = json::parse(datagram, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error("a report that is not JSON");
  if (!j.is_object()) return make_error("a report that is no JSON object");
  WorkerReport r;
  const auto step = j.find("step");
  if (const auto armed = j.find("ckpt_armed"); armed != j.end()) {
    if (*armed != 1) return make_error("a report whose \"ckpt_armed\" is not 1: " + armed->dump());
    r.armed = true;
  }
  if (const auto answer = j.find("ckpt_request"); answer != j.end()) {
    if (*answer == "saved") r.answer = WorkerReport::Answer::kSaved;
    else if (*answer == "failed") r.answer = WorkerReport::Answer::kFailed;
    else return make_error("a report whose \"ckpt_request\" is neither \"saved\" nor \"failed\": " +
                           answer->dump().substr(0, 100));
  }
  if (step == j.end() && !j.contains("ckpt_step") && !r.armed)
    return make_error("a report without \"step\"");
  if (step != j.end()) {
    const auto step_count = count_of(*step);
    if (!step_count) return make_error("a report whose \"step\" is no count: " + step->dump());
    r.step = *step_count;
  } else {
    r.has_step = false;
  }
  const std::pair<const char*, std::optional<std::int64_t>*> counts[] = {
      {"total_steps", &r.total_steps}, {"epoch", &r.epoch}, {"samples", &r.samples}};
  for (const auto& [key, slot] : counts) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    *slot = count_of(*it);
    if (!*slot) return make_error(std::string("a report whose \"") + key + "\" is no count: " + it->dump());
  }
  if (const auto it = j.find("step_time"); it != j.end() && it->is_number()) {
    const double t = it->get<double>();
    if (std::isfinite(t) && t > 0) r.step_time = t;
  }
  if (const auto it = j.find("pid"); it != j.end() && it->is_number_integer()) {
    const auto pid = it->get<std::int64_t>();
    if (pid > 1 && pid <= INT32_MAX) r.pid = static_cast<int>(pid);
  }
  if (const auto it = j.find("stack_signal"); it != j.end() && it->is_number_integer()) {
    const auto sig = it->get<std::int64_t>();
    if (sig > 0 && sig < 65) r.stack_signal = static_cast<int>(sig);
  }
  const auto ckpt_step = j.find("ckpt_step"), ckpt_reason = j.find("ckpt_reason"), ckpt_ranks = j.find("ckpt_ranks");
  if (ckpt_step != j.end() || ckpt_reason != j.end() || ckpt_ranks != j.end()) {
    const std::int64_t at = ckpt_step == j.end() ? -1 : count_of(*ckpt_step).value_or(-1);
    const std::int64_t ranks = ckpt_ranks == j.end() ? -1 : count_of(*ckpt_ranks).value_or(-1);
    const std::string reason = ckpt_reason != j.end() && ckpt_reason->is_string() ? ckpt_reason->get<std::string>() : "";
    if (at < 0 || ranks < 1 || ranks > 1000000 || !contract::is_checkpoint_reason(reason)) {
      return make_error("a report whose checkpoint (ckpt_step, ckpt_reason, ckpt_ranks) is not a count, a word of "
                        "[a-z_] and a count of ranks: " + std::string(datagram.substr(0, 200)));
    }
    // A failed request's step is no checkpoint: the answer alone.
    std::int64_t age_ms = 0;  // a checkpoint resumed from says how old it is
    if (const auto age = j.find("ckpt_age_ms"); age != j.end()) {
      const auto count = count_of(*age);
      if (!count || *count > contract::kMaxCheckpointAgeMs)
        return make_error("a report whose \"ckpt_age_ms\" is no count of milliseconds: " + age->dump());
      age_ms = *count;
    }
    if (r.answer != WorkerReport::Answer::kFailed)
      r.checkpoint = contract::StatusCheckpoint{at, reason, static_cast<int>(ranks), age_ms};
  }
  if (r.answer != WorkerReport::Answer::kNone && !r.checkpoint && ckpt_step == j.end())
    return make_error("a report whose \"ckpt_request\" names no step (ckpt_step, ckpt_reason, ckpt_ranks)");
  for (const auto& [key, value] : j.items()) {
    if (r.metrics.size() == kMaxReportMetrics) break;
    if (key == "step" || key == "total_steps" || key == "epoch" || key == "samples" || key == "step_time" ||
        key == "pid" || key == "stack_signal" || key.rfind("ckpt_", 0) == 0 || !value.is_number() ||
        value.is_boolean())
      continue;
    const double v = value.get<double>();
    if (std::isfinite(v) && contract::status_line_detail::is_metric_name(key)) r.metrics[key] = v;
  }
  return r;
}

}  // namespace kubedist::launcher
