// How the API client waits before trying again (Retry-After, backoff, jitter) and what it takes for a CA bundle.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include "kube/client.h"
#include "kube/trusted_ca.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/ssl/context.hpp>

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

TEST(ClientCreate, RefusesAnApiServerAddressWithoutAHostOrWithABadPort) {
  for (const char* bad : {"https://", "https://:6443", "https://host:", "https://host:x", "https://host:70000",
                          "https://host:0", "https://[::1", "https://[::1]x", "https://user@host", "ftp://host"}) {
    Config config;
    config.server = bad;
    EXPECT_FALSE(Client::create(config).ok()) << bad;
  }
  for (const char* good : {"https://10.0.0.1:6443", "http://localhost", "https://[::1]:6443",
                           "https://kubernetes.default.svc/prefix/"}) {
    Config config;
    config.server = good;
    auto client = Client::create(config);
    EXPECT_TRUE(client.ok()) << good << ": " << client.error().message;
  }
}

TEST(ClientDeadline, ANewConnectionsConnectCountsAgainstTheSameDeadlineAsItsRequest) {
  // A listener whose accept queue (backlog 0) holds one connection already: the client's SYN is dropped and sent
  // again by the kernel 1 s later, when the queue has room (the filler accepted at 0.3 s), so its connect takes
  // about 1 s; then the request gets no answer. With a 2 s deadline the call must end at 2 s, not 1 + 2.
  const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(listen(server, 0), 0);
  socklen_t len = sizeof sa;
  getsockname(server, reinterpret_cast<sockaddr*>(&sa), &len);
  const int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(filler, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  int accepted = -1;
  std::thread room([&] {
    std::this_thread::sleep_for(milliseconds(300));
    accepted = accept(server, nullptr, nullptr);
  });
  Config config;
  config.server = "http://127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  RetryPolicy retry;
  retry.attempts = 1;
  retry.timeout = seconds(2);
  retry.write_timeout = seconds(2);
  auto client = Client::create(config, retry);
  ASSERT_TRUE(client) << client.error().message;
  const auto start = std::chrono::steady_clock::now();
  const auto r = (*client)->merge_patch("/api/v1/namespaces/a/events/e", {{"count", 2}});
  const auto took = std::chrono::steady_clock::now() - start;
  room.join();
  EXPECT_FALSE(r.ok());
  EXPECT_GE(took, milliseconds(1900));
  EXPECT_LT(took, milliseconds(2700)) << "the connect's second came on top of the request's deadline";
  close(accepted);
  close(filler);
  close(server);
}

TEST(IsCaBundle, RefusesWhatHoldsNoCertificate) {
  EXPECT_FALSE(is_ca_bundle(""));
  EXPECT_FALSE(is_ca_bundle("not a certificate\n"));
  EXPECT_FALSE(is_ca_bundle("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"));
}

// How many certificates a fresh TLS context holds once filled as the client fills it for each new connection.
int default_roots_loaded() {
  boost::asio::ssl::context ctx(boost::asio::ssl::context::sslv23);
  ctx.set_default_verify_paths();
  STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx.native_handle()));
  return sk_X509_OBJECT_num(objects);
}

TEST(LeaveSystemRootsUnloaded, NewTlsContextsReadNoSystemRoots) {
  const char* file = std::getenv("SSL_CERT_FILE");
  const char* dir = std::getenv("SSL_CERT_DIR");
  const std::string saved_file = file ? file : "", saved_dir = dir ? dir : "";
  const int before = default_roots_loaded();
  leave_system_roots_unloaded();
  const int after = default_roots_loaded();
  // Put the environment back for the tests after this one.
  if (file) ::setenv("SSL_CERT_FILE", saved_file.c_str(), 1); else ::unsetenv("SSL_CERT_FILE");
  if (dir) ::setenv("SSL_CERT_DIR", saved_dir.c_str(), 1); else ::unsetenv("SSL_CERT_DIR");
  if (before == 0) GTEST_SKIP() << "this machine has no system CA bundle to leave unloaded";
  EXPECT_EQ(after, 0) << "the system's " << before << " roots were still loaded";
}

}  // namespace
}  // namespace kubedist::kube
