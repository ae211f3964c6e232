#include "trainingjob/decide/plan.h"

#include <set>

#include <algorithm>

#include "trainingjob/decide/failures.h"
#include "trainingjob/decide/launcher.h"
#include "trainingjob/decide/lost_pods.h"
#include "trainingjob/decide/phase.h"
#include "trainingjob/decide/progress.h"
#include "trainingjob/decide/ranks.h"
#include "trainingjob/decide/rendezvous.h"
#include "trainingjob/decide/decide_state.h"
#include "trainingjob/decide/domains.h"
#include "trainingjob/decide/checkpoint.h"
#include "trainingjob/decide/spares.h"
#include "trainingjob/decide/stop.h"
#include "trainingjob/decide/elastic.h"
#include "trainingjob/api/status_json.h"
#include "trainingjob/decide/status.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

// Node 0's pod when its trainer container exited 0. Its launcher hosts the rendezvous: once it exits 0 the group
// has finished the training (the others finish with it, or wait for a host that is gone).
const PodFacts* finished_host(const DecideState& s) {
  for (const auto& pod : s.live) {
    if (pod.rank == 0 && pod.name == pod_name(s.job.name, 0) && pod.phase == "Succeeded") return &pod;
  }
  return nullptr;
}

// How long the other nodes have after node 0 finished to finish on their own (they normally do within moments)
// while they all still run on healthy nodes; a node lost, failed or not ready ends the wait at once (a pod whose
// trainer already exited 0 is not "not ready": it is about to turn Succeeded).
constexpr int64_t kGroupFinishGraceS = 30;

// Whether to wait for the others to finish by themselves: some still run, ready, on a Ready node, and node 0 finished
// less than the grace ago (then the job is asked to come back when it ends).
bool others_still_finishing(DecideState& s, const PodFacts& host) {
  bool running = false;
  for (const auto& pod : s.live) {
    if (&pod == &host || pod.phase == "Succeeded") continue;
    bool node_ready = true;
    for (const auto& node : s.obs.nodes) node_ready = node_ready && !(node.name == pod.node_name && !node.ready);
    node_ready = node_ready && s.obs.nodes_gone.count(pod.node_name) == 0;
    // A trainer that exited 0 is finishing: its pod stays Running, no longer ready, until the kubelet's next
    // status update says Succeeded (a second or so on real nodes).
    const bool exited_0 = pod.exit_code == 0;
    if (pod.phase != "Running" || !(pod.ready || exited_0) || !node_ready) return false;
    running = true;
  }
  if (!running || !s.terminating.empty()) return false;
  const UnixSeconds finished = parse_rfc3339(host.finished_at).value_or(s.now - kGroupFinishGraceS);
  const int64_t left = finished + kGroupFinishGraceS - s.now;
  if (left <= 0) return false;
  s.requeue(left);
  return true;
}

bool all_ranks_succeeded(const DecideState& s, int target) {
  int succeeded = 0;
  for (const auto& pod : s.live) {
    const bool ours = pod.rank >= 0 && pod.rank < target && pod.name == pod_name(s.job.name, pod.rank);
    succeeded += ours && pod.phase == "Succeeded" ? 1 : 0;
  }
  return succeeded == target;
}

// A finished group is a finished job, whatever became of the other nodes meanwhile (lost, failed, still running past
// the grace):
// the job Succeeds; pods still running are stopped, not recreated, and no loss or failure is counted for them.
Plan group_finished(DecideState& s, const PodFacts& host) {
  std::vector<std::string> stopped;
  for (const auto& pod : s.live) {
    if (pod.phase == "Succeeded" || pod.phase == "Failed") continue;
    s.delete_pod(pod, node_lost(s, pod).force);  // forced only where its node is confirmed gone
    stopped.push_back(pod.name);
  }
  // The finishing write carries node 0's last report: progress alone is written at most every 30 s, so without it a
  // finished job would keep showing the step of its last such write (84% on real nodes).
  decide_progress(s, &host);
  if (s.plan.status.progress) s.plan.status.progress->estimated_completion_time.clear();
  std::string message = "node 0 (pod " + host.name + ") finished the training: its launcher, the rendezvous host, exited 0";
  if (!stopped.empty()) message += "; stopping pods " + join_names(stopped);
  return finish(s, {true, "GroupFinished", message});
}

