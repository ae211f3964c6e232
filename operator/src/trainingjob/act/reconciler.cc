#include "trainingjob/act/reconciler.h"

#include "common/log.h"
#include "rendezvous/rdzv_auth.h"
#include "kube/config.h"
#include "trainingjob/api/parse.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

constexpr auto kExpectationTimeout = std::chrono::seconds(30);

std::string jobs_path(const std::string& ns) {
  return std::string("/apis/") + kGroup + "/" + kVersion + "/namespaces/" + ns + "/" + kPlural;
}

}  // namespace

std::string job_key_of(const PodFacts& pod) { return pod.ns + "/" + pod.job_name; }

bool Reconciler::caches_caught_up(const std::string& key, const std::vector<PodFacts>& pods) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = expectations_.find(key);
  if (it == expectations_.end()) return true;
  auto& e = it->second;
  for (auto c = e.creates.begin(); c != e.creates.end();) {
    bool seen = false;
    for (const auto& p : pods) seen = seen || p.name == *c;
    c = seen ? e.creates.erase(c) : std::next(c);
  }
  for (auto d = e.deletes.begin(); d != e.deletes.end();) {
    bool present = false;
    for (const auto& p : pods) present = present || (p.uid == *d && !p.deleting);
    d = present ? std::next(d) : e.deletes.erase(d);
  }
  if ((e.creates.empty() && e.deletes.empty()) || std::chrono::steady_clock::now() - e.since > kExpectationTimeout) {
    expectations_.erase(it);
    return true;
  }
  return false;
}

bool Reconciler::status_caught_up(const std::string& key, const TrainingJob& job) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = written_.find(key);
  if (it == written_.end()) return true;
  const auto& [version, since] = it->second;
  // resourceVersions are etcd revisions: a cache at or past our write's revision has seen it.
  bool seen = job.resource_version == version;
  try {
    seen = seen || std::stoull(job.resource_version) >= std::stoull(version);
  } catch (const std::exception&) {
  }
  if (seen || std::chrono::steady_clock::now() - since > kExpectationTimeout) {
    written_.erase(it);
    return true;
  }
  return false;
}

std::chrono::milliseconds Reconciler::hold_pending(const std::string& key, const Status& before,
                                                  const Status& after, const std::vector<PodFacts>& pods) {
  bool unschedulable = false;
  for (const auto& p : pods) unschedulable = unschedulable || (!p.deleting && !p.unschedulable_since.empty());
  std::lock_guard<std::mutex> lock(mu_);
  return pending_writes_.hold(key, before, after, std::chrono::steady_clock::now(), unschedulable);
}

std::chrono::milliseconds Reconciler::hold_progress(const std::string& key, const Status& before,
                                                   const Status& after) {
  std::lock_guard<std::mutex> lock(mu_);
  return progress_writes_.hold(key, before, after, std::chrono::steady_clock::now());
}

Observed Reconciler::observe(const TrainingJob& job, std::vector<PodFacts> pods, bool service_exists) {
  const std::string key = job.ns + "/" + job.name;
  Observed o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rejected_.find(key);
    if (it != rejected_.end()) {
      const auto& [uid, rejection] = it->second;
      // A job of the same name created anew, or a new spec: the refusal says nothing of it any more.
      if (uid != job.uid || rejection.generation != job.generation) {
        rejected_.erase(it);
      } else {
        o.pod_rejected = rejection;
      }
    }
    auto refused = refused_.find(key);
    if (refused != refused_.end()) {
      if (refused->second.first != job.uid) {
        refused_.erase(refused);  // a job of the same name created anew
      } else {
        o.pod_refused = refused->second.second;
      }
    }
  }
  o.pods = std::move(pods);
  o.service_exists = service_exists;
  if (extras_.namespace_secrets != nullptr) {
    const auto secret = extras_.namespace_secrets->get(job.ns + "/" + kNamespaceRdzvSecret);
    o.namespace_secret_exists = secret.has_value();
    if (RendezvousKeys* keys = extras_.rendezvous_keys) {
      // The key new pods derive from: the Secret's, or the one the operator is about to create. Each is remembered
      // before any pod is rendered for it, so that it can be kept for the job if it is deleted or replaced later.
      bool ok = false;
      const std::string key = secret ? kube::base64_decode(secret->secret_b64, &ok) : std::string();
      if (ok && !key.empty()) {
        o.namespace_key = keys->seen(job.ns, key);
      } else if (!secret) {
        if (auto made = keys->to_create(job.ns)) o.namespace_key = rendezvous::rdzv_key_fingerprint(*made);
      }
      for (const auto& [fingerprint, kept] : keys->all(job.ns)) {
        o.job_secrets[fingerprint] = rendezvous::derive_job_secret(kept, job.uid);
      }
    }
  }
  if (extras_.nodes != nullptr && extras_.nodes->synced()) {
    o.nodes_watched = true;
    o.nodes = extras_.nodes->by_index("");
    confirm_missing_nodes(o);
  }
  if (extras_.launcher) o.launcher = extras_.launcher(key);
  for (const auto& [integration, caches] : extras_.integrations) {
    if (auto facts = integration->observe(job, caches)) o.integrations.push_back(std::move(facts));
  }
  o.pod_options = pod_options_;
  o.unschedulable_grace_s = extras_.unschedulable_grace_s;
  o.node_lost_grace_s = extras_.node_lost_grace_s;
  return o;
}

