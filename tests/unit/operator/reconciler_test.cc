// The act layer's own logic on an in-memory API (fake_api.h): the order of a plan's writes, the expectations of
// writes the caches have not shown yet, a 409 on the status, the API server's refusal of a pod, held status writes.
#include "trainingjob/act/reconciler.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "trainingjob/decide/bad_nodes.h"

#include "common/utf8.h"
#include "trainingjob/act/avoided_taints.h"
#include "fake_api.h"
#include "rendezvous/rdzv_auth.h"
#include "test_jobs.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;
using kubedist::testing::FakeApi;
using kubedist::testing::FakeCache;
using std::chrono::milliseconds;

const std::string kKey = "team-a/resnet";
const std::string kJobPath = "/apis/kubedist.io/v1alpha1/namespaces/team-a/trainingjobs/resnet";
const std::string kPods = "/api/v1/namespaces/team-a/pods";
const std::string kServices = "/api/v1/namespaces/team-a/services";
const std::string kEvents = "/api/v1/namespaces/team-a/events";

class ReconcilerTest : public ::testing::Test {
 public:
  void SetUp() override {
    const json job = testing::example_job_json();
    api.put(kJobPath, job);
    jobs.set(kKey, testing::job_from(job));
  }

  // What the watches would bring: the job, its pods and its Service as the API holds them now.
  void sync() {
    if (auto job = api.object(kJobPath)) jobs.set(kKey, testing::job_from(*job));
    pods.clear();
    for (const auto& obj : api.list(kPods)) pods.set("team-a/" + obj["metadata"]["name"].get<std::string>(), parse_pod_facts(obj));
    for (const auto& obj : api.list(kServices)) {
      services.set("team-a/" + obj["metadata"]["name"].get<std::string>(), parse_service_facts(obj));
    }
  }
  // Every pod of the job in the cache runs, ready.
  void pods_run() {
    for (auto p : pods.by_index(kKey)) {
      p.phase = "Running";
      p.ready = true;
      pods.set("team-a/" + p.name, p);
    }
  }
  PodFacts cached_pod(const std::string& name) { return *pods.get("team-a/" + name); }
  std::vector<std::string> event_reasons() const {
    std::vector<std::string> out;
    for (const auto& e : api.list(kEvents)) out.push_back(e.value("reason", ""));
    return out;
  }
  static bool has(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  }
  // Reconciles until the job runs: its pods created, shown by the cache, running, and the status Running written.
  void run_job() {
    reconciler.reconcile(kKey);
    sync();
    pods_run();
    ASSERT_EQ(reconciler.reconcile(kKey).kind, ReconcileResult::Kind::kDone);
    sync();
    pods_run();
    ASSERT_EQ(jobs.get(kKey)->status.phase, JobPhase::kRunning);
    api.clear_calls();
  }

  FakeApi api;
  FakeCache<TrainingJob> jobs;
  FakeCache<PodFacts> pods{job_key_of};
  FakeCache<ServiceFacts> services;
  kube::EventRecorder recorder{api, "kubedist-operator"};
  Reconciler reconciler{api, jobs, pods, services, recorder, PodOptions{}};
};

TEST_F(ReconcilerTest, CreatesTheServiceThenThePodsInRankOrder) {
  reconciler.reconcile(kKey);
  const auto creates = api.calls("create", "/namespaces/team-a/");
  std::vector<std::string> paths;
  for (const auto& c : creates) {
    if (c.path != kEvents) paths.push_back(c.path + " " + c.body["metadata"].value("name", ""));
  }
  EXPECT_EQ(paths, (std::vector<std::string>{kServices + " resnet", kPods + " resnet-node-0", kPods + " resnet-node-1",
                                             kPods + " resnet-node-2", kPods + " resnet-node-3"}));
  EXPECT_TRUE(has(event_reasons(), "Created"));
}

TEST_F(ReconcilerTest, WaitsForTheCacheToShowItsCreatesBeforeDecidingAgain) {
  reconciler.reconcile(kKey);
  api.clear_calls();
  // The cache has not shown the pods: deciding now would create them again.
  const ReconcileResult early = reconciler.reconcile(kKey);
  EXPECT_EQ(early.kind, ReconcileResult::Kind::kRequeueAfter);
  EXPECT_EQ(early.after, milliseconds(2000));
  EXPECT_TRUE(api.calls().empty());
  sync();
  reconciler.reconcile(kKey);
  EXPECT_TRUE(api.calls("create", kPods).empty());  // all there
}

TEST_F(ReconcilerTest, APodCreatedAndDeletedBeforeTheCacheShowedItFulfilsItsExpectationByUid) {
  reconciler.reconcile(kKey);
  // kwok (or anyone) deletes resnet-node-1 by name before the cache showed it: its ADDED and DELETED events come
  // together, and the cache never holds it.
  const json gone = *api.object(kPods + "/resnet-node-1");
  api.erase(kPods + "/resnet-node-1");
  sync();
  EXPECT_EQ(reconciler.reconcile(kKey).after, milliseconds(2000));  // not without the DELETED event
  reconciler.pod_deleted(parse_pod_facts(gone));
  api.clear_calls();
  const ReconcileResult r = reconciler.reconcile(kKey);
  EXPECT_NE(r.after, milliseconds(2000));  // not the 30 s wait for a pod that will never show
  const auto creates = api.calls("create", kPods);
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].body["metadata"]["name"], "resnet-node-1");
}

