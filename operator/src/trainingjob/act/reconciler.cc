#include "trainingjob/act/reconciler.h"

#include "common/log.h"
#include "contract/pod_env.h"
#include "contract/signed_line.h"
#include "rendezvous/rdzv_auth.h"
#include "kube/config.h"
#include "trainingjob/api/json_fields.h"
#include "trainingjob/api/parse.h"
#include "trainingjob/act/launcher_poller.h"
#include "trainingjob/decide/spares.h"
#include "trainingjob/decide/bad_nodes.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

constexpr auto kExpectationTimeout = std::chrono::seconds(30);

// The writes a pass makes before its commit point: every create and the integrations' writes; after it come the
// job's own writes (its status, its deletion) and the pod deletions.
bool before_status(const Write& w) {
  return w.kind != kKind && !(w.kind == "Pod" && w.verb == Write::Verb::kDelete);
}

}  // namespace

json request_body(const Write& w) {
  if (w.precondition.empty()) return w.body;
  json body = w.body.is_object() ? w.body : json::object();
  if (w.verb == Write::Verb::kDelete) body["preconditions"]["uid"] = w.precondition;
  if (w.verb == Write::Verb::kPatchStatus || w.verb == Write::Verb::kMergePatch) {
    body["metadata"]["resourceVersion"] = w.precondition;
  }
  return body;
}

// What one pass has carried out so far.
struct Reconciler::Pass {
  Expectations expect;                         // the pods created and deleted, for the next pass to wait for
  std::optional<ReconcileResult> first_error;  // a pod write that failed; the other pods are independent of it
  std::chrono::milliseconds held_back{0};      // the status write held back this long
  bool creates_through = false;
};

std::string job_key_of(const PodFacts& pod) { return pod.ns + "/" + pod.job_name; }

