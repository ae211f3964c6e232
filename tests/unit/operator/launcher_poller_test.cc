// Which job the poller asks, and where; bad addresses fail before any network use.
#include "trainingjob/launcher_poller.h"

#include <gtest/gtest.h>

#include "test_jobs.h"
#include "trainingjob/rdzv_auth.h"

namespace kubedist::trainingjob {
namespace {

TrainingJob job(int min, int max, const std::string& phase = "Running") {
  auto j = testing::example_job_json();
  j["spec"]["minReplicas"] = min;
  j["spec"]["replicas"] = max;
  j["spec"]["maxReplicas"] = max;
  j["spec"]["masterPort"] = 23456;
  auto t = testing::job_from(j);
  t.status.phase = parse_job_phase(phase);
  return t;
}

PodFacts node0(const std::string& phase = "Running", const std::string& ip = "10.1.2.3") {
  PodFacts p;
  p.name = "resnet-node-0";
  p.uid = "pod-0";
  p.owner_uid = "uid-1";
  p.rank = 0;
  p.phase = phase;
  p.pod_ip = ip;
  return p;
}

TEST(LauncherTarget, NodeZeroRunningWithAnAddressIsAskedOnMasterPortPlusOne) {
  auto t = launcher_target(job(2, 4), {node0()});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->job_key, "team-a/resnet");
  EXPECT_EQ(t->pod_uid, "pod-0");
  EXPECT_EQ(t->ip, "10.1.2.3");
  EXPECT_EQ(t->port, 23457);
}

TEST(LauncherTarget, NeedsTheSecretOnlyWhenNodeZeroMountsIt) {
  EXPECT_FALSE(launcher_target(job(2, 4), {node0()})->needs_secret);  // a pod from before the Secret
  auto signing = node0();
  signing.rdzv_secret = true;
  EXPECT_TRUE(launcher_target(job(2, 4), {signing})->needs_secret);
}

TEST(LauncherTarget, NothingToAskWhenThereIsNoListenerOrNoRunningNodeZero) {
  EXPECT_FALSE(launcher_target(job(1, 1), {node0()}).has_value());  // single node: no rendezvous listener
  EXPECT_FALSE(launcher_target(job(2, 4), {node0("Pending", "")}).has_value());
  EXPECT_FALSE(launcher_target(job(2, 4), {node0("Running", "")}).has_value());
  EXPECT_FALSE(launcher_target(job(2, 4, "Succeeded"), {node0()}).has_value());
  EXPECT_FALSE(launcher_target(job(2, 4, "Suspended"), {node0()}).has_value());
  auto foreign = node0();
  foreign.owner_uid = "someone-else";
  EXPECT_FALSE(launcher_target(job(2, 4), {foreign}).has_value());
  auto leaving = node0();
  leaving.deleting = true;
  EXPECT_FALSE(launcher_target(job(2, 4), {leaving}).has_value());
}

TEST(QueryLauncher, ABadAddressIsRefusedWithoutConnecting) {
  auto r = query_launcher("not-an-ip", 1234, std::chrono::milliseconds(100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "rendezvous STATUS from not-an-ip:1234: not an IPv4 address and port");
  EXPECT_FALSE(query_launcher("10.0.0.1", 70000, std::chrono::milliseconds(100)).ok());
}

// The same vectors as tests/unit/launcher/rendezvous_auth_test.cc (computed with Python's hmac): both sides of
// the wire agree on what is signed.
const std::string kSecret = "0123456789abcdef-job-secret";
const std::string kChallenge = "000102030405060708090a0b0c0d0e0f";

TEST(RdzvAuth, SealsAStatusRequestAsTheLauncherExpects) {
  EXPECT_EQ(seal_rdzv_request(kSecret, kChallenge, 1, "STATUS"),
            "MAC 1 b0ebe69c51729898792330a9d1c4a41a1b808042804378e3eb127ba1819271f2 STATUS\n");
}

TEST(RdzvAuth, OpensOnlyNodeZerosSignedReply) {
  const std::string reply = "MAC 1 42abd9d3f526ccb2f3c1278a6ced87f2e3563868b1d5a9a43499dd27ceee5bcc STATUS round=0";
  auto opened = open_rdzv_reply(kSecret, kChallenge, 1, reply);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  EXPECT_EQ(*opened, "STATUS round=0");
  EXPECT_FALSE(open_rdzv_reply("another secret of 16+ bytes", kChallenge, 1, reply).ok());
  EXPECT_FALSE(open_rdzv_reply(kSecret, kChallenge, 2, reply).ok());                   // not the reply due
  EXPECT_FALSE(open_rdzv_reply(kSecret, kChallenge, 1, reply.substr(0, reply.size() - 1) + "1").ok());  // changed
  EXPECT_FALSE(open_rdzv_reply(kSecret, kChallenge, 1, "STATUS round=0").ok());        // unsigned
  // A request of ours reflected back is not a reply.
  std::string reflected = seal_rdzv_request(kSecret, kChallenge, 1, "STATUS round=0");
  reflected.pop_back();
  EXPECT_FALSE(open_rdzv_reply(kSecret, kChallenge, 1, reflected).ok());
}

TEST(RdzvAuth, ParsesHelloAndMakesFreshSecrets) {
  EXPECT_EQ(*parse_rdzv_hello("HELLO " + kChallenge), kChallenge);
  EXPECT_FALSE(parse_rdzv_hello("HELLO xyz").ok());
  EXPECT_FALSE(parse_rdzv_hello("STATUS round=0").ok());
  auto a = new_rdzv_secret(), b = new_rdzv_secret();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_NE(*a, *b);
}

}  // namespace
}  // namespace kubedist::trainingjob