TEST_F(ReconcilerTest, ADeletionSeenBeforeTheCreateAnsweredStillCounts) {
  // The pod informer's DELETED event may come before the create's answer: the uid is remembered a while.
  reconciler.reconcile(kKey);
  const json gone = *api.object(kPods + "/resnet-node-2");
  api.erase(kPods + "/resnet-node-2");
  reconciler.pod_deleted(parse_pod_facts(gone));
  sync();
  EXPECT_NE(reconciler.reconcile(kKey).after, milliseconds(2000));
}

TEST_F(ReconcilerTest, AnOlderPodOfTheSameNameDoesNotFulfilTheExpectationOfANewOne) {
  reconciler.reconcile(kKey);
  sync();
  // The cache still shows the pod this one replaces, terminating: not the one created.
  PodFacts old = cached_pod("resnet-node-3");
  old.uid = "an-older-pod";
  old.deleting = true;
  pods.set("team-a/resnet-node-3", old);
  EXPECT_EQ(reconciler.reconcile(kKey).after, milliseconds(2000));
}

TEST_F(ReconcilerTest, HoldsBackAPendingJobsStatusWhileItsPodsStart) {
  const ReconcileResult r = reconciler.reconcile(kKey);
  EXPECT_TRUE(api.calls("patch", kJobPath).empty());  // Pending, again: one write when it runs, not one per pod
  EXPECT_EQ(r.kind, ReconcileResult::Kind::kRequeueAfter);
  EXPECT_GT(r.after, milliseconds(2000));
  EXPECT_LE(r.after, milliseconds(30000));
}

TEST_F(ReconcilerTest, WritesTheStatusOnTheCachedResourceVersion) {
  reconciler.reconcile(kKey);
  sync();
  pods_run();
  EXPECT_EQ(reconciler.reconcile(kKey).kind, ReconcileResult::Kind::kDone);
  const auto patches = api.calls("patch", kJobPath + "/status");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].body["metadata"]["resourceVersion"], "10");
  EXPECT_EQ(api.object(kJobPath)->at("status")["phase"], "Running");
}

TEST_F(ReconcilerTest, AConflictOnTheStatusComesBackInASecond) {
  reconciler.reconcile(kKey);
  sync();
  pods_run();
  api.answer("patch", kJobPath + "/status", 409, "Conflict");
  const ReconcileResult r = reconciler.reconcile(kKey);
  EXPECT_EQ(r.kind, ReconcileResult::Kind::kRequeueAfter);
  EXPECT_EQ(r.after, milliseconds(1000));
  EXPECT_FALSE(api.object(kJobPath)->contains("status"));
  EXPECT_EQ(reconciler.reconcile(kKey).kind, ReconcileResult::Kind::kDone);  // decided again, written
}

TEST_F(ReconcilerTest, ThePodsRefusedAreReportedAndRetriedWithBackoff) {
  api.answer("create", kPods, 403, "Forbidden");
  const ReconcileResult first = reconciler.reconcile(kKey);
  // The first refusal ends the pass: the others would be refused alike, and this plan claimed them created.
  EXPECT_EQ(first.kind, ReconcileResult::Kind::kRequeueAfter);
  EXPECT_EQ(first.after, milliseconds(0));
  EXPECT_EQ(api.calls("create", kPods).size(), 1u);
  EXPECT_FALSE(has(event_reasons(), "Created"));
  EXPECT_TRUE(api.calls("patch", kJobPath).empty());

  api.clear_calls();
  sync();
  const ReconcileResult held = reconciler.reconcile(kKey);
  EXPECT_TRUE(api.calls("create", kPods).empty());  // the backoff first
  EXPECT_EQ(held.kind, ReconcileResult::Kind::kRequeueAfter);
  EXPECT_GE(held.after, milliseconds(4000));
  EXPECT_LE(held.after, milliseconds(5000));
  EXPECT_TRUE(has(event_reasons(), "PodsRefused"));
  const json status = api.object(kJobPath)->at("status");  // news: written at once
  bool refused = false;
  for (const auto& c : status["conditions"]) refused = refused || (c["type"] == "PodsRefused" && c["status"] == "True");
  EXPECT_TRUE(refused) << status.dump();
}

TEST_F(ReconcilerTest, ATemplateTheApiServerRejectsFailsTheJob) {
  api.answer("create", kPods, 422, "Invalid");
  EXPECT_EQ(reconciler.reconcile(kKey).after, milliseconds(0));
  sync();
  reconciler.reconcile(kKey);
  EXPECT_EQ(api.object(kJobPath)->at("status")["phase"], "Failed");
  EXPECT_EQ(api.calls("create", kPods).size(), 1u);
}

