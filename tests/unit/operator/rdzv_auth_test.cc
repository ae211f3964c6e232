// The operator's side of the rendezvous' signed lines; bad addresses fail before any network use.
#include "rendezvous/rdzv_auth.h"

#include <gtest/gtest.h>

#include "rendezvous/status_client.h"

namespace kubedist::rendezvous {
namespace {

TEST(QueryStatus, ABadAddressIsRefusedWithoutConnecting) {
  auto r = query_status("not-an-ip", 1234, std::chrono::milliseconds(100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "rendezvous at not-an-ip:1234: not an IPv4 address and port");
  EXPECT_FALSE(query_status("10.0.0.1", 70000, std::chrono::milliseconds(100)).ok());
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

TEST(RdzvAuth, DerivesAJobsSecretFromTheNamespacesAsTheLaunchersInitContainerDoes) {
  // Known answer (Python: hmac.new(key, b"kubedist-rdzv-job-1 " + uid, hashlib.sha256).hexdigest()); the launcher's
  // own HMAC is checked against the same formula by launcher.integration.install.
  const std::string uid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
  EXPECT_EQ(derive_job_secret("0123456789abcdef-ns-secret", uid),
            "e432e30ce4bef80c3b2ed3c83bb8b0b467d35c080b49f2ad2a538d07f4889ed8");
  EXPECT_NE(derive_job_secret("0123456789abcdef-ns-secret", "another-uid"), derive_job_secret("0123456789abcdef-ns-secret", uid));
  EXPECT_NE(derive_job_secret("another namespace's secret", uid), derive_job_secret("0123456789abcdef-ns-secret", uid));
}

TEST(RdzvAuth, FingerprintsAJobsSecretAsTheLauncherChecksIt) {
  // The launcher's own HMAC gives the same (unit SecretFingerprint.MatchesTheOperatorsKnownAnswer).
  EXPECT_EQ(job_secret_fingerprint("job secret from the old key"), "71b6637ed5274854");
  EXPECT_EQ(job_secret_fingerprint("job secret from the old key").find(rdzv_key_fingerprint("job secret from the old key")),
            std::string::npos);
}

}  // namespace
}  // namespace kubedist::rendezvous
