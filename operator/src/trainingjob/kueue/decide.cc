#include "trainingjob/kueue/decide.h"

#include <algorithm>

#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {
namespace {

// A queued job's part in decide(), from Kueue's verdict on the job as submitted.
class KueueHook final : public Hook {
 public:
  KueueHook(const KueueFacts& facts, const TrainingJob& job)
      : facts_(facts), admission_(decide_admission(job, facts)), replicas_(job.spec.replicas) {}

  std::optional<int> nodes() const override {
    if (!admitted() || admission_.admitted_count >= replicas_) return std::nullopt;
    return admission_.admitted_count;  // partial admission
  }
  std::optional<Plan> gate(DecideState& s) const override {
    if (!admitted()) return wait_for_admission(s, admission_, facts_);
    note_admission(s, admission_);
    return std::nullopt;
  }
  void suspended(DecideState& s) const override { drop_kueue_workload(s, facts_); }
  void finished(DecideState& s) const override { finish_kueue_workload(s, facts_); }
  void render_pod(const TrainingJob&, nlohmann::json& pod) const override {
    if (admitted()) apply_placement(pod, admission_.placement);  // on the admitted flavors' nodes
  }

 private:
  bool admitted() const { return admission_.state == Admission::State::kAdmitted; }

  const KueueFacts& facts_;
  const Admission admission_;
  const int replicas_;
};

// Workload J, when it is this job's.
const KueueWorkloadFacts* own_workload(const DecideState& s, const KueueFacts& kueue) {
  const auto& wl = kueue.workload;
  return wl && wl->owner_uid == s.job.uid ? &*wl : nullptr;
}

std::string workloads_path(const TrainingJob& job) {
  return kueue_api_path() + "/namespaces/" + job.ns + "/workloads";
}

void delete_workload(DecideState& s) {
  const nlohmann::json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}};
  s.write({Write::Verb::kDelete, "Workload", s.job.name, workloads_path(s.job) + "/" + s.job.name, options});
}

// Conditional on the Workload's resourceVersion: a conflict means Kueue wrote first; the next pass decides again.
void write_status(DecideState& s, const KueueWorkloadFacts& wl, const KueueStatusWrite& write) {
  s.write({Write::Verb::kPatchStatus, "Workload", s.job.name, workloads_path(s.job) + "/" + s.job.name + "/status",
           kueue_status_patch(wl, write, s.now)});
}

}  // namespace

std::unique_ptr<Hook> KueueFacts::hook(const TrainingJob& job) const {
  if (queue_name(job).empty()) return nullptr;
  return std::make_unique<KueueHook>(*this, job);
}

Admission decide_admission(const TrainingJob& job, const KueueFacts& kueue) {
  using State = Admission::State;
  Admission a;
  auto waiting = [&](State state, std::string reason, std::string message) {
    a.state = state;
    a.reason = std::move(reason);
    a.message = std::move(message);
    return a;
  };
  const std::string queue = "LocalQueue " + queue_name(job);
  if (!kueue.api) {
    return waiting(State::kUnavailable, "KueueUnavailable",
                   "the job waits for admission by " + queue + ", but the operator sees no Kueue (" +
                       kKueueApiVersion + " Workloads, ResourceFlavors and WorkloadPriorityClasses, or its RBAC " +
                       "to them); it runs once Kueue is installed and the operator restarted");
  }
  if (kueue.workload && kueue.workload->owner_uid != job.uid) {
    return waiting(State::kConflict, "WorkloadConflict",
                   "Kueue Workload " + job.name + " exists but is not this job's: delete it or rename the job");
  }
  const int min_count = job.spec.min_replicas < job.spec.replicas ? job.spec.min_replicas : 0;
  if (!kueue.workload) {
    if (const std::string wanted = priority_class(job); !wanted.empty()) {
      for (const auto& p : kueue.priorities) {
        if (p.name == wanted) a.priority = p;
      }
      if (!a.priority) {
        return waiting(State::kWaiting, "PriorityClassNotFound",
                       "WorkloadPriorityClass " + wanted + " (label " + kPriorityClassLabel +
                           ") does not exist; the job is queued once it does");
      }
    }
    return waiting(State::kCreate, "Queued", "waiting for admission by " + queue);
  }
  const KueueWorkloadFacts& wl = *kueue.workload;
  if (wl.finished) {
    // Finished by Kueue (e.g. it could not start) or by an earlier operator: the job cannot be admitted again.
    return waiting(State::kRecreate, "WorkloadFinished", "Workload " + wl.name + " is finished; queueing anew");
  }
  if (wl.evicted && (wl.quota_reserved || wl.admitted)) {
    return waiting(State::kEvicted, wl.reason.empty() ? "Evicted" : wl.reason,
                   "Kueue evicted the job" + (wl.message.empty() ? std::string() : ": " + wl.message));
  }
  if (wl.count != job.spec.replicas || wl.min_count != min_count || wl.queue_name != queue_name(job)) {
    return waiting(State::kRecreate, "SpecChanged",
                   "the job's size or queue changed (Workload asks for " + std::to_string(wl.count) + " nodes in " +
                       wl.queue_name + "); queueing it anew");
  }
  if (!wl.admitted) {
    std::string message = "waiting for admission by " + queue;
    if (!wl.message.empty()) message += ": " + wl.message;
    return waiting(State::kWaiting, wl.reason.empty() ? "Queued" : wl.reason, message);
  }
  std::vector<std::string> missing;
  for (const auto& name : wl.flavors) {
    auto it = std::find_if(kueue.flavors.begin(), kueue.flavors.end(),
                           [&](const FlavorFacts& f) { return f.name == name; });
    if (it == kueue.flavors.end()) {
      missing.push_back(name);
      continue;
    }
    for (const auto& [k, v] : it->node_labels) a.placement.node_selector[k] = v;
    for (const auto& t : it->tolerations) a.placement.tolerations.push_back(t);
  }
  if (!missing.empty()) {
    return waiting(State::kWaiting, "FlavorNotFound",
                   "admitted on ResourceFlavor " + join_names(missing) + ", which the operator does not see (yet)");
  }
  a.state = State::kAdmitted;
  a.admitted_count = std::clamp(wl.admitted_count > 0 ? wl.admitted_count : wl.count, 1, job.spec.replicas);
  a.reason = "Admitted";
  a.message = "admitted by ClusterQueue " + wl.cluster_queue + " (" + std::to_string(a.admitted_count) + " of " +
              std::to_string(job.spec.replicas) + " nodes" +
              (wl.flavors.empty() ? std::string() : ", flavor " + join_names(wl.flavors)) + ")";
  return a;
}