TEST_F(ReconcilerTest, APodThatFailsToCreateLeavesTheOthersToBeCreated) {
  api.answer("create", kPods + "", 500, "InternalError");
  const ReconcileResult r = reconciler.reconcile(kKey);
  EXPECT_EQ(r.kind, ReconcileResult::Kind::kError);
  EXPECT_NE(r.error.message.find("create pod resnet-node-0"), std::string::npos) << r.error.message;
  EXPECT_EQ(api.calls("create", kPods).size(), 4u);
  EXPECT_EQ(api.list(kPods).size(), 3u);
}

TEST_F(ReconcilerTest, AFailedPodsRestartIsStoredBeforeThePodIsDeleted) {
  run_job();
  PodFacts failed = cached_pod("resnet-node-0");
  failed.phase = "Failed";
  failed.ready = false;
  failed.exit_code = 1;
  pods.set("team-a/resnet-node-0", failed);
  reconciler.reconcile(kKey);
  const auto calls = api.calls();
  const auto at = [&](const std::string& verb, const std::string& path) {
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].verb == verb && calls[i].path == path) return static_cast<int>(i);
    }
    return -1;
  };
  const int status = at("patch", kJobPath + "/status");
  const int deleted = at("delete", kPods + "/resnet-node-0");
  ASSERT_GE(status, 0);
  ASSERT_GE(deleted, 0);
  EXPECT_LT(status, deleted);
  EXPECT_EQ(calls[status].body["status"]["restarts"], 1);
  EXPECT_EQ(calls[deleted].body["preconditions"]["uid"], failed.uid);  // never a newer pod of that name
}

// Issue 39 item 2: three jobs failing with an honest one-kilobyte Chinese termination message got one PodFailed
// Event between them: the recorder cut the message at byte 1021, inside a character for two of the three offsets,
// and that Event's body could not be written. Each offset, as the pods' and jobs' names shift it.
// A job that ended before any STATUS poll: the finishing write carries the progress node 0's launcher left in its
// termination message (kubectl get tj shows 100% where it showed nothing).
TEST_F(ReconcilerTest, AJobThatEndedBeforeAnyPollShowsTheProgressNodeZeroLeft) {
  run_job();
  for (auto p : pods.by_index(kKey)) {
    p.phase = "Succeeded";
    p.exit_code = 0;
    p.finished_at = "2026-12-07T04:00:00Z";
    if (p.rank == 0) {
      p.termination_message = "STATUS round=0 restarts=0 nodes=4 world_size=32 phase=over run=resnet step=80 "
                              "total=80 sps=12.5 age_ms=0 up_ms=9000 busy_ms=8000 lost_ms=0 m.loss=0.27";
    }
    pods.set("team-a/" + p.name, p);
  }
  const ReconcileResult r = reconciler.reconcile(kKey);
  const auto patches = api.calls("patch", kJobPath + "/status");
  ASSERT_FALSE(patches.empty()) << static_cast<int>(r.kind);
  const json status = patches.back().body["status"];
  EXPECT_EQ(status["phase"], "Succeeded");
  EXPECT_EQ(status["progress"]["summary"], "100% (80/80)");
  EXPECT_EQ(status["progress"]["lastStepTime"], "2026-12-07T04:00:00Z");
  EXPECT_EQ(status["progress"]["metrics"]["loss"], 0.27);
  EXPECT_TRUE(status["progress"]["estimatedCompletionTime"].is_null());  // null: the merge patch removes it
}

TEST_F(ReconcilerTest, APodFailedWithACjkTerminationMessageOverOneKilobyteGetsItsEvent) {
  std::string cjk;
  while (cjk.size() < 1300) cjk += "数据加载器的工作进程意外退出";
  run_job();
  const json running = *api.object(kPods + "/resnet-node-0");
  int attempt = 0;
  for (const std::string prefix : {"", "x", "xy"}) {
    SCOPED_TRACE("prefix of " + std::to_string(prefix.size()) + " bytes");
    json pod = running;
    pod["status"]["phase"] = "Failed";
    pod["status"]["containerStatuses"] = json::array({{{"name", "trainer"},
                                                       {"state",
                                                        {{"terminated",
                                                          {{"exitCode", 1},
                                                           {"reason", "Error"},
                                                           {"message", "RuntimeError: " + prefix + cjk}}}}}}});
    pod["metadata"]["uid"] = "failed-" + std::to_string(++attempt);  // a new pod each time
    api.put(kPods + "/resnet-node-0", pod);
    pods.set("team-a/resnet-node-0", parse_pod_facts(pod));
    api.clear_calls();
    EXPECT_NE(reconciler.reconcile(kKey).kind, ReconcileResult::Kind::kError);
    const auto events = api.list(kEvents);
    int failed = 0;
    for (const auto& e : events) {
      if (e.value("reason", "") != "PodFailed") continue;
      ++failed;
      const std::string message = e.value("message", "");
      EXPECT_TRUE(is_valid_utf8(message));
      EXPECT_LE(message.size(), kube::kMaxEventMessage);
    }
    EXPECT_EQ(failed, attempt);  // one more PodFailed Event for each failure
    // The Restarting condition quotes it too, and the status write carried it.
    const json status = api.object(kJobPath)->at("status");
    EXPECT_EQ(status.value("restarts", 0), attempt);
    sync();
    pods_run();
  }
}

