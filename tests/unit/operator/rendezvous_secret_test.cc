// A namespace key deleted or replaced while a job runs: the job keeps the key its running pods derived their secret
// from (decide/rendezvous.h, act/rendezvous_keys.h).
#include <gtest/gtest.h>

#include "contract/pod_env.h"
#include "rendezvous/rdzv_auth.h"
#include "test_jobs.h"
#include "test_plans.h"
#include "trainingjob/act/rendezvous_keys.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

constexpr UnixSeconds kNow = 1'800'000'000;
const std::string kOld = rendezvous::rdzv_key_fingerprint("the key the pods started with");
const std::string kNew = rendezvous::rdzv_key_fingerprint("the key that replaced it");

PodFacts derived_pod(int rank, const std::string& phase, const std::string& fingerprint) {
  PodFacts p = testing::example_pod(rank, phase);
  p.rdzv_secret = true;
  p.rdzv_key = fingerprint;
  return p;
}

// The example job (4 nodes): nodes 0 and 1 run on the key kOld, node 2 is gone, node 3 is pending.
Observed running_on_old_key(const std::string& namespace_key, bool exists) {
  Observed o;
  o.service_exists = true;
  o.namespace_secret_exists = exists;
  o.namespace_key = namespace_key;
  o.pod_options.rdzv_secret = true;
  o.pods = {derived_pod(0, "Running", kOld), derived_pod(1, "Running", kOld), derived_pod(3, "Pending", kOld)};
  return o;
}

std::vector<Event> changed_events(const Plan& p) {
  std::vector<Event> out;
  for (const auto& e : p.events) {
    if (e.reason == kRendezvousSecretChanged) out.push_back(e);
  }
  return out;
}

const Write* secret_write(const Plan& p) {
  for (const auto& w : p.writes) {
    if (w.kind == "Secret") return &w;
  }
  return nullptr;
}

const nlohmann::json* pod_write(const Plan& p, const std::string& name) {
  for (const auto& w : p.writes) {
    if (w.kind == "Pod" && w.name == name) return &w.body;
  }
  return nullptr;
}

// The value of the trainer's variable `name` in a pod (empty: none).
std::string trainer_env(const nlohmann::json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] == name) return e.value("value", "");
  }
  return "";
}

TEST(RendezvousSecret, AnUnchangedKeyChangesNothingAndNewPodsRecordIt) {
  Observed o = running_on_old_key(kOld, true);
  o.job_secrets = {{kOld, "job secret from the old key"}};
  const Plan p = decide(testing::example_job(), o, kNow);
  EXPECT_TRUE(changed_events(p).empty());
  EXPECT_EQ(secret_write(p), nullptr);
  EXPECT_FALSE(p.job_rdzv_secret);
  EXPECT_TRUE(p.status.rendezvous_secret.empty());
  const auto* node2 = pod_write(p, "resnet-node-2");
  ASSERT_NE(node2, nullptr);
  EXPECT_EQ((*node2)["metadata"]["annotations"][kRdzvKeyAnnotation], kOld);
  EXPECT_EQ((*node2)["spec"]["initContainers"][0]["command"][4], "/kubedist/rendezvous/secret");
}