// A job that runs (or is about to): its elastic size, lost pods, ranks, failures, new pods, the launchers'
// restarts, its phase. Each step is a file of its own (decide_*.h); the order matters: every restart is counted
// before the phase says why the job restarts.
Plan active(DecideState& s) {
  const ElasticDecision elastic = elastic_target(s.job, s.live, s.obs.nodes, s.now, s.obs.unschedulable_grace_s);
  const int target = elastic.target;
  s.plan.status.elastic = elastic.status;
  if (!elastic.event_reason.empty()) {
    s.emit(elastic.event_reason == "ScaledDown" ? "Warning" : "Normal", elastic.event_reason, elastic.event_message);
    if (elastic.changed) s.last_reason = kRestartScale;
  }
  if (elastic.requeue_after_s) s.requeue(*elastic.requeue_after_s);
  // Before any loss or failure is counted: nothing the other nodes do after node 0 finished restarts a thing.
  if (const PodFacts* host = finished_host(s);
      host != nullptr && !all_ranks_succeeded(s, target) && !others_still_finishing(s, *host)) {
    return group_finished(s, *host);
  }

  const std::set<std::string> lost_uids = decide_lost_pods(s, target);
  if (const auto ending = node_loss_limit_reached(s)) return finish(s, *ending);
  s.stand_ins = current_stand_ins(s, target);
  const Ranks ranks = decide_ranks(s, target, lost_uids, elastic.changed);
  note_spares(s, ranks);
  s.plan.releases = release_notices(s, ranks);
  checkpoint_before_release(s);
  note_checkpoint_volume(s);
  annotate_domains(s);
  const auto node0 = ranks.by_rank.find(0);
  decide_progress(s, node0 != ranks.by_rank.end() ? node0->second : nullptr);

  bool all_succeeded = static_cast<int>(ranks.by_rank.size()) == target && s.lost.empty();
  for (const auto& [rank, pod] : ranks.by_rank) all_succeeded = all_succeeded && pod->phase == "Succeeded";
  if (all_succeeded) {
    if (s.plan.status.progress) s.plan.status.progress->estimated_completion_time.clear();  // nothing left to wait for
    return finish(s, {true, "AllNodesSucceeded",
                      "all " + std::to_string(target) + " nodes' trainer containers exited 0"});
  }
  const FailureVerdict failures = decide_failures(s, ranks.by_rank);
  if (failures.ending) return finish(s, *failures.ending);

  decide_creates(s, target, ranks, lost_uids, elastic.changed);
  keep_job_rdzv_secret(s);
  fold_launcher(s, node0 != ranks.by_rank.end() ? node0->second : nullptr);
  decide_phase(s, target, ranks, failures, elastic.changed);
  for (const Hook* hook : s.hooks) hook->running(s);
  if (const auto& rejected = s.obs.pod_rejected; rejected && rejected->generation == s.job.generation) {
    // The template passed our checks but not the API server's: a spec error only the server could see. Nothing
    // more is created; the job stays failed until its spec changes (run(): InvalidSpec).
    s.plan.create_ranks.clear();
    return fail_for_spec(s, "the API server rejected pod " + rejected->pod + ": " + rejected->message);
  }
  return std::move(s.plan);
}

Plan run(DecideState& s) {
  const TrainingJob& job = s.job;
  if (job.deleting) return std::move(s.plan);  // garbage collection removes the pods
  Status& st = s.plan.status;
  st.observed_generation = job.generation;
  st.selector = selector_for(job.name);

  if (!job.spec_error.empty()) return fail_for_spec(s, job.spec_error);
  const Condition* failed = find_condition(st, ConditionType::kFailed);
  if (st.phase == JobPhase::kFailed && failed != nullptr && failed->reason == "InvalidSpec") {
    // Failed for its spec (ours or the API server's verdict on its pods): nothing is retried until the user
    // changes the spec; then it starts over instead of staying failed forever.
    if (job.status.observed_generation == job.generation) return finished(s);
    set_condition(st, ConditionType::kFailed, false, "SpecFixed", "the spec is valid again", s.now);
    s.emit("Normal", "SpecFixed", "the spec is valid again; reconciling");
    st.phase = JobPhase::kNone;
    st.completion_time = "";
  }
  if (st.phase == JobPhase::kSucceeded || st.phase == JobPhase::kFailed) return finished(s);
  if (s.spec.suspend) return suspend(s);
  for (const Hook* hook : s.hooks) {
    if (auto held = hook->gate(s)) return std::move(*held);
  }
  if (condition_true(st, ConditionType::kSuspended)) {
    set_condition(st, ConditionType::kSuspended, false, "JobResumed", "spec.suspend is false", s.now);
    s.emit("Normal", "Resumed", "job resumed: recreating its pods");
  }
  if (st.start_time.empty()) st.start_time = format_rfc3339(s.now);
  if (const auto deadline = s.spec.active_deadline_seconds) {
    const UnixSeconds start = parse_rfc3339(st.start_time).value_or(s.now);
    const int64_t left = start + *deadline - s.now;
    if (left <= 0) {
      return finish(s, {false, "DeadlineExceeded",
                        "the job was active longer than activeDeadlineSeconds=" + std::to_string(*deadline)});
    }
    s.plan.requeue_after_s = left;
  }
  s.create_service = !s.obs.service_exists;
  decide_rendezvous_secret(s);
  for (const Hook* hook : s.hooks) {
    if (const auto ending = hook->prepare(s)) return finish(s, *ending);
  }
  return active(s);
}