TEST_F(ReconcilerTest, AStatusWriteThatFailsLeavesTheFailedPodInPlace) {
  run_job();
  PodFacts failed = cached_pod("resnet-node-0");
  failed.phase = "Failed";
  failed.exit_code = 1;
  pods.set("team-a/resnet-node-0", failed);
  api.answer("patch", kJobPath + "/status", 500, "InternalError");
  EXPECT_EQ(reconciler.reconcile(kKey).kind, ReconcileResult::Kind::kError);
  EXPECT_TRUE(api.calls("delete", kPods).empty());
  EXPECT_TRUE(api.object(kPods + "/resnet-node-0").has_value());
}

TEST_F(ReconcilerTest, APodDeletedMeanwhileOrReplacedCountsAsDeleted) {
  run_job();
  PodFacts failed = cached_pod("resnet-node-0");
  failed.phase = "Failed";
  failed.exit_code = 1;
  pods.set("team-a/resnet-node-0", failed);
  api.answer("delete", kPods + "/resnet-node-0", 409, "Conflict");  // the uid precondition: a newer pod
  EXPECT_NE(reconciler.reconcile(kKey).kind, ReconcileResult::Kind::kError);
}

TEST_F(ReconcilerTest, AJobGoneFromTheCacheIsForgotten) {
  reconciler.reconcile(kKey);
  jobs.erase(kKey);
  EXPECT_EQ(reconciler.reconcile(kKey).kind, ReconcileResult::Kind::kDone);
  // Created anew under the same name: nothing of the old job's expectations holds it back.
  jobs.set(kKey, testing::example_job());
  api.clear_calls();
  EXPECT_NE(reconciler.reconcile(kKey).after, milliseconds(2000));
}

// A reconciler of the operator's kind: its pods sign their rendezvous, with the namespace's Secret; with_keyring:
// its keys are kept in the keyring Secret too, as the chart runs it.
struct SigningReconciler {
  explicit SigningReconciler(ReconcilerTest& t, bool with_keyring = false)
      : keyring(t.api, "kubedist-system/kd-keyring") {
    ReconcilerExtras extras;
    extras.namespace_secrets = &secrets;
    extras.rendezvous_keys = &keys;
    extras.keyring = with_keyring ? &keyring : nullptr;
    PodOptions options;
    options.rdzv_secret = true;
    reconciler = std::make_unique<Reconciler>(t.api, t.jobs, t.pods, t.services, t.recorder, options, std::move(extras));
  }
  FakeCache<SecretFacts> secrets;
  RendezvousKeys keys;
  Keyring keyring;
  std::unique_ptr<Reconciler> reconciler;
};

const std::string kSecrets = "/api/v1/namespaces/team-a/secrets";
const std::string kKeyring = "/api/v1/namespaces/kubedist-system/secrets/kd-keyring";

// The keyring Secret as the API server holds it once the operator's patches landed: their stringData in its data.
json keyring_as_served(const FakeApi& api) {
  json data = json::object();
  for (const auto& c : api.calls("patch", kKeyring)) {
    const json added = c.body.value("stringData", json::object()), removed = c.body.value("data", json::object());
    for (const auto& [entry, hex] : added.items()) data[entry] = kubedist::testing::base64(hex.get<std::string>());
    for (const auto& [entry, value] : removed.items())
      if (value.is_null()) data.erase(entry);
  }
  return {{"metadata", {{"name", "kd-keyring"}}}, {"data", data}};
}

TEST_F(ReconcilerTest, ANewNamespaceKeyIsInTheKeyringBeforeTheNamespaceSecretOrAnyPodUsesIt) {
  api.put(kKeyring, {{"metadata", {{"name", "kd-keyring"}}}});
  SigningReconciler op(*this, true);
  // The keyring cannot be written: nothing is created on a key that would be lost with this process.
  api.answer("patch", kKeyring, 500);
  EXPECT_EQ(op.reconciler->reconcile(kKey).kind, ReconcileResult::Kind::kError);
  EXPECT_TRUE(api.calls("create", "/namespaces/team-a/").empty());
  const auto r = op.reconciler->reconcile(kKey);
  EXPECT_NE(r.kind, ReconcileResult::Kind::kError);
  const auto all = api.calls();
  size_t patched = all.size(), secret = all.size(), first_pod = all.size();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].verb == "patch" && all[i].path == kKeyring && patched == all.size()) patched = i;
    if (all[i].verb == "create" && all[i].path == kSecrets && secret == all.size()) secret = i;
    if (all[i].verb == "create" && all[i].path == kPods && first_pod == all.size()) first_pod = i;
  }
  ASSERT_LT(first_pod, all.size());
  EXPECT_LT(patched, secret);
  EXPECT_LT(secret, first_pod);
  const std::string key = all[secret].body["stringData"][kRdzvSecretKey];
  EXPECT_EQ(keyring_as_served(api)["data"].size(), 1u);
  EXPECT_TRUE(keyring_as_served(api)["data"].contains("team-a." + rendezvous::rdzv_key_fingerprint(key)));
}

