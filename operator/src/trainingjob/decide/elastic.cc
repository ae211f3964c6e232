#include "trainingjob/decide/elastic.h"

#include <algorithm>

#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

constexpr const char* kReasonUnschedulable = "Unschedulable";
constexpr const char* kReasonGrowing = "Growing";

void sooner(std::optional<int64_t>& after, int64_t s) {
  s = std::max<int64_t>(s, 1);
  if (!after || s < *after) after = s;
}

}  // namespace

ElasticDecision elastic_target(const TrainingJob& job, const std::vector<PodFacts>& live_pods,
                               const std::vector<NodeFacts>& nodes, UnixSeconds now, int64_t grace_s) {
  const Spec& spec = job.spec;
  ElasticDecision d;
  d.target = spec.replicas;
  if (spec.min_replicas >= spec.max_replicas) return d;  // not elastic

  const ElasticStatus& cur = job.status.elastic;
  const bool same_spec = cur.target_replicas > 0 && cur.spec_replicas == spec.replicas;
  int target = same_spec ? std::clamp(cur.target_replicas, spec.min_replicas, spec.replicas) : spec.replicas;
  d.status = same_spec ? cur : ElasticStatus{};
  const UnixSeconds last_change = parse_rfc3339(cur.last_change).value_or(now);

  std::vector<std::string> given_up;
  bool any_unschedulable = false;
  std::vector<const PodFacts*> ranked;
  for (const auto& pod : live_pods) {
    if (pod.rank < 0 || pod.rank >= target || pod.name != pod_name(job.name, pod.rank)) continue;
    if (pod.phase != "Pending" || pod.unschedulable_since.empty()) continue;
    any_unschedulable = true;
    const UnixSeconds since = parse_rfc3339(pod.unschedulable_since).value_or(now);
    if (now - since >= grace_s) {
      given_up.push_back(pod.name);
    } else {
      sooner(d.requeue_after_s, since + grace_s - now);
    }
  }
  std::sort(given_up.begin(), given_up.end());

  if (!given_up.empty() && target > spec.min_replicas) {
    const int shrunk = std::max(spec.min_replicas, target - static_cast<int>(given_up.size()));
    std::string names;
    for (const auto& n : given_up) names += (names.empty() ? "" : ", ") + n;
    d.target = shrunk;
    d.changed = true;
    d.status = {shrunk, kReasonUnschedulable, format_rfc3339(now), spec.replicas};
    d.event_reason = "ScaledDown";
    d.event_message = "scaling down to " + std::to_string(shrunk) + " nodes (minReplicas " +
                      std::to_string(spec.min_replicas) + ", spec.replicas " + std::to_string(spec.replicas) +
                      "): " + names + " could not be scheduled for " + std::to_string(grace_s) + "s";
    sooner(d.requeue_after_s, grace_s);
    return d;
  }

  d.target = target;
  if (target < spec.replicas) {
    bool schedulable_node = nodes.empty(), new_capacity = nodes.empty();
    for (const auto& n : nodes) {
      if (!n.ready || n.unschedulable) continue;
      schedulable_node = true;
      new_capacity = new_capacity || parse_rfc3339(n.schedulable_since).value_or(0) >= last_change;  // 1s resolution
    }
    const int64_t waited = now - last_change;
    const int64_t retry_s = new_capacity ? grace_s : grace_s * kGrowRetryGraces;
    if (!any_unschedulable && schedulable_node && waited >= retry_s) {
      d.target = spec.replicas;
      d.changed = true;
      d.status = {spec.replicas, kReasonGrowing, format_rfc3339(now), spec.replicas};
      d.event_reason = "ScalingUp";
      d.event_message = "trying to grow from " + std::to_string(target) + " back to " +
                        std::to_string(spec.replicas) + " nodes";
    } else if (waited < retry_s) {
      sooner(d.requeue_after_s, retry_s - waited);
    } else {
      sooner(d.requeue_after_s, grace_s);
    }
    return d;
  }
  // At spec.replicas: a growth attempt succeeds when every pod runs.
  if (same_spec && cur.reason == kReasonGrowing) {
    int running = 0;
    for (const auto& pod : live_pods) {
      running += pod.rank >= 0 && pod.rank < spec.replicas && pod.phase == "Running" ? 1 : 0;
    }
    if (running == spec.replicas) {
      d.status = ElasticStatus{};
      d.event_reason = "ScaledUp";
      d.event_message = "grew back to " + std::to_string(spec.replicas) + " nodes: all running";
    }
  } else if (!same_spec) {
    d.status = ElasticStatus{};
  }
  return d;
}

}  // namespace kubedist::trainingjob