// The job as it runs on `nodes` (fewer than spec.replicas, as a gate allows): replicas and maxReplicas are capped,
// so that decide() and the pods' NNODES agree on the size.
TrainingJob running_on(const TrainingJob& job, int nodes) {
  TrainingJob capped = job;
  capped.spec.replicas = std::min(job.spec.replicas, nodes);
  capped.spec.max_replicas = std::min(job.spec.max_replicas, capped.spec.replicas);
  capped.spec.min_replicas = std::min(job.spec.min_replicas, capped.spec.replicas);
  return capped;
}

std::string jobs_path(const TrainingJob& job) {
  return std::string("/apis/") + kGroup + "/" + kVersion + "/namespaces/" + job.ns + "/" + kPlural;
}

// The plan's writes in the order the act layer makes them (plan.h): what the pods rely on first, then the pods of
// create_ranks (rendered for the job as it runs, with what each integration adds to them), the status, and the
// deletions last.
void plan_writes(const DecideState& s, Plan& plan) {
  const TrainingJob& job = s.job;
  const std::string ns_path = "/api/v1/namespaces/" + job.ns;
  std::vector<Write> writes;
  if (s.create_namespace_secret) {
    // Created once per namespace: while it exists it is never replaced, so running launchers and the poller keep
    // agreeing on every job's secret.
    writes.push_back({Write::Verb::kCreate, "Secret", kNamespaceRdzvSecret, ns_path + "/secrets",
                      render_namespace_rdzv_secret(job.ns, s.obs.new_namespace_key)});
  }
  if (s.create_service) {
    writes.push_back({Write::Verb::kCreate, "Service", job.name, ns_path + "/services", render_service(job)});
  }
  for (Write& w : plan.writes) writes.push_back(std::move(w));  // the integrations' objects and J-rdzv
  std::optional<Write> status_write;
  if (!(plan.status == job.status)) {
    status_write = Write{Write::Verb::kPatchStatus, kKind, job.name, jobs_path(job) + "/" + job.name + "/status",
                         {{"status", status_patch(job.status, plan.status)}}, job.resource_version};
  }
  // A vanished pod's count is stored before its replacement is created: once the replacement exists nothing shows
  // that the pod was lost, so a pass that stopped between the create and the write would forget the loss.
  if (status_write && plan.status_before_creates && !plan.create_ranks.empty()) {
    writes.push_back(std::move(*status_write));
    status_write.reset();
  }
  PodOptions options = s.obs.pod_options;
  options.job_rdzv_secret = plan.job_rdzv_secret;
  options.rdzv_secret_fingerprint = s.job_rdzv_secret_fingerprint;
  options.rdzv_key = s.obs.namespace_key;
  options.avoided_nodes = plan.status.avoided_nodes;
  for (int rank : plan.create_ranks) {
    nlohmann::json pod = render_pod(job, rank, options);
    for (const Hook* hook : s.hooks) hook->render_pod(job, pod);
    writes.push_back({Write::Verb::kCreate, "Pod", pod_name(job.name, rank), ns_path + "/pods", std::move(pod)});
  }
  if (status_write) writes.push_back(std::move(*status_write));
  for (const PodDeletion& d : plan.delete_pods) {
    nlohmann::json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
    if (d.force) options["gracePeriodSeconds"] = 0;  // the node is gone: no kubelet will confirm the deletion
    writes.push_back({Write::Verb::kDelete, "Pod", d.name, ns_path + "/pods/" + d.name, options, d.uid});
  }
  if (s.delete_job) {
    writes.push_back({Write::Verb::kDelete, kKind, job.name, jobs_path(job) + "/" + job.name,
                      {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}},
                      job.uid});
  }
  plan.writes = std::move(writes);
}

Plan decide_with(const TrainingJob& job, const Observed& observed, UnixSeconds now,
                 const std::vector<std::unique_ptr<Hook>>& hooks) {
  DecideState s(job, observed, now);
  for (const auto& hook : hooks) s.hooks.push_back(hook.get());
  Plan plan = run(s);
  plan_writes(s, plan);
  return plan;
}

}  // namespace

Plan decide(const TrainingJob& job, const Observed& observed, UnixSeconds now) {
  std::vector<std::unique_ptr<Hook>> hooks;
  std::optional<int> nodes;
  if (!job.deleting) {
    for (const auto& integration : observed.integrations) {
      auto hook = integration->hook(job);
      if (!hook) continue;
      if (auto n = hook->nodes(); n && *n < job.spec.replicas) nodes = std::min(nodes.value_or(*n), *n);
      hooks.push_back(std::move(hook));
    }
  }
  // A partial admission: the job runs on the nodes admitted, as if spec.replicas said so.
  if (nodes) return decide_with(running_on(job, *nodes), observed, now, hooks);
  return decide_with(job, observed, now, hooks);
}

Plan decide(const TrainingJob& job, const std::vector<PodFacts>& pods, bool service_exists, UnixSeconds now) {
  Observed observed;
  observed.pods = pods;
  observed.service_exists = service_exists;
  return decide(job, observed, now);
}

}  // namespace kubedist::trainingjob