void Reconciler::pod_deleted(const PodFacts& pod) {
  if (pod.uid.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  while (!deleted_order_.empty() && now - deleted_order_.front().first > kExpectationTimeout) {
    deleted_uids_.erase(deleted_order_.front().second);
    deleted_order_.pop_front();
  }
  if (deleted_uids_.insert(pod.uid).second) deleted_order_.emplace_back(now, pod.uid);
}

bool Reconciler::caches_caught_up(const std::string& key, const std::vector<PodFacts>& pods) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = expectations_.find(key);
  if (it == expectations_.end()) return true;
  auto& e = it->second;
  for (auto c = e.creates.begin(); c != e.creates.end();) {
    const auto& [name, uid] = *c;
    bool seen = !uid.empty() && deleted_uids_.count(uid) != 0;  // created and deleted again already
    for (const auto& p : pods) seen = seen || (uid.empty() ? p.name == name : p.uid == uid);
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

void Reconciler::observe_refusals(const TrainingJob& job, Observed& o) {
  const std::string key = job.ns + "/" + job.name;
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

std::string namespace_key_refusal(const std::string& ns, bool decoded, const std::string& key) {
  const std::string what = std::string("Secret ") + kNamespaceRdzvSecret + " in namespace " + ns;
  const std::string fix = ": replace it with one of " + std::to_string(contract::kMinSecretBytes) + " to " +
                          std::to_string(contract::kMaxSecretBytes) + " bytes, or delete it and the operator makes one";
  if (!decoded) return what + " holds data.secret that is not base64" + fix;
  if (key.size() < contract::kMinSecretBytes || key.size() > contract::kMaxSecretBytes) {
    return what + " holds a key of " + std::to_string(key.size()) + " bytes" + fix;
  }
  return "";
}

Result<void> Reconciler::observe_rendezvous_keys(const TrainingJob& job, Observed& o) {
  if (extras_.namespace_secrets == nullptr) return {};
  const auto secret = extras_.namespace_secrets->get(job.ns + "/" + kNamespaceRdzvSecret);
  o.namespace_secret_exists = secret.has_value();
  RendezvousKeys* keys = extras_.rendezvous_keys;
  if (keys == nullptr) {
    if (secret) return {};
    auto made = rendezvous::new_rdzv_secret();
    if (!made) return made.error();
    o.new_namespace_key = *made;
    return {};
  }
  // The keys an earlier operator kept, before this one makes any decision about them.
  if (extras_.keyring != nullptr) {
    if (auto r = extras_.keyring->load_into(*keys); !r) return r.error();
  }
  // The key new pods derive from: the Secret's, or the one the operator is about to create. Each is remembered
  // (and stored in the keyring) before any pod is rendered for it, so that it can be kept for the job if it is
  // deleted or replaced later, also by an operator started after that.
  bool ok = false;
  const std::string key = secret ? kube::base64_decode(secret->secret_b64, &ok) : std::string();
  if (secret) o.namespace_key_refused = namespace_key_refusal(job.ns, ok, key);
  if (secret && o.namespace_key_refused.empty()) {
    o.namespace_key = keys->seen(job.ns, key);
  } else if (!secret) {
    auto made = keys->to_create(job.ns);
    if (!made) return made.error();
    o.new_namespace_key = *made;
    o.namespace_key = rendezvous::rdzv_key_fingerprint(*made);
  }
  const std::map<std::string, std::string> all = keys->all(job.ns);
  if (extras_.keyring != nullptr) {
    if (auto r = extras_.keyring->keep(job.ns, all); !r) return r.error();
  }
  for (const auto& [fingerprint, kept] : all) {
    o.job_secrets[fingerprint] = rendezvous::derive_job_secret(kept, job.uid);
    o.job_secret_fingerprints[fingerprint] = rendezvous::job_secret_fingerprint(o.job_secrets[fingerprint]);
  }
  return {};
}

Result<Observed> Reconciler::observe(const TrainingJob& job, std::vector<PodFacts> pods, bool service_exists) {
  Observed o;
  observe_refusals(job, o);
  o.pods = std::move(pods);
  o.service_exists = service_exists;
  if (auto r = observe_rendezvous_keys(job, o); !r) return r.error();
  if (extras_.nodes != nullptr && extras_.nodes->synced()) {
    o.nodes_watched = true;
    o.nodes = extras_.nodes->by_index("");
    confirm_missing_nodes(o);
    observe_node_domains(job, o);
  }
  if (extras_.launcher) o.launcher = extras_.launcher(job.ns + "/" + job.name);
  if (extras_.refresh_launcher && member_gone_without_stand_in(job, o.pods, o.launcher)) {
    // The pod went after the last poll; node 0 may be giving its place to a spare right now (a rigid job's member
    // evicted: its launcher left on SIGTERM): decide on its word of now, not on one from before the pod went.
    if (auto now = extras_.refresh_launcher(job.ns + "/" + job.name)) o.launcher = std::move(now);
  }
  if (auto last = final_launcher_report(job, o.pods)) o.launcher = std::move(last);  // newer than any poll
  for (const auto& [integration, caches] : extras_.integrations) {
    if (auto facts = integration->observe(job, caches)) o.integrations.push_back(std::move(facts));
  }
  o.pod_options = pod_options_;
  o.unschedulable_grace_s = extras_.unschedulable_grace_s;
  o.node_lost_grace_s = extras_.node_lost_grace_s;
  o.avoid_node_after_failures = extras_.avoid_node_after_failures;
  o.taint_avoided_nodes = extras_.taint_avoided_nodes;
  o.max_tainted_nodes = extras_.max_tainted_nodes;
  o.node_loss_limit = extras_.node_loss_limit;
  observe_bus_errors(job, o);
  return o;
}

// The job's pods ended by SIGBUS are recorded (before their failure is counted and they are deleted), and every
// namespace whose pods met one on the nodes of this job's pods is read back.
void Reconciler::observe_bus_errors(const TrainingJob& job, Observed& o) {
  NodeSignals* signals = extras_.node_signals;
  if (signals == nullptr) return;
  const UnixSeconds now = now_unix();
  for (const auto& pod : o.pods) {
    if (pod.node_name.empty()) continue;
    if (pod.exit_code == kBusErrorExitCode) {
      signals->record(pod.node_name, job.ns, parse_rfc3339(pod.finished_at).value_or(now));
    }
  }
  for (const auto& pod : o.pods) {
    if (pod.node_name.empty() || o.bus_error_namespaces.count(pod.node_name) != 0) continue;
    auto seen = signals->namespaces(pod.node_name, now);
    if (!seen.empty()) o.bus_error_namespaces.emplace(pod.node_name, std::move(seen));
  }
}

void Reconciler::observe_node_domains(const TrainingJob& job, Observed& o) {
  if (job.spec.topology_key.empty()) return;
  for (const auto& pod : o.pods) {
    if (pod.node_name.empty() || pod.deleting || pod.topology_domain || o.node_domains.count(pod.node_name) != 0 ||
        o.nodes_gone.count(pod.node_name) != 0)
      continue;
    // One GET per pod bound since the last pass (its annotation ends the need): the node cache keeps no labels.
    auto r = api_.get("/api/v1/nodes/" + pod.node_name);
    if (!r) {
      log_warn("reconciler", "cannot read node " + pod.node_name + "'s " + job.spec.topology_key + ": " +
                                 r.error().message);
      continue;
    }
    const json* md = object_at(*r, "metadata");
    const json* labels = md ? object_at(*md, "labels") : nullptr;
    const std::string value = labels ? string_at(*labels, job.spec.topology_key.c_str()) : "";
    o.node_domains[pod.node_name] = value.empty() ? std::string(contract::kNoTopologyDomain) : value;
  }
}

void Reconciler::confirm_missing_nodes(Observed& o) {
  std::set<std::string> known;
  for (const auto& node : o.nodes) known.insert(node.name);
  for (const auto& pod : o.pods) {
    // A pod that succeeded keeps its verdict whatever became of its node (lost_pods.cc): no need to ask.
    if (pod.node_name.empty() || pod.phase == "Succeeded" || known.count(pod.node_name) != 0) continue;
    known.insert(pod.node_name);
    auto r = api_.get("/api/v1/nodes/" + pod.node_name);
    if (r) {
      o.nodes.push_back(parse_node_facts(*r));  // there after all: the node watch has not shown it yet
    } else if (r.error().kind == Error::Kind::kNotFound) {
      o.nodes_gone.insert(pod.node_name);
    } else {
      log_warn("reconciler", "cannot tell whether node " + pod.node_name + " exists: " + r.error().message);
    }
  }
}

std::optional<ReconcileResult> Reconciler::write_status(const TrainingJob& job, const Plan& plan, const Write& w,
                                                        const std::vector<PodFacts>& pods, Pass& pass) {
  const std::string key = job.ns + "/" + job.name;
  if ((pass.held_back = hold_pending(key, job.status, plan.status, pods)).count() > 0 ||
      (pass.held_back = hold_progress(key, job.status, plan.status)).count() > 0) {
    return std::nullopt;
  }
  auto r = api_.merge_patch(w.path, request_body(w));
  if (!r) {
    // The job changed since the cache's version (a spec edit, a label): the next pass decides from the newer
    // version, which the job's watch event usually brings first; the timer covers a slow watch.
    if (r.error().kind == Error::Kind::kConflict) return ReconcileResult::requeue_after(std::chrono::seconds(1));
    if (r.error().kind == Error::Kind::kNotFound) return std::nullopt;
    return ReconcileResult::failed("update status of " + key, r.error());
  }
  if (metrics_ != nullptr) metrics_->written(job, plan.status);  // job: the version this write replaced
  const std::string version = string_at(object_or_empty(*r, "metadata"), "resourceVersion");
  std::lock_guard<std::mutex> lock(mu_);
  progress_writes_.written(key, std::chrono::steady_clock::now());
  if (!version.empty()) written_[key] = {version, std::chrono::steady_clock::now()};
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::create_pod(const TrainingJob& job, const Observed& observed,
                                                      const Write& w, Pass& pass) {
  auto r = api_.create(w.path, w.body);
  if (r.ok()) {
    pass.expect.creates[w.name] = string_at(object_or_empty(*r, "metadata"), "uid");
    return std::nullopt;
  }
  const Error& e = r.error();
  if (e.kind == Error::Kind::kAlreadyExists) {
    pass.expect.creates[w.name] = "";  // some pod of that name: the cache will show it
    return std::nullopt;
  }
  // A fact for decide(), which fails the job for a rejection and holds its creates after a refusal: the rest of
  // this plan was made without it (it may claim the pods created), so it is dropped and the job reconciled again
  // at once.
  const std::string key = job.ns + "/" + job.name;
  if (e.kind == Error::Kind::kUnprocessable || e.kind == Error::Kind::kInvalid || e.http_status == 400) {
    // Every pod renders from the same template: the others would be refused too.
    std::lock_guard<std::mutex> lock(mu_);
    rejected_[key] = {job.uid, PodRejection{w.name, e.message, job.generation}};
    return ReconcileResult::requeue_after(std::chrono::milliseconds(0));
  }
  if (e.kind == Error::Kind::kForbidden) {
    // Admission (Pod Security, a quota, a webhook) or RBAC: the next pods would be refused alike, and retrying at
    // once would only repeat the refusal.
    const int attempts = observed.pod_refused ? observed.pod_refused->attempts + 1 : 1;
    std::lock_guard<std::mutex> lock(mu_);
    refused_[key] = {job.uid, PodRefusal{w.name, e.message, attempts, now_unix() + refused_create_backoff_s(attempts)}};
    return ReconcileResult::requeue_after(std::chrono::milliseconds(0));
  }
  if (!pass.first_error) pass.first_error = ReconcileResult::failed("create pod " + w.name, e);
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::delete_pod(const Write& w, Pass& pass) {
  auto r = api_.remove(w.path, request_body(w));
  // A Conflict: the uid precondition failed, the pod of that name is a newer one, which stays.
  if (r.ok() || r.error().kind == Error::Kind::kNotFound || r.error().kind == Error::Kind::kConflict) {
    pass.expect.deletes.insert(w.precondition);
  } else if (!pass.first_error) {
    pass.first_error = ReconcileResult::failed("delete pod " + w.name, r.error());
  }
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::create_namespace_secret(const TrainingJob& job, const Write& w) {
  const std::string what = std::string("secret ") + kNamespaceRdzvSecret;
  const std::string ours = string_at(object_or_empty(w.body, "stringData"), kRdzvSecretKey);
  if (ours.empty()) return ReconcileResult::failed(Error{Error::Kind::kOther, "create " + what + ": no key", 0});
  auto r = api_.create(w.path, w.body);
  if (r) return std::nullopt;
  if (r.error().kind != Error::Kind::kAlreadyExists) return ReconcileResult::failed("create " + what, r.error());
  // Another job's pass made it first and our cache has not shown it yet, or it is somebody else's Secret.
  auto existing = api_.get(w.path + "/" + kNamespaceRdzvSecret);
  if (!existing) return ReconcileResult::failed("read " + what, existing.error());
  if (string_at(object_or_empty(object_or_empty(*existing, "metadata"), "labels"), kNamespaceRdzvLabel) ==
      "namespace") {
    bool ok = false;
    const std::string theirs =
        kube::base64_decode(string_at(object_or_empty(*existing, "data"), kRdzvSecretKey), &ok);
    if (extras_.rendezvous_keys == nullptr || (ok && theirs == ours)) return std::nullopt;
    // Another key than the one this pass rendered its pods for: decide again once the cache shows it.
    if (ok && !theirs.empty()) extras_.rendezvous_keys->seen(job.ns, theirs);
    return ReconcileResult::requeue_after(std::chrono::seconds(1));
  }
  const std::string why = "Secret " + std::string(kNamespaceRdzvSecret) + " in namespace " + job.ns +
                          " is not the operator's (no label " + kNamespaceRdzvLabel +
                          "=namespace), and the job's pods need the operator's to sign their rendezvous: rename or "
                          "delete that Secret";
  events_.record({kApiVersion, kKind, job.ns, job.name, job.uid}, "Warning", "RendezvousSecretConflict", why);
  return ReconcileResult::failed(Error::invalid(why));
}

std::optional<ReconcileResult> Reconciler::carry_out_plain(const Write& w) {
  const std::string what = w.kind + " " + w.name;
  switch (w.verb) {
    case Write::Verb::kCreate: {
      auto r = api_.create_unparsed(w.path, w.body);
      if (r || r.error().kind == Error::Kind::kAlreadyExists) return std::nullopt;
      return ReconcileResult::failed("create " + what, r.error());
    }
    case Write::Verb::kDelete: {
      auto r = api_.remove(w.path, request_body(w));
      if (r || r.error().kind == Error::Kind::kNotFound) return std::nullopt;
      // The precondition failed: the object of that name is a newer one, not the one decided on.
      if (r.error().kind == Error::Kind::kConflict && !w.precondition.empty()) return std::nullopt;
      return ReconcileResult::failed("delete " + what, r.error());
    }
    case Write::Verb::kPatchStatus: {
      auto r = api_.merge_patch(w.path, request_body(w));
      // The object changed since the cache's version: the next pass decides from the newer one.
      if (!r && r.error().kind == Error::Kind::kConflict) return ReconcileResult::requeue_after(std::chrono::seconds(1));
      if (r || r.error().kind == Error::Kind::kNotFound) return std::nullopt;
      return ReconcileResult::failed("update " + what, r.error());
    }
    case Write::Verb::kMergePatch: {
      auto r = api_.merge_patch(w.path, request_body(w));
      if (!r && r.error().kind == Error::Kind::kConflict) return ReconcileResult::requeue_after(std::chrono::seconds(1));
      if (!r && r.error().kind != Error::Kind::kNotFound) log_warn("reconciler", "update " + what + ": " + r.error().message);
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::carry_out(const TrainingJob& job, const Observed& observed,
                                                     const Plan& plan, const Write& w, Pass& pass) {
  if (w.kind == kKind && w.name == job.name && w.verb == Write::Verb::kPatchStatus) {
    return write_status(job, plan, w, observed.pods, pass);
  }
  // A pod's create and delete are expected by the next pass; any other write of a pod (its topology-domain
  // annotation) is a plain one.
  if (w.kind == "Pod" && w.verb == Write::Verb::kCreate) return create_pod(job, observed, w, pass);
  if (w.kind == "Pod" && w.verb == Write::Verb::kDelete) return delete_pod(w, pass);
  if (w.kind == "Secret" && w.name == kNamespaceRdzvSecret && w.verb == Write::Verb::kCreate) {
    return create_namespace_secret(job, w);
  }
  return carry_out_plain(w);
}

void Reconciler::creates_through(const TrainingJob& job, const Observed& observed, const Plan& plan, Pass& pass) {
  pass.creates_through = true;
  if (observed.pod_refused && !plan.creates_held && !pass.first_error) {
    // Every pod this plan wanted was created (or none is missing any more): the refusal is over.
    std::lock_guard<std::mutex> lock(mu_);
    refused_.erase(job.ns + "/" + job.name);
  }
  const kube::ObjectRef ref{kApiVersion, kKind, job.ns, job.name, job.uid};
  for (const auto& e : plan.events) events_.record(ref, e.type, e.reason, e.message);
}

void Reconciler::remember_expected(const std::string& key, Expectations expect) {
  if (expect.creates.empty() && expect.deletes.empty()) return;
  expect.since = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  expectations_[key] = std::move(expect);
}

ReconcileResult Reconciler::act(const TrainingJob& job, const Observed& observed, const Plan& plan) {
  Pass pass;
  std::optional<ReconcileResult> stopped;
  for (const Write& w : plan.writes) {
    if (!pass.creates_through && !before_status(w)) creates_through(job, observed, plan, pass);
    if ((stopped = carry_out(job, observed, plan, w, pass))) break;
  }
  if (!stopped && !pass.creates_through) creates_through(job, observed, plan, pass);
  remember_expected(job.ns + "/" + job.name, std::move(pass.expect));
  if (!stopped) send_releases(job, plan.releases);
  if (stopped) return *stopped;
  if (pass.first_error) return *pass.first_error;
  std::chrono::milliseconds after = pass.held_back;
  if (plan.requeue_after_s) {
    const std::chrono::milliseconds timer = std::chrono::seconds(*plan.requeue_after_s);
    after = after.count() == 0 ? timer : std::min(after, timer);
  }
  if (after.count() > 0) return ReconcileResult::requeue_after(after);
  return ReconcileResult::done();
}

void Reconciler::send_releases(const TrainingJob& job, const std::vector<RendezvousRelease>& releases) {
  if (!extras_.release || releases.empty()) return;
  const std::string key = job.ns + "/" + job.name;
  for (const RendezvousRelease& r : releases) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (released_[key].count(r.pod_uid) != 0) continue;
    }
    const std::string why = contract::to_string(r.notice.why);
    auto answer = extras_.release(key, r.notice);
    if (!answer) {
      log_warn("reconciler", key + ": telling node 0 that pod " + r.pod + "'s node goes away: " + answer.error().message);
      continue;
    }
    if (!answer->released) {  // no spare waits ready (yet): the next pass asks again
      log_info("reconciler", key + ": node 0 keeps pod " + r.pod + " (node " + r.node + " " + why + "): " + answer->why);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_[key].insert(r.pod_uid);
    }
    const bool spare = is_spare_rank(r.notice.node_rank);
    events_.record({kApiVersion, kKind, job.ns, job.name, job.uid}, "Normal", "NodeGoingAway",
                   "node " + r.node + " of pod " + r.pod + " is going away (" + why + "): " +
                       (spare ? "the spare will not stand in" : "a spare takes its place in the group now"));
  }
}

ReconcileResult Reconciler::forget(const std::string& key) {
  // Gone from the cache: deleted (the informer's delete event brought us here).
  std::lock_guard<std::mutex> lock(mu_);
  expectations_.erase(key);
  pending_writes_.forget(key);
  progress_writes_.forget(key);
  if (metrics_ != nullptr) {
    const auto slash = key.find('/');
    metrics_->forget(key.substr(0, slash), key.substr(slash + 1));
  }
  written_.erase(key);
  rejected_.erase(key);
  refused_.erase(key);
  released_.erase(key);
  return ReconcileResult::done();
}

ReconcileResult Reconciler::reconcile(const std::string& key) {
  auto job = jobs_.get(key);
  if (!job) return forget(key);
  if (metrics_ != nullptr) metrics_->seen(*job);
  std::vector<PodFacts> pods = pods_.by_index(key);
  if (!caches_caught_up(key, pods) || !status_caught_up(key, *job)) {
    // The watch event for our own write will bring us back; the timeout covers a lost event.
    return ReconcileResult::requeue_after(std::chrono::seconds(2));
  }
  auto observed = observe(*job, std::move(pods), services_.get(key).has_value());
  if (!observed) return ReconcileResult::failed("observe " + key, observed.error());
  return act(*job, *observed, decide(*job, *observed, now_unix()));
}

}  // namespace kubedist::trainingjob