TEST(RendezvousSecret, AReplacedKeyIsKeptForTheRunningJobInASecretOfItsOwnThatItsNewPodsMount) {
  Observed o = running_on_old_key(kNew, true);
  o.job_secrets = {{kOld, "job secret from the old key"}, {kNew, "job secret from the new key"}};
  o.job_secret_fingerprints = {{kOld, "0ld0ld0ld0ld0ld0"}, {kNew, "11e111e111e111e1"}};
  const auto job = testing::example_job();
  const Plan p = decide(job, o, kNow);
  const Write* w = secret_write(p);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->verb, Write::Verb::kCreate);
  EXPECT_EQ(w->name, "resnet-rdzv");
  EXPECT_EQ(w->path, "/api/v1/namespaces/" + job.ns + "/secrets");
  EXPECT_EQ(w->body["stringData"]["secret"], "job secret from the old key");  // node 0's, not the new key's
  EXPECT_EQ(w->body["metadata"]["ownerReferences"][0]["uid"], job.uid);
  EXPECT_EQ(w->body["metadata"]["labels"][kJobNameLabel], "resnet");
  EXPECT_EQ(w->body["metadata"]["name"], "resnet-rdzv");
  EXPECT_EQ(p.writes.front().kind, "Secret");  // before the pods that mount it
  EXPECT_EQ(p.status.rendezvous_secret, "resnet-rdzv");
  EXPECT_EQ(p.status.rendezvous_secret_key, kOld);  // to make it again should it be deleted
  EXPECT_TRUE(p.job_rdzv_secret);
  EXPECT_FALSE(testing::writes_named(p, Write::Verb::kCreate, "Secret", kNamespaceRdzvSecret));
  const auto events = changed_events(p);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "Warning");
  EXPECT_NE(events[0].message.find("Secret kubedist-rendezvous in namespace " + job.ns + " was replaced"),
            std::string::npos)
      << events[0].message;
  EXPECT_NE(events[0].message.find("Secret resnet-rdzv"), std::string::npos) << events[0].message;
  EXPECT_EQ(events[0].message.find("job secret"), std::string::npos) << "no secret in an Event";
  // The missing node's new pod mounts the job's own Secret and derives nothing from the namespace key.
  const auto* node2 = pod_write(p, "resnet-node-2");
  ASSERT_NE(node2, nullptr);
  EXPECT_EQ((*node2)["spec"]["initContainers"][0]["command"].size(), 3u);
  bool mounts_own = false;
  for (const auto& v : (*node2)["spec"]["volumes"]) {
    EXPECT_NE(v["name"], kNamespaceRdzvSecret);
    mounts_own = mounts_own || (v["name"] == kRdzvSecretVolume && v["secret"]["secretName"] == "resnet-rdzv");
  }
  EXPECT_TRUE(mounts_own);
  EXPECT_FALSE((*node2)["metadata"].contains("annotations") &&
               (*node2)["metadata"]["annotations"].contains(kRdzvKeyAnnotation));
  // Its launcher is told which secret the operator wrote, and refuses a J-rdzv someone else wrote first.
  EXPECT_EQ(trainer_env(*node2, contract::kRdzvSecretFingerprint), "0ld0ld0ld0ld0ld0");
}

TEST(RendezvousSecret, ADeletedKeyIsKeptForTheRunningJobAndANewOneIsLeftToNewJobs) {
  Observed o = running_on_old_key(kNew, false);  // kNew: the key the operator is about to create
  o.job_secrets = {{kOld, "job secret from the old key"}, {kNew, "job secret from the new key"}};
  const Plan p = decide(testing::example_job(), o, kNow);
  ASSERT_NE(secret_write(p), nullptr);
  EXPECT_EQ(secret_write(p)->body["stringData"]["secret"], "job secret from the old key");
  EXPECT_FALSE(testing::writes_named(p, Write::Verb::kCreate, "Secret", kNamespaceRdzvSecret));  // it needs none; a new job's pass creates it
  const auto events = changed_events(p);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].message.find("was deleted while the job ran"), std::string::npos) << events[0].message;

  // A new job in the namespace gets the new key.
  Observed fresh;
  fresh.namespace_secret_exists = false;
  fresh.namespace_key = kNew;
  fresh.pod_options.rdzv_secret = true;
  const Plan q = decide(testing::example_job(), fresh, kNow);
  EXPECT_TRUE(testing::writes_named(q, Write::Verb::kCreate, "Secret", kNamespaceRdzvSecret));
  EXPECT_TRUE(changed_events(q).empty());
  ASSERT_NE(pod_write(q, "resnet-node-0"), nullptr);
  EXPECT_EQ((*pod_write(q, "resnet-node-0"))["metadata"]["annotations"][kRdzvKeyAnnotation], kNew);
}

TEST(RendezvousSecret, AJobAlreadyMovedToItsOwnSecretIsNotMovedOrToldAgain) {
  Observed o = running_on_old_key(kNew, true);
  o.job_secrets = {{kOld, "job secret from the old key"}};
  auto job = testing::example_job();
  job.status.rendezvous_secret = "resnet-rdzv";
  const Plan p = decide(job, o, kNow);
  EXPECT_EQ(secret_write(p), nullptr);
  EXPECT_TRUE(changed_events(p).empty());
  EXPECT_TRUE(p.job_rdzv_secret);
  EXPECT_EQ(p.status.rendezvous_secret, "resnet-rdzv");
  // Without the key it was derived from (an earlier operator's), the operator cannot say what J-rdzv should hold.
  ASSERT_NE(pod_write(p, "resnet-node-2"), nullptr);
  EXPECT_EQ(trainer_env(*pod_write(p, "resnet-node-2"), contract::kRdzvSecretFingerprint), "");
}

