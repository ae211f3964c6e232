#include "trainingjob/gang/decide.h"

#include "trainingjob/decide/status.h"
#include "trainingjob/gang/render.h"

namespace kubedist::trainingjob {
namespace {

// A gang-scheduled job's part in decide().
class GangHook final : public Hook {
 public:
  explicit GangHook(const GangFacts& facts) : facts_(facts) {}
  std::optional<Ending> prepare(DecideState& s) const override { return decide_gang_objects(s, facts_); }
  void running(DecideState& s) const override { decide_gang_condition(s, facts_); }
  void render_pod(const TrainingJob& job, nlohmann::json& pod) const override { join_pod_group(job, pod); }

 private:
  const GangFacts& facts_;
};

}  // namespace

std::unique_ptr<Hook> GangFacts::hook(const TrainingJob& job) const {
  if (!gang_min_count(job, by_default)) return nullptr;
  return std::make_unique<GangHook>(*this);
}

std::optional<Ending> decide_gang_objects(DecideState& s, const GangFacts& g) {
  const auto gang = gang_min_count(s.job, g.by_default);
  if (!gang) return std::nullopt;
  if (!g.api) {
    return Ending{false, "GangSchedulingUnavailable", gang_api_unavailable_message()};
  }
  if (g.pod_group && g.pod_group->owner_uid != s.job.uid) {
    return Ending{false, "GangSchedulingConflict",
                  "PodGroup " + s.job.name + " exists but is not this job's: delete it or rename the job"};
  }
  const std::string path = gang_api_path(g.version) + "/namespaces/" + s.job.ns;
  if (!g.pod_group) {
    // The Workload first: the PodGroup names it. Pods may come before the PodGroup is in the scheduler's cache;
    // they wait for it.
    s.write({Write::Verb::kCreate, "Workload", s.job.name, path + "/workloads",
             render_workload(s.job, *gang, g.version)});
    s.write({Write::Verb::kCreate, "PodGroup", s.job.name, path + "/podgroups",
             render_pod_group(s.job, *gang, g.version)});
  } else if (g.pod_group->min_count != *gang) {
    // minReplicas changed; a PodGroup's policy is immutable: the next pass recreates both.
    const nlohmann::json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
    s.write({Write::Verb::kDelete, "PodGroup", s.job.name, path + "/podgroups/" + s.job.name, options});
    s.write({Write::Verb::kDelete, "Workload", s.job.name, path + "/workloads/" + s.job.name, options});
  }
  return std::nullopt;
}

void decide_gang_condition(DecideState& s, const GangFacts& g) {
  if (!g.pod_group || !gang_min_count(s.job, g.by_default)) return;
  const PodGroupFacts& pg = *g.pod_group;
  Status& st = s.plan.status;
  const Condition* before = find_condition(st, kGangScheduled);
  const std::string gang = "the gang of " + std::to_string(pg.min_count) + " pods (minReplicas)";
  if (pg.scheduled == "False") {
    const std::string reason = pg.reason.empty() ? "Unschedulable" : pg.reason;
    const std::string message = gang + " waits: the scheduler cannot place it whole" +
                                (pg.message.empty() ? std::string() : ": " + pg.message);
    if (before == nullptr || before->status != "False" || before->reason != reason) {
      s.emit("Warning", "GangWaiting", message);
    }
    set_condition(st, kGangScheduled, false, reason, message, s.now);
  } else if (pg.scheduled == "True") {
    if (before != nullptr && before->status == "False") s.emit("Normal", "GangScheduled", gang + " was placed");
    set_condition(st, kGangScheduled, true, "Scheduled", gang + " was placed together", s.now);
  }
}

}  // namespace kubedist::trainingjob