TEST_F(ReconcilerTest, ANamespaceKeyOutsideItsBoundsIsNeitherKeptNorDerivedFromAndHoldsTheJobsPods) {
  api.put(kKeyring, {{"metadata", {{"name", "kd-keyring"}}}});
  SigningReconciler op(*this, true);
  // A tenant's 600 KB key (and, below, one of 15 bytes and one that is not base64).
  op.secrets.set("team-a/kubedist-rendezvous", SecretFacts{"team-a", "kubedist-rendezvous", "", "",
                                                           kubedist::testing::base64(std::string(600 * 1024, 'k'))});
  EXPECT_NE(op.reconciler->reconcile(kKey).kind, ReconcileResult::Kind::kError);
  EXPECT_TRUE(api.calls("create", kPods).empty());
  EXPECT_TRUE(api.calls("patch", kKeyring).empty());  // not kept: no memory, no room in the keyring
  EXPECT_TRUE(op.keys.all("team-a").empty());
  const auto status = api.calls("patch", kJobPath + "/status");
  ASSERT_EQ(status.size(), 1u);
  bool held = false;
  for (const auto& c : status[0].body["status"]["conditions"]) {
    if (c["type"] != "PodsRefused") continue;
    held = c["status"] == "True" && c["reason"] == "RendezvousKeyInvalid";
    EXPECT_EQ(c["message"], "new pods held: Secret kubedist-rendezvous in namespace team-a holds a key of 614400 bytes: "
                            "replace it with one of 16 to 4096 bytes, or delete it and the operator makes one");
  }
  EXPECT_TRUE(held) << status[0].body.dump();
  EXPECT_TRUE(has(event_reasons(), "RendezvousKeyInvalid"));
  EXPECT_EQ(namespace_key_refusal("team-a", true, std::string(15, 'k')),
            "Secret kubedist-rendezvous in namespace team-a holds a key of 15 bytes: replace it with one of 16 to 4096 "
            "bytes, or delete it and the operator makes one");
  EXPECT_EQ(namespace_key_refusal("team-a", false, ""),
            "Secret kubedist-rendezvous in namespace team-a holds data.secret that is not base64: replace it with one "
            "of 16 to 4096 bytes, or delete it and the operator makes one");
  EXPECT_EQ(namespace_key_refusal("team-a", true, std::string(16, 'k')), "");
  EXPECT_EQ(namespace_key_refusal("team-a", true, std::string(4096, 'k')), "");
  // Replaced with a good key: the pods are created, deriving from it.
  op.secrets.set("team-a/kubedist-rendezvous", SecretFacts{"team-a", "kubedist-rendezvous", "", "",
                                                           kubedist::testing::base64("a-good-key-of-the-tenant")});
  sync();
  EXPECT_NE(op.reconciler->reconcile(kKey).kind, ReconcileResult::Kind::kError);
  EXPECT_EQ(api.calls("create", kPods).size(), 4u);
  EXPECT_EQ(op.keys.all("team-a").size(), 1u);
}

TEST_F(ReconcilerTest, AnOperatorStartedAfterTheKeyWasReplacedGivesTheRunningJobItsOldSecretFromTheKeyring) {
  api.put(kKeyring, {{"metadata", {{"name", "kd-keyring"}}}});
  std::string key1, uid;
  {
    SigningReconciler first(*this, true);
    first.reconciler->reconcile(kKey);
    key1 = api.calls("create", kSecrets)[0].body["stringData"][kRdzvSecretKey];
    sync();
    pods_run();
    first.reconciler->reconcile(kKey);
    sync();
    pods_run();
    uid = jobs.get(kKey)->uid;
  }  // that operator is gone; while none runs, a tenant replaces the namespace key
  api.put(kKeyring, keyring_as_served(api));
  api.clear_calls();
  SigningReconciler second(*this, true);
  second.secrets.set("team-a/kubedist-rendezvous",
                     SecretFacts{"team-a", "kubedist-rendezvous", "", "", kubedist::testing::base64("a-replaced-key-of-a-tenant")});
  EXPECT_NE(second.reconciler->reconcile(kKey).kind, ReconcileResult::Kind::kError);
  const auto creates = api.calls("create", kSecrets);
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].body["metadata"]["name"], rdzv_secret_name("resnet"));
  EXPECT_EQ(creates[0].body["stringData"][kRdzvSecretKey], rendezvous::derive_job_secret(key1, uid));
  EXPECT_TRUE(has(event_reasons(), kRendezvousSecretChanged));
  // The replaced key is in the keyring too, beside the old one.
  api.put(kKeyring, keyring_as_served(api));
  EXPECT_EQ(api.object(kKeyring)->at("data").size(), 1u);  // this pass's patches only: the new key
  EXPECT_TRUE(api.object(kKeyring)->at("data").contains("team-a." + rendezvous::rdzv_key_fingerprint("a-replaced-key-of-a-tenant")));
}