void Reconciler::confirm_missing_nodes(Observed& o) {
  std::set<std::string> known;
  for (const auto& node : o.nodes) known.insert(node.name);
  for (const auto& pod : o.pods) {
    // A pod that succeeded keeps its verdict whatever became of its node (lost_pods.cc): no need to ask.
    if (pod.node_name.empty() || pod.phase == "Succeeded" || known.count(pod.node_name) != 0) continue;
    known.insert(pod.node_name);
    auto r = client_.get("/api/v1/nodes/" + pod.node_name);
    if (r) {
      o.nodes.push_back(parse_node_facts(*r));  // there after all: the node watch has not shown it yet
    } else if (r.error().kind == Error::Kind::kNotFound) {
      o.nodes_gone.insert(pod.node_name);
    } else {
      log_warn("reconciler", "cannot tell whether node " + pod.node_name + " exists: " + r.error().message);
    }
  }
}

Result<std::string> Reconciler::write_status(const TrainingJob& job, const Status& status) {
  // The resourceVersion makes the server refuse a write based on a stale job (409 Conflict).
  const json patch = {{"metadata", {{"resourceVersion", job.resource_version}}},
                      {"status", status_patch(job.status, status)}};
  auto r = client_.merge_patch(jobs_path(job.ns) + "/" + job.name + "/status", patch);
  if (!r.ok()) return r.error();
  if (metrics_ != nullptr) metrics_->written(job, status);  // job: the version this write replaced
  const auto md = r->value("metadata", json::object());
  return md.is_object() ? md.value("resourceVersion", std::string()) : std::string();
}