TEST(RendezvousSecret, AJobOnItsOwnSecretHasItMadeAgainBeforeEachNewPodInCaseItWasDeleted) {
  Observed o = running_on_old_key(kNew, true);
  o.job_secrets = {{kOld, "job secret from the old key"}, {kNew, "job secret from the new key"}};
  o.job_secret_fingerprints = {{kOld, "0ld0ld0ld0ld0ld0"}, {kNew, "11e111e111e111e1"}};
  auto job = testing::example_job();
  job.status.rendezvous_secret = "resnet-rdzv";
  job.status.rendezvous_secret_key = kOld;
  // Node 2's pod is missing: resnet-rdzv is created again (the operator cannot read whether it is there) before it.
  const Plan p = decide(job, o, kNow);
  ASSERT_NE(pod_write(p, "resnet-node-2"), nullptr);
  const Write* w = secret_write(p);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->verb, Write::Verb::kCreate);
  EXPECT_EQ(w->name, "resnet-rdzv");
  EXPECT_EQ(w->body["stringData"]["secret"], "job secret from the old key");
  EXPECT_EQ(p.writes.front().kind, "Secret");
  EXPECT_TRUE(changed_events(p).empty());
  EXPECT_EQ(trainer_env(*pod_write(p, "resnet-node-2"), contract::kRdzvSecretFingerprint), "0ld0ld0ld0ld0ld0");
  // No pod to create: no write.
  o.pods.push_back(derived_pod(2, "Running", ""));
  o.pods.back().job_rdzv_secret = true;
  o.pods.back().rdzv_key.clear();
  const Plan none = decide(job, o, kNow);
  EXPECT_TRUE(none.create_ranks.empty());
  EXPECT_EQ(secret_write(none), nullptr);
  // A key the operator does not hold (an earlier operator's J-rdzv): nothing to make it from.
  o.pods.pop_back();
  o.job_secrets = {{kNew, "job secret from the new key"}};
  EXPECT_EQ(secret_write(decide(job, o, kNow)), nullptr);
}

TEST(RendezvousSecret, AKeyTheOperatorNeverSawIsSaidOnceAndNothingIsMadeUp) {
  Observed o = running_on_old_key(kNew, true);
  o.job_secrets = {{kNew, "job secret from the new key"}};  // the operator started after the change
  auto job = testing::example_job();
  const Plan p = decide(job, o, kNow);
  EXPECT_EQ(secret_write(p), nullptr);
  EXPECT_FALSE(p.job_rdzv_secret);
  EXPECT_EQ(p.status.rendezvous_key_lost, kOld);
  const auto events = changed_events(p);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].message.find("cannot join"), std::string::npos) << events[0].message;
  job.status = p.status;
  const Plan again = decide(job, o, kNow);
  EXPECT_TRUE(changed_events(again).empty());
  EXPECT_EQ(again.status.rendezvous_key_lost, kOld);
  // Once no running pod derives from the lost key, the status forgets it.
  o.pods = {derived_pod(0, "Running", kNew)};
  EXPECT_TRUE(decide(job, o, kNow).status.rendezvous_key_lost.empty());
}

TEST(RendezvousSecret, PodsThatRecordNoKeyOrHaveNotStartedDecideNothing) {
  for (const auto& pods : {std::vector<PodFacts>{derived_pod(0, "Running", "")},  // an earlier operator's pods
                           std::vector<PodFacts>{derived_pod(0, "Pending", kOld)},
                           std::vector<PodFacts>{derived_pod(0, "Failed", kOld)}}) {
    Observed o = running_on_old_key(kNew, true);
    o.pods = pods;
    o.job_secrets = {{kOld, "job secret from the old key"}};
    const Plan p = decide(testing::example_job(), o, kNow);
    EXPECT_EQ(secret_write(p), nullptr) << pods[0].phase;
    EXPECT_TRUE(changed_events(p).empty()) << pods[0].phase;
  }
  // Without a managed namespace key (no namespace_key observed) nothing is judged either.
  Observed o = running_on_old_key("", true);
  o.job_secrets = {{kOld, "job secret from the old key"}};
  EXPECT_EQ(secret_write(decide(testing::example_job(), o, kNow)), nullptr);
}

TEST(RendezvousSecret, NodeZerosKeyDecidesWhenRunningPodsDisagree) {
  Observed o = running_on_old_key(kNew, true);
  o.pods = {derived_pod(1, "Running", kNew), derived_pod(0, "Running", kOld)};
  o.job_secrets = {{kOld, "job secret from the old key"}, {kNew, "job secret from the new key"}};
  const Plan p = decide(testing::example_job(), o, kNow);
  ASSERT_NE(secret_write(p), nullptr);
  EXPECT_EQ(secret_write(p)->body["stringData"]["secret"], "job secret from the old key");
}