TEST_F(ReconcilerTest, TheNamespaceSecretIsCreatedBeforeAnyPodThatDerivesFromIt) {
  SigningReconciler signing(*this);
  signing.reconciler->reconcile(kKey);
  const auto creates = api.calls("create", "/namespaces/team-a/");
  ASSERT_GE(creates.size(), 2u);
  EXPECT_EQ(creates[0].path, kSecrets);
  const std::string key = creates[0].body["stringData"][kRdzvSecretKey];
  EXPECT_FALSE(key.empty());
  const auto pod_creates = api.calls("create", kPods);
  ASSERT_EQ(pod_creates.size(), 4u);
  for (const auto& c : pod_creates) {
    EXPECT_EQ(c.body["metadata"]["annotations"][kRdzvKeyAnnotation], rendezvous::rdzv_key_fingerprint(key));
  }
}

TEST_F(ReconcilerTest, TheNamespaceSecretAnotherPassCreatedWithTheSameKeyIsTakenAsOurs) {
  SigningReconciler signing(*this);
  const std::string key = *signing.keys.to_create("team-a");
  api.put(kSecrets + "/kubedist-rendezvous",
          {{"metadata", {{"name", "kubedist-rendezvous"}, {"labels", {{kNamespaceRdzvLabel, "namespace"}}}}},
           {"data", {{kRdzvSecretKey, kubedist::testing::base64(key)}}}});
  EXPECT_NE(signing.reconciler->reconcile(kKey).kind, ReconcileResult::Kind::kError);
  EXPECT_EQ(api.calls("create", kPods).size(), 4u);
}

TEST_F(ReconcilerTest, ASecretOfThatNameThatIsNotTheOperatorsIsAConflictTheJobShows) {
  SigningReconciler signing(*this);
  api.put(kSecrets + "/kubedist-rendezvous", {{"metadata", {{"name", "kubedist-rendezvous"}}}, {"data", json::object()}});
  const ReconcileResult r = signing.reconciler->reconcile(kKey);
  EXPECT_EQ(r.kind, ReconcileResult::Kind::kError);
  EXPECT_TRUE(has(event_reasons(), "RendezvousSecretConflict"));
  EXPECT_TRUE(api.calls("create", kPods).empty());  // no pod that could not sign
}

// A reconciler that watches nodes and taints the ones a job comes to avoid (after one failure, for brevity).
struct TaintingReconciler {
  explicit TaintingReconciler(ReconcilerTest& t) : t(t) {
    ReconcilerExtras extras;
    extras.nodes = &nodes;
    extras.avoid_node_after_failures = 1;
    extras.taint_avoided_nodes = true;
    extras.node_signals = &signals;
    reconciler = std::make_unique<Reconciler>(t.api, t.jobs, t.pods, t.services, t.recorder, PodOptions{},
                                              std::move(extras));
    const json node = json::parse(R"({"metadata": {"name": "gpu-7", "resourceVersion": "5"},
      "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
      "status": {"conditions": [{"type": "Ready", "status": "True"}]}})");
    t.api.put(kNode, node);
    nodes.set("gpu-7", parse_node_facts(node));
  }
  // Runs the job, then node 0's pod is ended on gpu-7 by the node's shutdown (the node's own fault), or with
  // exit_code; returns the pass's result.
  ReconcileResult fail_on_the_node(std::optional<int> exit_code = std::nullopt) {
    reconciler->reconcile(kKey);
    t.sync();
    t.pods_run();
    reconciler->reconcile(kKey);
    t.sync();
    t.pods_run();
    t.api.clear_calls();
    PodFacts failed = t.cached_pod("resnet-node-0");
    failed.phase = "Failed";
    failed.exit_code = exit_code;
    failed.failure_reason = exit_code ? "Error" : "NodeShutdown";
    failed.node_name = "gpu-7";
    t.pods.set("team-a/resnet-node-0", failed);
    return reconciler->reconcile(kKey);
  }
  static inline const std::string kNode = "/api/v1/nodes/gpu-7";
  ReconcilerTest& t;
  NodeSignals signals;
  FakeCache<NodeFacts> nodes;
  std::unique_ptr<Reconciler> reconciler;
};