Plan wait_for_admission(DecideState& s, const Admission& a, const KueueFacts& kueue) {
  using State = Admission::State;
  Status& st = s.plan.status;
  std::vector<std::string> names;
  for (const auto& pod : s.live) {
    s.delete_pod(pod);
    names.push_back(pod.name);
  }
  switch (a.state) {
    case State::kCreate:
      s.write({Write::Verb::kCreate, "Workload", s.job.name, workloads_path(s.job),
               render_kueue_workload(s.job, a.priority)});
      break;
    case State::kRecreate: delete_workload(s); break;
    case State::kEvicted:
      // The quota goes back once the pods are gone, so that what preempted the job finds the room free.
      if (s.live.empty() && s.terminating.empty() && kueue.workload) {
        write_status(s, *kueue.workload, {KueueStatusWrite::Kind::kReleaseQuota, a.reason, a.message});
      }
      break;
    default: break;
  }
  const Condition* before = find_condition(st, kAdmitted);
  const bool news = before == nullptr || before->status != "False" || before->reason != a.reason;
  if (news || !names.empty()) {
    const bool trouble = a.state == State::kUnavailable || a.state == State::kConflict ||
                         a.reason == "PriorityClassNotFound" || a.reason == "FlavorNotFound";
    const std::string what = a.state == State::kEvicted ? "Evicted" : trouble ? a.reason : "Queued";
    s.emit(a.state == State::kEvicted || trouble ? "Warning" : "Normal", what,
           names.empty() ? a.message : a.message + "; deleting pods " + join_names(names));
  }
  set_condition(st, kAdmitted, false, a.reason, a.message, s.now);
  set_condition(st, ConditionType::kSuspended, true, "WaitingForAdmission", a.message, s.now);
  if (condition_true(st, ConditionType::kRunning)) set_condition(st, ConditionType::kRunning, false, a.reason, a.message, s.now);
  st.phase = JobPhase::kSuspended;
  st.start_time = "";  // activeDeadlineSeconds counts from the admission
  observe_pods(st, s.spec, s.live);
  return std::move(s.plan);
}

void note_admission(DecideState& s, const Admission& a) {
  Status& st = s.plan.status;
  if (!condition_true(st, kAdmitted)) s.emit("Normal", "Admitted", a.message);
  set_condition(st, kAdmitted, true, a.reason, a.message, s.now);
  if (condition_true(st, ConditionType::kSuspended)) {
    set_condition(st, ConditionType::kSuspended, false, "Admitted", a.message, s.now);
  }
}

void finish_kueue_workload(DecideState& s, const KueueFacts& kueue) {
  const KueueWorkloadFacts* wl = own_workload(s, kueue);
  if (wl == nullptr || wl->finished) return;
  const Status& st = s.plan.status;
  const bool success = st.phase == JobPhase::kSucceeded;
  const Condition* c = find_condition(st, success ? ConditionType::kSucceeded : ConditionType::kFailed);
  write_status(s, *wl,
               {KueueStatusWrite::Kind::kFinish, success ? "Succeeded" : "Failed",
                c != nullptr && !c->message.empty() ? c->message : std::string("the job ") + to_string(st.phase)});
}

void drop_kueue_workload(DecideState& s, const KueueFacts& kueue) {
  if (own_workload(s, kueue) != nullptr) delete_workload(s);
  Status& st = s.plan.status;
  if (find_condition(st, kAdmitted) != nullptr) {
    set_condition(st, kAdmitted, false, "JobSuspended", "spec.suspend is true", s.now);
  }
}

}  // namespace kubedist::trainingjob
