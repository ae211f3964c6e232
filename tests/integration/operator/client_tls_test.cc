// The operator's API client against an HTTPS server of the test's own on 127.0.0.1 (cpprest's listener, certificates
// made with the openssl command): it trusts the cluster's CA and nothing else, takes a rotated CA file for new
// connections, and waits what a server's Retry-After asks before trying again. Against a plain TCP server of its own:
// a write cut off by its deadline resets the connection, so nothing of it reaches the server after the deadline.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/ssl.hpp>
#include <cpprest/http_listener.h>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/trusted_ca.h"

namespace kubedist::kube {
namespace {

namespace fs = std::filesystem;
namespace http = web::http;

void sh(const std::string& command) {
  ASSERT_EQ(std::system((command + " >/dev/null 2>&1").c_str()), 0) << command;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

class ClientTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("kubedist-client-tls-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const std::string d = dir_.string();
    // Two CAs; the server's certificate (for 127.0.0.1) is signed by A.
    for (const char* ca : {"a", "b"}) {
      sh("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=ca-" + std::string(ca) + " -keyout " + d + "/" +
         ca + ".key -out " + d + "/" + ca + ".crt");
    }
    sh("openssl req -newkey rsa:2048 -nodes -subj /CN=apiserver -keyout " + d + "/server.key -out " + d +
       "/server.csr");
    { std::ofstream(dir_ / "san.ext") << "subjectAltName=IP:127.0.0.1\n"; }
    sh("openssl x509 -req -in " + d + "/server.csr -CA " + d + "/a.crt -CAkey " + d + "/a.key -CAcreateserial -days 1 " +
       "-extfile " + d + "/san.ext -out " + d + "/server.crt");
    ca_a_ = slurp(dir_ / "a.crt");
    ca_b_ = slurp(dir_ / "b.crt");

    // The port: bound (SO_REUSEADDR, never listening) until the listener, which sets it too, has it.
    reservation_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(reservation_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(reservation_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ::getsockname(reservation_, reinterpret_cast<sockaddr*>(&addr), &len);
    server_ = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

    http::experimental::listener::http_listener_config config;
    const std::string cert = (dir_ / "server.crt").string(), key = (dir_ / "server.key").string();
    config.set_ssl_context_callback([cert, key](boost::asio::ssl::context& ctx) {
      ctx.use_certificate_chain_file(cert);
      ctx.use_private_key_file(key, boost::asio::ssl::context::pem);
    });
    listener_ = std::make_unique<http::experimental::listener::http_listener>(web::uri(server_), config);
    listener_->support(http::methods::GET, [](http::http_request request) {
      if (request.relative_uri().path() == "/busy" && busy_left_.fetch_sub(1) > 0) {
        http::http_response response(http::status_codes::TooManyRequests);
        response.headers().add("Retry-After", "1");
        response.set_body(R"({"kind": "Status", "reason": "TooManyRequests", "message": "slow down"})",
                          "application/json");
        request.reply(response);
        return;
      }
      request.reply(http::status_codes::OK, R"({"kind": "APIVersions"})", "application/json");
    });
    listener_->open().wait();
    ::close(reservation_);
  }

  static void TearDownTestSuite() {
    listener_->close().wait();
    listener_.reset();
    fs::remove_all(dir_);
  }

  static Result<nlohmann::json> get(Config cfg, const std::string& path = "/api") {
    cfg.server = server_;
    auto client = Client::create(cfg, RetryPolicy{1});
    if (!client) return client.error();
    return (*client)->get(path);
  }

  static inline fs::path dir_;
  static inline std::string server_;
  static inline std::string ca_a_, ca_b_;
  static inline int reservation_ = -1;
  static inline std::atomic<int> busy_left_{0};
  static inline std::unique_ptr<http::experimental::listener::http_listener> listener_;
};

TEST_F(ClientTls, TrustsTheClustersCa) {
  Config cfg;
  cfg.ca_pem = ca_a_;
  auto r = get(cfg);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->value("kind", ""), "APIVersions");
}

// The system's roots are what OpenSSL's default paths hold; SSL_CERT_FILE makes them CA A here. A client given CA B
// must refuse the server although the "system" would vouch for it; with no CA configured it uses those roots.
TEST_F(ClientTls, TrustsTheClustersCaAloneNotTheSystemsRoots) {
  ::setenv("SSL_CERT_FILE", (dir_ / "a.crt").c_str(), 1);
  Config only_b;
  only_b.ca_pem = ca_b_;
  auto refused = get(only_b);
  Config none;
  auto system = get(none);
  ::unsetenv("SSL_CERT_FILE");
  EXPECT_FALSE(refused.ok()) << "a server whose certificate only the system's roots vouch for was trusted";
  EXPECT_TRUE(system.ok()) << "without a CA the system's roots verify (as kubectl): " << system.error().message;
}

TEST_F(ClientTls, TakesARotatedCaFileForNewConnections) {
  const fs::path file = dir_ / "rotating-ca.crt";
  fs::copy_file(dir_ / "b.crt", file, fs::copy_options::overwrite_existing);
  Config cfg;
  cfg.server = server_;
  cfg.ca_pem = ca_b_;
  cfg.ca_file = file.string();
  auto client = Client::create(cfg, RetryPolicy{1});
  ASSERT_TRUE(client.ok()) << client.error().message;
  EXPECT_FALSE((*client)->get("/api").ok()) << "CA B does not vouch for the server";
  // Garbage in the file is not taken: the last good bundle stays.
  { std::ofstream(file) << "not a certificate\n"; }
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(1));
  EXPECT_FALSE((*client)->get("/api").ok());
  // The cluster's CA rotated to A: the same client trusts it from its next connection on.
  fs::copy_file(dir_ / "a.crt", file, fs::copy_options::overwrite_existing);
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(2));
  auto r = (*client)->get("/api");
  EXPECT_TRUE(r.ok()) << r.error().message;
}

TEST_F(ClientTls, WaitsTheServersRetryAfterBeforeTryingAgain) {
  busy_left_ = 1;
  Config cfg;
  cfg.server = server_;
  cfg.ca_pem = ca_a_;
  auto client = Client::create(cfg);  // the default policy: 5 tries, backoff from 100 ms
  ASSERT_TRUE(client.ok());
  const auto start = std::chrono::steady_clock::now();
  auto r = (*client)->get("/busy");
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GE(waited, std::chrono::milliseconds(1000)) << "Retry-After: 1 was not honoured";
  EXPECT_LT(waited, std::chrono::milliseconds(3000));  // 1 s plus at most half of it as jitter, plus the requests
}

// A write whose answer does not come within its deadline is given up with a reset (RST), not a close (FIN): the kernel
// then drops what it still holds of the request instead of sending it on, maybe long after the deadline (on a lossy
// link, once it heals). A leader's write must not land after its lease ran out (controller/lease_fence.h).
TEST(ClientDeadline, AWriteCutOffByItsDeadlineResetsTheConnection) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  Config cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  RetryPolicy once{1};
  once.write_timeout = std::chrono::seconds(1);
  auto client = Client::create(cfg, once);
  ASSERT_TRUE(client.ok()) << client.error().message;
  Result<nlohmann::json> answer = nlohmann::json(nullptr);
  std::thread writer([&] { answer = (*client)->create("/api/v1/namespaces/a/events", {{"kind", "Event"}}); });
  const int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(conn, 0);
  // Read the request, answer nothing, and wait for what the client does at its deadline.
  char buf[4096];
  ssize_t n = 0;
  int err = 0;
  const auto start = std::chrono::steady_clock::now();
  while ((n = ::recv(conn, buf, sizeof buf, 0)) > 0) {
  }
  err = errno;
  const auto waited = std::chrono::steady_clock::now() - start;
  writer.join();
  ::close(conn);
  ::close(listener);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().kind, Error::Kind::kRetryable);
  EXPECT_GE(waited, std::chrono::milliseconds(900));
  ASSERT_EQ(n, -1) << "the client closed with a FIN: what it still held of the request could be sent on later";
  EXPECT_EQ(err, ECONNRESET);
}

}  // namespace
}  // namespace kubedist::kube
