#include "trainingjob/decide/rendezvous.h"

#include "trainingjob/decide/status.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

// Creates Secret J-rdzv holding the job's secret (before the plan's pods and status: act writes the others first).
void write_job_rdzv_secret(DecideState& s, const std::string& secret) {
  s.write({Write::Verb::kCreate, "Secret", rdzv_secret_name(s.job.name), "/api/v1/namespaces/" + s.job.ns + "/secrets",
           render_job_rdzv_secret(s.job, secret)});
}

}  // namespace

void decide_rendezvous_secret(DecideState& s) {
  Status& st = s.plan.status;
  const std::string own = rdzv_secret_name(s.job.name);
  // A job an earlier operator gave a Secret of its own keeps it while a pod of it runs: its launchers sign with it.
  // (The operator reads no Secret but the namespace's, so whether J-rdzv exists is told by the pods that mount it,
  // or by the status where the operator moved the job to one.)
  bool own_secret = on_own_rdzv_secret(s);
  // The running pod of lowest rank (node 0 when it runs) whose init container derived its secret from a namespace
  // key: the key new pods must derive the same secret from. Pending pods have not derived theirs yet.
  const PodFacts* running = nullptr;
  for (const auto& pod : s.live) {
    if (!pod.rdzv_secret || pod.job_rdzv_secret || pod.rdzv_key.empty() || pod.phase != "Running") continue;
    if (running == nullptr || pod.rank < running->rank) running = &pod;
  }
  if (!st.rendezvous_key_lost.empty() && (running == nullptr || running->rdzv_key != st.rendezvous_key_lost)) {
    st.rendezvous_key_lost.clear();  // no pod derives from the lost key any more
  }
  if (!own_secret && running != nullptr && !s.obs.namespace_key.empty() && running->rdzv_key != s.obs.namespace_key) {
    const std::string what = std::string("Secret ") + kNamespaceRdzvSecret + " in namespace " + s.job.ns + " was " +
                             (s.obs.namespace_secret_exists ? "replaced" : "deleted") + " while the job ran";
    if (auto kept = s.obs.job_secrets.find(running->rdzv_key); kept != s.obs.job_secrets.end()) {
      // Written before the pods and the status (act: the plan's other writes first), so that no new pod mounts a
      // Secret that does not exist and no status names one.
      write_job_rdzv_secret(s, kept->second);
      st.rendezvous_secret = own;
      st.rendezvous_secret_key = running->rdzv_key;
      st.rendezvous_key_lost.clear();
      own_secret = true;
      s.emit("Warning", kRendezvousSecretChanged,
             what + ": its running pods keep the key they derived their secret from (fingerprint " +
                 running->rdzv_key + "), which the operator kept for the job in Secret " + own +
                 "; its new pods mount that one and join them. New jobs use the namespace's new key");
    } else if (st.rendezvous_key_lost != running->rdzv_key) {
      st.rendezvous_key_lost = running->rdzv_key;
      s.emit("Warning", kRendezvousSecretChanged,
             what + " and the operator never saw the key its running pods derived their secret from (fingerprint " +
                 running->rdzv_key + "; it changed while no operator ran): new pods derive from the new key and "
                 "cannot join them; delete the job's pods to restart it on the new key");
    }
  }
  s.plan.job_rdzv_secret = own_secret;
  if (const auto kept = s.obs.job_secret_fingerprints.find(st.rendezvous_secret_key);
      st.rendezvous_secret == own && kept != s.obs.job_secret_fingerprints.end())
    s.job_rdzv_secret_fingerprint = kept->second;
  s.create_namespace_secret = !own_secret && !s.obs.namespace_secret_exists;
}

void keep_job_rdzv_secret(DecideState& s) {
  const Status& st = s.plan.status;
  const std::string own = rdzv_secret_name(s.job.name);
  if (s.plan.create_ranks.empty() || !s.plan.job_rdzv_secret || st.rendezvous_secret != own) return;
  for (const auto& w : s.plan.writes)
    if (w.kind == "Secret" && w.name == own) return;  // written in this pass already
  const auto kept = st.rendezvous_secret_key.empty() ? s.obs.job_secrets.end()
                                                     : s.obs.job_secrets.find(st.rendezvous_secret_key);
  if (kept == s.obs.job_secrets.end()) return;
  // The operator may not read J-rdzv, so it cannot tell whether someone deleted it: it is created again before the
  // pods that mount it, and an AlreadyExists is the usual answer.
  write_job_rdzv_secret(s, kept->second);
}

bool on_own_rdzv_secret(const DecideState& s) {
  if (s.plan.status.rendezvous_secret == rdzv_secret_name(s.job.name)) return true;
  for (const auto& pod : s.live) {
    if (pod.job_rdzv_secret) return true;
  }
  return false;
}

bool hold_for_refused_key(DecideState& s) {
  Status& st = s.plan.status;
  const Condition* before = find_condition(st, ConditionType::kPodsRefused);
  const bool held_before = before != nullptr && before->status == "True" && before->reason == kRendezvousKeyInvalid;
  if (s.obs.namespace_key_refused.empty() || on_own_rdzv_secret(s)) {
    if (held_before) {
      set_condition(st, ConditionType::kPodsRefused, false, "RendezvousKeyValid", "the namespace key is taken", s.now);
    }
    return false;
  }
  const std::string message = "new pods held: " + s.obs.namespace_key_refused;
  if (!held_before) s.emit("Warning", kRendezvousKeyInvalid, message);
  set_condition(st, ConditionType::kPodsRefused, true, kRendezvousKeyInvalid, message, s.now);
  s.plan.creates_held = true;
  return true;
}

}  // namespace kubedist::trainingjob