// spec.placement.topologyKey: a bound pod gets its node's domain in an annotation, by a patch naming its uid; the
// pod is patched, never deleted (every pod write but a create once went down the delete path).
TEST_F(ReconcilerTest, ABoundPodIsAnnotatedWithItsNodesDomainAndNeverDeletedForIt) {
  json job = testing::example_job_json();
  job["spec"]["placement"]["topologyKey"] = "kubedist.io/rack";
  api.put(kJobPath, job);
  jobs.set(kKey, testing::job_from(job));
  FakeCache<NodeFacts> nodes;
  ReconcilerExtras extras;
  extras.nodes = &nodes;
  PodOptions options;
  options.topology_domains = true;
  Reconciler r(api, jobs, pods, services, recorder, options, std::move(extras));
  const json node = json::parse(R"({"metadata": {"name": "gpu-7", "labels": {"kubedist.io/rack": "r1"}},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]}})");
  api.put("/api/v1/nodes/gpu-7", node);
  nodes.set("gpu-7", parse_node_facts(node));
  r.reconcile(kKey);
  sync();
  pods_run();
  PodFacts bound = cached_pod("resnet-node-0");
  bound.node_name = "gpu-7";
  pods.set("team-a/resnet-node-0", bound);
  api.clear_calls();
  r.reconcile(kKey);
  const auto patches = api.calls("patch", kPods + "/resnet-node-0");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].body, (json{{"metadata", {{"uid", bound.uid},
                                                 {"annotations", {{"kubedist.io/topology-domain", "r1"}}}}}}));
  EXPECT_TRUE(api.calls("delete", kPods).empty());
  EXPECT_EQ(api.object(kPods + "/resnet-node-0")->at("metadata")["annotations"]["kubedist.io/topology-domain"], "r1");
  sync();
  pods_run();
  bound = cached_pod("resnet-node-0");
  EXPECT_EQ(bound.topology_domain, std::optional<std::string>("r1"));
  bound.node_name = "gpu-7";
  pods.set("team-a/resnet-node-0", bound);
  api.clear_calls();
  r.reconcile(kKey);
  EXPECT_TRUE(api.calls("patch", kPods).empty()) << "written once";
  EXPECT_TRUE(api.calls("get", "/api/v1/nodes/").empty()) << "the node read once per pod";
}

// A member's node cordoned under a job with a spare: node 0 is told (RELEASE), once it took the notice, never again
// for that pod; asked again after a KEPT (no spare ready yet at node 0's end).
TEST_F(ReconcilerTest, ANodeGoingAwayIsToldToNodeZeroUntilItTakesItAndThenNeverAgain) {
  json job = testing::example_job_json();
  job["spec"]["spares"] = 1;
  api.put(kJobPath, job);
  jobs.set(kKey, testing::job_from(job));
  FakeCache<NodeFacts> nodes;
  std::vector<contract::ReleaseNotice> sent;
  std::vector<contract::ReleaseAnswer> answers{{2, false, "no spare waits ready"}, {2, true, ""}};
  std::string node0_uid;
  ReconcilerExtras extras;
  extras.nodes = &nodes;
  extras.launcher = [&](const std::string&) -> std::optional<LauncherReport> {
    LauncherReport r;
    r.pod_uid = node0_uid;
    r.round = 0;
    r.nodes = 4;
    r.phase = "running";
    r.run_id = "resnet";
    r.spares = {10000};
    return r;
  };
  extras.release = [&](const std::string& key, const contract::ReleaseNotice& n) -> Result<contract::ReleaseAnswer> {
    EXPECT_EQ(key, kKey);
    sent.push_back(n);
    const auto a = answers.front();
    if (answers.size() > 1) answers.erase(answers.begin());
    return a;
  };
  Reconciler r(api, jobs, pods, services, recorder, PodOptions{}, std::move(extras));
  const auto pass = [&] {  // the caches as the watches would show them, each pod bound to a node of its own
    sync();
    pods_run();
    for (auto p : pods.by_index(kKey)) {
      p.node_name = "w-" + p.name;
      pods.set("team-a/" + p.name, p);
      nodes.set(p.node_name, NodeFacts{p.node_name, true, "", p.name == "resnet-node-2", ""});
      if (p.name == "resnet-node-0") node0_uid = p.uid;
    }
    r.reconcile(kKey);
  };
  r.reconcile(kKey);
  pass();
  ASSERT_EQ(sent, (std::vector<contract::ReleaseNotice>{{2, contract::ReleaseWhy::kCordoned}}));
  EXPECT_FALSE(has(event_reasons(), "NodeGoingAway")) << "kept: nothing happened yet";
  pass();
  EXPECT_EQ(sent.size(), 2u) << "asked again after a KEPT";
  EXPECT_TRUE(has(event_reasons(), "NodeGoingAway"));
  pass();
  EXPECT_EQ(sent.size(), 2u) << "node 0 took it: never sent again for that pod";
  EXPECT_TRUE(api.calls("delete", kPods + "/resnet-node-2").empty()) << "the member's pod is not deleted for it";
}

TEST_F(ReconcilerTest, AnAvoidedNodeIsTaintedOnTheVersionItsTaintsWereReadFromBeforeTheStatusNamesIt) {
  TaintingReconciler tainting(*this);
  EXPECT_NE(tainting.fail_on_the_node().kind, ReconcileResult::Kind::kError);
  const auto patches = api.calls("patch", TaintingReconciler::kNode);
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].body["metadata"]["resourceVersion"], "5");
  const json taints = api.object(TaintingReconciler::kNode)->at("spec")["taints"];
  ASSERT_EQ(taints.size(), 2u);
  EXPECT_EQ(taints[0], json::parse(R"({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})"));
  EXPECT_EQ(taints[1]["key"], "kubedist.io/avoided");
  EXPECT_EQ(taints[1]["effect"], "NoSchedule");
  const UnixSeconds added = std::stoll(taints[1]["value"].get<std::string>());  // the second it was added
  EXPECT_LE(std::abs(added - now_unix()), 5);
  const auto calls = api.calls();
  const auto node_at = std::find_if(calls.begin(), calls.end(), [](const auto& c) { return c.path == TaintingReconciler::kNode; });
  const auto status_at = std::find_if(calls.begin(), calls.end(), [](const auto& c) { return c.path == kJobPath + "/status"; });
  ASSERT_NE(status_at, calls.end());
  EXPECT_LT(node_at, status_at);
  EXPECT_EQ(status_at->body["status"]["avoidedNodes"], json::array({"gpu-7"}));
}

