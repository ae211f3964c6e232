// The leader's fence: writes stop the moment the lease may be gone, also those of reconciles already running.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "controller/leader_election.h"
#include "controller/lease_fence.h"
#include "controller/probe_server.h"
#include "kube/client.h"

namespace kubedist::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const Clock::TimePoint kT0 = Clock::TimePoint(seconds(1000));

TEST(LeaseFence, HoldsNothingBeforeTheLeaseIsTaken) {
  const LeaseFence fence(milliseconds(10000));
  EXPECT_FALSE(fence.holds(kT0));
}

TEST(LeaseFence, ARenewalHoldsUntilTheRenewDeadlineCountedFromWhenItWasSent) {
  LeaseFence fence(milliseconds(10000));
  fence.renewed(kT0);
  EXPECT_TRUE(fence.holds(kT0 + milliseconds(9999)));
  EXPECT_FALSE(fence.holds(kT0 + milliseconds(10000)));  // the others may see the lease expire 5 s later
  // A slow renewal that answers late counts from when it was sent, and never moves the fence back.
  fence.renewed(kT0 + seconds(5));
  EXPECT_EQ(fence.until(), kT0 + seconds(15));
  fence.renewed(kT0 + seconds(1));
  EXPECT_EQ(fence.until(), kT0 + seconds(15));
}

TEST(LeaseFence, ClosesAtOnceWhenTheLeaseIsGivenUp) {
  LeaseFence fence(milliseconds(10000));
  fence.renewed(kT0);
  fence.close();
  EXPECT_FALSE(fence.holds(kT0));
}

TEST(LeaseFence, TheRenewDeadlineLeavesTheLastThirdForAWriteInFlight) {
  EXPECT_EQ(renew_deadline(15), milliseconds(10000));
  EXPECT_EQ(write_deadline(15), seconds(5));
  EXPECT_EQ(write_deadline(3), seconds(1));
  EXPECT_EQ(write_deadline(1), seconds(1));
  for (int lease : {3, 15, 60, 3600}) {
    EXPECT_LE(renew_deadline(lease) + write_deadline(lease), seconds(lease)) << lease;
  }
}

TEST(WriteGate, RefusesWritesUnsentAndLetsReadsAndWhatItAllowsThrough) {
  ProbeServer server;
  server.handle("/api/v1/namespaces/a/pods", [] { return std::pair<int, std::string>{200, "{}"}; });
  ASSERT_TRUE(server.start("127.0.0.1:0"));
  kube::Config cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(server.port());
  auto client = kube::Client::create(cfg, kube::RetryPolicy{1});
  ASSERT_TRUE(client);
  std::atomic<int> sent{0};
  (*client)->set_request_observer([&](const std::string&, int) { ++sent; });
  bool leading = false;
  (*client)->set_write_gate([&](const std::string& path) -> std::optional<std::string> {
    if (leading || path.rfind("/apis/coordination.k8s.io/", 0) == 0) return std::nullopt;
    return "this replica does not hold the leader lease";
  });
  const std::string pods = "/api/v1/namespaces/a/pods";
  auto& c = **client;
  const auto refusal = [](const auto& r) { return r ? std::string("sent") : r.error().message; };
  const std::string why = "not sent: this replica does not hold the leader lease";
  EXPECT_EQ(refusal(c.create(pods, {{"kind", "Pod"}})), why);
  EXPECT_EQ(refusal(c.merge_patch(pods + "/p", {{"status", {{"phase", "x"}}}})), why);
  EXPECT_EQ(refusal(c.remove(pods + "/p")), why);
  EXPECT_EQ(sent.load(), 0);
  EXPECT_TRUE((*client)->get(pods));  // reads are never gated
  EXPECT_EQ(sent.load(), 1);
  (*client)->merge_patch("/apis/coordination.k8s.io/v1/namespaces/a/leases/op", {{"spec", {}}});  // the lease's own
  EXPECT_EQ(sent.load(), 2);
  leading = true;
  (*client)->create(pods, {{"kind", "Pod"}});  // sent (the probe server answers only GETs: an error, but an answer)
  EXPECT_EQ(sent.load(), 3);
  (*client)->set_write_gate(nullptr);
  leading = false;
  (*client)->create(pods, {{"kind", "Pod"}});
  EXPECT_EQ(sent.load(), 4);
  server.stop();
}

}  // namespace
}  // namespace kubedist::controller