std::optional<ReconcileResult> Reconciler::carry_out(const Write& w) {
  switch (w.verb) {
    case Write::Verb::kCreate: {
      auto r = client_.create(w.path, w.body);
      if (r || r.error().kind == Error::Kind::kAlreadyExists) return std::nullopt;
      return ReconcileResult::failed("create " + w.kind + " " + w.name, r.error());
    }
    case Write::Verb::kDelete: {
      auto r = client_.remove(w.path, w.body);
      if (r || r.error().kind == Error::Kind::kNotFound) return std::nullopt;
      return ReconcileResult::failed("delete " + w.kind + " " + w.name, r.error());
    }
    case Write::Verb::kPatchStatus: {
      auto r = client_.merge_patch(w.path, w.body);
      // The object changed since the cache's version: the next pass decides from the newer one.
      if (!r && r.error().kind == Error::Kind::kConflict) return ReconcileResult::requeue_after(std::chrono::seconds(1));
      if (r || r.error().kind == Error::Kind::kNotFound) return std::nullopt;
      return ReconcileResult::failed("update " + w.kind + " " + w.name, r.error());
    }
  }
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::create_namespace_secret(const TrainingJob& job, const kube::ObjectRef& ref) {
  const std::string what = std::string("secret ") + kNamespaceRdzvSecret;
  const std::string collection = "/api/v1/namespaces/" + job.ns + "/secrets";
  // The key this pass's pods were rendered for (RendezvousKeys::to_create), else a new one.
  auto secret = extras_.rendezvous_keys != nullptr ? extras_.rendezvous_keys->to_create(job.ns)
                                                   : rendezvous::new_rdzv_secret();
  if (!secret) return ReconcileResult::failed("create " + what, secret.error());
  auto r = client_.create(collection, render_namespace_rdzv_secret(job.ns, *secret));
  if (r) return std::nullopt;
  if (r.error().kind != Error::Kind::kAlreadyExists) return ReconcileResult::failed("create " + what, r.error());
  // Another job's pass made it first and our cache has not shown it yet, or it is somebody else's Secret.
  auto existing = client_.get(collection + "/" + kNamespaceRdzvSecret);
  if (!existing) return ReconcileResult::failed("read " + what, existing.error());
  const json labels = existing->value("metadata", json::object()).value("labels", json::object());
  if (labels.is_object() && labels.value(kNamespaceRdzvLabel, "") == "namespace") {
    const json data = existing->value("data", json::object());
    bool ok = false;
    const std::string key =
        data.is_object() ? kube::base64_decode(data.value(kRdzvSecretKey, std::string()), &ok) : std::string();
    if (extras_.rendezvous_keys == nullptr || (ok && key == *secret)) return std::nullopt;
    // Another key than the one this pass rendered its pods for: decide again once the cache shows it.
    if (ok && !key.empty()) extras_.rendezvous_keys->seen(job.ns, key);
    return ReconcileResult::requeue_after(std::chrono::seconds(1));
  }
  const std::string why = "Secret " + std::string(kNamespaceRdzvSecret) + " in namespace " + job.ns +
                          " is not the operator's (no label " + kNamespaceRdzvLabel +
                          "=namespace), and the job's pods need the operator's to sign their rendezvous: rename or "
                          "delete that Secret";
  events_.record(ref, "Warning", "RendezvousSecretConflict", why);
  return ReconcileResult::failed(Error::invalid(why));
}

ReconcileResult Reconciler::reconcile(const std::string& key) {
  auto job = jobs_.get(key);
  if (!job) {
    std::lock_guard<std::mutex> lock(mu_);
    expectations_.erase(key);
    pending_writes_.forget(key);
    progress_writes_.forget(key);
    // Gone from the cache: deleted (the informer's delete event brought us here).
    if (metrics_ != nullptr) {
      const auto slash = key.find('/');
      metrics_->forget(key.substr(0, slash), key.substr(slash + 1));
    }
    written_.erase(key);
    rejected_.erase(key);
    refused_.erase(key);
    return ReconcileResult::done();
  }
  if (metrics_ != nullptr) metrics_->seen(*job);
  const std::vector<PodFacts> pods = pods_.by_index(key);
  if (!caches_caught_up(key, pods) || !status_caught_up(key, *job)) {
    // The watch event for our own write will bring us back; the timeout covers a lost event.
    return ReconcileResult::requeue_after(std::chrono::seconds(2));
  }
  const auto svc = services_.get(key);
  const bool service_exists = svc.has_value();
  const Observed observed = observe(*job, pods, service_exists);
  const Plan plan = decide(*job, observed, now_unix());
  const kube::ObjectRef ref{kApiVersion, kKind, job->ns, job->name, job->uid};

  const std::string ns_path = "/api/v1/namespaces/" + job->ns;
  // The objects a job's pods rely on, each created when absent; AlreadyExists means our cache has not shown it yet.
  auto create_if_absent = [&](const std::string& collection, const json& obj, const std::string& what) {
    auto r = client_.create(collection, obj);
    return r || r.error().kind == Error::Kind::kAlreadyExists ? std::optional<ReconcileResult>()
                                                              : ReconcileResult::failed("create " + what, r.error());
  };
  if (plan.create_namespace_secret) {
    // Created once per namespace: while it exists it is never replaced, so running launchers and the poller keep
    // agreeing on every job's secret.
    if (auto e = create_namespace_secret(*job, ref)) return *e;
  }
  if (plan.create_service) {
    if (auto e = create_if_absent(ns_path + "/services", render_service(*job), "service " + job->name)) return *e;
  }
  // The integrations' objects first (a gang's PodGroup before its pods), each a write that must succeed.
  for (const Write& w : plan.writes) {
    if (w.kind == "Pod") continue;
    if (auto e = carry_out(w)) return *e;
  }
  // A vanished pod's count is stored before its replacement is created: the job's status still says Running, so a
  // pass that stopped between the create and the write would find every pod present and the loss forgotten. Once
  // written (phase Restarting), a pass that stops before the create recreates the pod without counting it again.
  bool status_written = false;
  if (plan.status_before_creates && !plan.create_ranks.empty() && !(plan.status == job->status)) {
    auto r = write_status(*job, plan.status);
    if (!r && r.error().kind == Error::Kind::kConflict) return ReconcileResult::requeue_after(std::chrono::seconds(1));
    if (!r && r.error().kind != Error::Kind::kNotFound) {
      return ReconcileResult::failed("update status of " + key, r.error());
    }
    if (r) {
      status_written = true;
      std::lock_guard<std::mutex> lock(mu_);
      progress_writes_.written(key, std::chrono::steady_clock::now());
      if (!r->empty()) written_[key] = {*r, std::chrono::steady_clock::now()};
    }
  }
  Expectations expect;
  std::optional<ReconcileResult> first_error;
  std::optional<PodRejection> rejected;
  std::optional<PodRefusal> refused;
  for (const Write& pod : plan.writes) {
    if (pod.kind != "Pod") continue;
    auto r = client_.create(pod.path, pod.body);
    if (r.ok() || r.error().kind == Error::Kind::kAlreadyExists) {
      expect.creates.insert(pod.name);
      continue;
    }
    if (r.error().kind == Error::Kind::kUnprocessable || r.error().kind == Error::Kind::kInvalid ||
        r.error().http_status == 400) {
      // Every pod renders from the same template: the others would be refused too.
      rejected = PodRejection{pod.name, r.error().message, job->generation};
      break;
    }
    if (r.error().kind == Error::Kind::kForbidden) {
      // Admission (Pod Security, a quota, a webhook) or RBAC: the next pods would be refused alike, and retrying at
      // once would only repeat the refusal.
      const int attempts = observed.pod_refused ? observed.pod_refused->attempts + 1 : 1;
      refused = PodRefusal{pod.name, r.error().message, attempts, now_unix() + refused_create_backoff_s(attempts)};
      break;
    }
    if (!first_error) first_error = ReconcileResult::failed("create pod " + pod.name, r.error());
  }
  const auto remember_expected = [&] {
    if (expect.creates.empty() && expect.deletes.empty()) return;
    expect.since = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    expectations_[key] = std::move(expect);
  };
  if (rejected || refused) {
    // A fact for decide(), which fails the job for a rejection and holds its creates after a refusal: the rest of
    // this plan was made without it (it may claim the pods created), so it is dropped and the job reconciled again
    // at once.
    remember_expected();
    std::lock_guard<std::mutex> lock(mu_);
    if (rejected) rejected_[key] = {job->uid, *rejected};
    if (refused) refused_[key] = {job->uid, *refused};
    return ReconcileResult::requeue_after(std::chrono::milliseconds(0));
  }
  if (observed.pod_refused && !plan.creates_held && first_error == std::nullopt) {
    // Every pod this plan wanted was created (or none is missing any more): the refusal is over.
    std::lock_guard<std::mutex> lock(mu_);
    refused_.erase(key);
  }
  for (const auto& e : plan.events) events_.record(ref, e.type, e.reason, e.message);

  // The status is written before any pod is deleted: a deleted pod is gone from what the next pass sees, so a
  // restart counted for it (a failure, a loss) must be stored first. A pass that stops in between (a conflict, a
  // crash, a lost lease) leaves the pod in place, and status.failedPods/lostPods keep it from counting twice.
  std::chrono::milliseconds held_back{0};
  if (!status_written && !(plan.status == job->status) &&
      (held_back = hold_pending(key, job->status, plan.status, pods)).count() == 0 &&
      (held_back = hold_progress(key, job->status, plan.status)).count() == 0) {
    auto r = write_status(*job, plan.status);
    if (!r && r.error().kind == Error::Kind::kConflict) {
      // The job changed since the cache's version (a spec edit, a label): the next pass decides from the newer
      // version, which the job's watch event usually brings first; the timer covers a slow watch.
      remember_expected();  // the pods created above
      return ReconcileResult::requeue_after(std::chrono::seconds(1));
    }
    if (!r && r.error().kind != Error::Kind::kNotFound) {
      remember_expected();
      return ReconcileResult::failed("update status of " + key, r.error());
    }
    if (r) {
      std::lock_guard<std::mutex> lock(mu_);
      progress_writes_.written(key, std::chrono::steady_clock::now());
      if (!r->empty()) written_[key] = {*r, std::chrono::steady_clock::now()};
    }
  }
  for (const auto& d : plan.delete_pods) {
    json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", {{"uid", d.uid}}}};
    if (d.force) options["gracePeriodSeconds"] = 0;  // the node is gone: no kubelet will confirm the deletion
    auto r = client_.remove(ns_path + "/pods/" + d.name, options);
    if (r.ok() || r.error().kind == Error::Kind::kNotFound || r.error().kind == Error::Kind::kConflict) {
      expect.deletes.insert(d.uid);
    } else if (!first_error) {
      first_error = ReconcileResult::failed("delete pod " + d.name, r.error());
    }
  }
  remember_expected();
  if (plan.delete_job) {
    const json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"},
                          {"preconditions", {{"uid", job->uid}}}};
    auto r = client_.remove(jobs_path(job->ns) + "/" + job->name, options);
    if (!r && r.error().kind != Error::Kind::kNotFound) {
      return ReconcileResult::failed("delete job " + key, r.error());
    }
  }
  if (first_error) return *first_error;
  std::chrono::milliseconds after = held_back;
  if (plan.requeue_after_s) {
    const std::chrono::milliseconds timer = std::chrono::seconds(*plan.requeue_after_s);
    after = after.count() == 0 ? timer : std::min(after, timer);
  }
  if (after.count() > 0) return ReconcileResult::requeue_after(after);
  return ReconcileResult::done();
}

}  // namespace kubedist::trainingjob