TEST(RendezvousSecret, ARefusedNamespaceKeyHoldsNewPodsOnceSaidButNotAJobOnItsOwnSecret) {
  TrainingJob job = testing::example_job();
  Observed o;
  o.pod_options.rdzv_secret = true;
  o.namespace_key_refused = "Secret kubedist-rendezvous in namespace team-a holds a key of 3 bytes: replace it";
  Plan p = decide(job, o, kNow);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kCreate, "Pod"));
  int said = 0;
  for (const auto& e : p.events) said += e.reason == kRendezvousKeyInvalid ? 1 : 0;
  EXPECT_EQ(said, 1);
  const Condition* held = nullptr;
  for (const auto& c : p.status.conditions) {
    if (c.type == ConditionType::kPodsRefused) held = &c;
  }
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->status, "True");
  EXPECT_EQ(held->reason, kRendezvousKeyInvalid);
  // Said once: the next pass holds them without a second Event.
  job.status = p.status;
  p = decide(job, o, kNow + 10);
  EXPECT_TRUE(p.create_ranks.empty());
  for (const auto& e : p.events) EXPECT_NE(e.reason, kRendezvousKeyInvalid);
  // Once the key is taken, the pods are created and the condition says so.
  o.namespace_key_refused.clear();
  p = decide(job, o, kNow + 20);
  EXPECT_EQ(p.create_ranks.size(), 4u);
  for (const auto& c : p.status.conditions) {
    if (c.type == ConditionType::kPodsRefused) {
      EXPECT_EQ(c.status, "False");
    }
  }
  // A job on its own J-rdzv (an earlier operator's) derives nothing from the namespace key: not held.
  TrainingJob own = testing::example_job();
  own.status.rendezvous_secret = rdzv_secret_name(own.name);
  o.namespace_key_refused = "refused";
  EXPECT_EQ(decide(own, o, kNow).create_ranks.size(), 4u);
}

TEST(RendezvousKeys, KeepsEveryKeySeenPerNamespaceAndCreatesOneKeyPerNamespace) {
  RendezvousKeys keys;
  const std::string fp = keys.seen("a", "key one");
  EXPECT_EQ(fp, rendezvous::rdzv_key_fingerprint("key one"));
  EXPECT_EQ(fp.size(), 16u);
  EXPECT_EQ(fp.find("key"), std::string::npos);
  keys.seen("a", "key two");
  EXPECT_EQ(keys.find("a", fp), "key one");  // replaced, still kept
  EXPECT_EQ(keys.find("b", fp), std::nullopt);  // per namespace
  EXPECT_EQ(keys.all("a").size(), 2u);

  auto made = keys.to_create("b");
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(*keys.to_create("b"), *made);  // concurrent passes create the same key
  EXPECT_EQ(keys.find("b", rendezvous::rdzv_key_fingerprint(*made)), *made);
  keys.seen("b", *made);
  auto next = keys.to_create("b");  // deleted after it was seen: a new one
  ASSERT_TRUE(next.ok());
  EXPECT_NE(*next, *made);
  EXPECT_EQ(keys.find("b", rendezvous::rdzv_key_fingerprint(*made)), *made);

  for (int i = 0; i < 20; ++i) keys.seen("c", "key " + std::to_string(i));
  EXPECT_EQ(keys.all("c").size(), RendezvousKeys::kKeptPerNamespace);
  EXPECT_EQ(keys.find("c", rendezvous::rdzv_key_fingerprint("key 19")), "key 19");
  EXPECT_EQ(keys.find("c", rendezvous::rdzv_key_fingerprint("key 0")), std::nullopt);
}

TEST(RendezvousKeys, ANamespaceOfLargeKeysKeepsNoMoreBytesThanItsShare) {
  RendezvousKeys keys;
  for (int i = 0; i < 6; ++i) keys.seen("big", std::string(4096, static_cast<char>('a' + i)));
  const auto all = keys.all("big");
  EXPECT_EQ(all.size(), RendezvousKeys::kKeptBytesPerNamespace / 4096);  // 4, the newest
  EXPECT_EQ(keys.find("big", rendezvous::rdzv_key_fingerprint(std::string(4096, 'f'))), std::string(4096, 'f'));
  EXPECT_EQ(keys.find("big", rendezvous::rdzv_key_fingerprint(std::string(4096, 'b'))), std::nullopt);
  // Another namespace's keys are untouched by it.
  keys.seen("small", "the key of a small namespace");
  EXPECT_EQ(keys.all("small").size(), 1u);
  EXPECT_EQ(keys.all("big").size(), 4u);
}

TEST(RendezvousKeys, FingerprintsTellKeysApartAndAreNotAJobSecret) {
  const std::string uid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
  EXPECT_NE(rendezvous::rdzv_key_fingerprint("a"), rendezvous::rdzv_key_fingerprint("b"));
  EXPECT_EQ(rendezvous::derive_job_secret("a", uid).find(rendezvous::rdzv_key_fingerprint("a")), std::string::npos);
  // Known answer (Python: hmac.new(key, b"kubedist-rdzv-fingerprint-1", hashlib.sha256).hexdigest()[:16]).
  EXPECT_EQ(rendezvous::rdzv_key_fingerprint("0123456789abcdef-ns-secret"), "be11c37f5a79100d");
}

}  // namespace
}  // namespace kubedist::trainingjob