// A pod ended by SIGBUS is recorded in the operator's memory of bus errors across jobs; the node is tainted when
// another namespace's pods met one there within the hour, not for this namespace's alone.
TEST_F(ReconcilerTest, ABusErrorAnotherNamespaceMetOnTheNodeTooTaintsIt) {
  TaintingReconciler alone(*this);
  EXPECT_NE(alone.fail_on_the_node(kBusErrorExitCode).kind, ReconcileResult::Kind::kError);
  EXPECT_TRUE(api.calls("patch", TaintingReconciler::kNode).empty());
  EXPECT_EQ(alone.signals.namespaces("gpu-7", now_unix()), (std::set<std::string>{"team-a"}));

  SetUp();  // the job afresh, its status without the failure counted
  api.clear_calls();
  TaintingReconciler twice(*this);
  twice.signals.record("gpu-7", "team-b", now_unix() - 600);  // another tenant's job met one there 10 minutes ago
  EXPECT_NE(twice.fail_on_the_node(kBusErrorExitCode).kind, ReconcileResult::Kind::kError);
  ASSERT_EQ(api.calls("patch", TaintingReconciler::kNode).size(), 1u);
  EXPECT_EQ(api.object(TaintingReconciler::kNode)->at("spec")["taints"][1]["key"], "kubedist.io/avoided");
}

TEST_F(ReconcilerTest, ATaintTheApiServerRefusesDoesNotHoldUpTheJobAndAConflictDecidesAgain) {
  TaintingReconciler refused(*this);
  api.answer("patch", TaintingReconciler::kNode, 403, "Forbidden");
  EXPECT_NE(refused.fail_on_the_node().kind, ReconcileResult::Kind::kError);
  EXPECT_EQ(api.calls("patch", kJobPath + "/status").size(), 1u);  // the failure and the avoided node still counted
  EXPECT_EQ(api.calls("delete", kPods + "/resnet-node-0").size(), 1u);
}

TEST_F(ReconcilerTest, ATaintWriteOnAChangedNodeStopsThePassBeforeTheStatusSoTheNextDecidesAgain) {
  TaintingReconciler conflict(*this);
  api.answer("patch", TaintingReconciler::kNode, 409, "Conflict");
  const ReconcileResult r = conflict.fail_on_the_node();
  EXPECT_EQ(r.kind, ReconcileResult::Kind::kRequeueAfter);
  EXPECT_EQ(r.after, milliseconds(1000));
  EXPECT_TRUE(api.calls("patch", kJobPath + "/status").empty());
  EXPECT_TRUE(api.calls("delete", kPods).empty());  // the failed pod stays until its count is written
}

TEST_F(ReconcilerTest, TheOperatorTakesItsTaintOffANodeAfterTheTtlOnTheVersionItRead) {
  FakeCache<NodeFacts> nodes;
  const auto put = [&](const std::string& name, const std::string& rv, UnixSeconds added) {
    const json node = {{"metadata", {{"name", name}, {"resourceVersion", rv}}},
                       {"spec", {{"taints", json::array({{{"key", "gpu"}, {"value", "a100"}, {"effect", "NoSchedule"}},
                                                         {{"key", "kubedist.io/avoided"},
                                                          {"value", std::to_string(added)},
                                                          {"effect", "NoSchedule"}}})}}}};
    api.put("/api/v1/nodes/" + name, node);
    nodes.set(name, parse_node_facts(node));
  };
  constexpr UnixSeconds kThen = 1'800'000'000;
  put("old", "3", kThen - 600);
  put("recent", "4", kThen - 60);
  AvoidedTaintExpiry expiry(api, nodes, 600);
  EXPECT_EQ(expiry.expire_once(kThen), 1);
  const auto patches = api.calls("patch", "/api/v1/nodes/old");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].body["metadata"]["resourceVersion"], "3");
  EXPECT_EQ(api.object("/api/v1/nodes/old")->at("spec")["taints"],
            json::parse(R"([{"key": "gpu", "value": "a100", "effect": "NoSchedule"}])"));
  EXPECT_TRUE(api.calls("patch", "/api/v1/nodes/recent").empty());
  // A node changed since the cache read it (409) is left for the next look; nothing else is touched.
  api.answer("patch", "/api/v1/nodes/recent", 409, "Conflict");
  EXPECT_EQ(expiry.expire_once(kThen + 540), 0);
  EXPECT_EQ(api.calls("patch", "/api/v1/nodes/recent").size(), 1u);
}

}  // namespace
}  // namespace kubedist::trainingjob
