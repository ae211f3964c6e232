// How the API client waits before trying again (Retry-After, backoff, jitter) and what it takes for a CA bundle.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "kube/client.h"
#include "kube/trusted_ca.h"

namespace kubedist::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(RetryDelay, BacksOffFromTheInitialDelayUpToTheMaximumWithoutRetryAfter) {
  const RetryPolicy policy;  // 100 ms doubling to 3 s
  EXPECT_EQ(retry_delay(1, std::nullopt, policy, 0), milliseconds(100));
  EXPECT_EQ(retry_delay(2, std::nullopt, policy, 0), milliseconds(200));
  EXPECT_EQ(retry_delay(4, std::nullopt, policy, 0), milliseconds(800));
  EXPECT_EQ(retry_delay(30, std::nullopt, policy, 0), milliseconds(3000));
}

TEST(RetryDelay, HonoursTheServersRetryAfterEvenPastTheBackoffMaximumUpToItsOwnBound) {
  const RetryPolicy policy;
  EXPECT_EQ(retry_delay(1, seconds(1), policy, 0), milliseconds(1000));    // longer than the 100 ms backoff
  EXPECT_EQ(retry_delay(1, seconds(20), policy, 0), milliseconds(20000));  // longer than the 3 s maximum
  EXPECT_EQ(retry_delay(1, seconds(3600), policy, 0), milliseconds(60000));  // a broken server cannot stall us
  EXPECT_EQ(retry_delay(1, seconds(0), policy, 0), milliseconds(0));
}

TEST(RetryDelay, AddsUpToHalfAgainAsJitterSoThatClientsTurnedAwayTogetherSpreadOut) {
  const RetryPolicy policy;
  EXPECT_EQ(retry_delay(1, seconds(2), policy, 0.5), milliseconds(2500));
  EXPECT_EQ(retry_delay(1, seconds(2), policy, 0.999), milliseconds(2999));
  EXPECT_EQ(retry_delay(3, std::nullopt, policy, 1.0), milliseconds(600));
  std::set<int64_t> seen;
  for (int i = 0; i < 10; ++i) seen.insert(retry_delay(1, seconds(1), policy, i / 10.0).count());
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(*seen.begin(), 1000);
  EXPECT_LT(*seen.rbegin(), 1500);
}

TEST(ParseRetryAfter, TakesWholeSecondsAndNothingElse) {
  EXPECT_EQ(parse_retry_after("1"), milliseconds(1000));
  EXPECT_EQ(parse_retry_after("120"), milliseconds(120000));
  for (const char* bad : {"", "-1", "1.5", " 1", "Wed, 21 Oct 2015 07:28:00 GMT", "99999999999", "x"}) {
    EXPECT_EQ(parse_retry_after(bad), std::nullopt) << bad;
  }
}

TEST(IsCaBundle, RefusesWhatHoldsNoCertificate) {
  EXPECT_FALSE(is_ca_bundle(""));
  EXPECT_FALSE(is_ca_bundle("not a certificate\n"));
  EXPECT_FALSE(is_ca_bundle("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"));
}

}  // namespace
}  // namespace kubedist::kube
