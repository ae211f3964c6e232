// ProbeServer on 127.0.0.1 with a port the kernel chooses: what a probe or a Prometheus scrape gets back.
#include "controller/probe_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace kubedist::controller {
namespace {

// One HTTP/1.0 request to 127.0.0.1:port; the whole response, or "" when nothing answered.
std::string request(int port, const std::string& method, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return response;
}

std::string status_line(const std::string& response) { return response.substr(0, response.find("\r\n")); }
std::string body(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

TEST(ProbeServer, ServesEachPathsHandlerOnTheChosenPort) {
  ProbeServer server;
  server.handle("/healthz", [] { return std::pair<int, std::string>{200, "ok\n"}; });
  server.handle("/readyz", [] { return std::pair<int, std::string>{503, "caches syncing\n"}; });
  ASSERT_TRUE(server.start("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);

  const auto healthz = request(server.port(), "GET", "/healthz");
  EXPECT_NE(status_line(healthz).find(" 200 "), std::string::npos) << healthz;
  EXPECT_EQ(body(healthz), "ok\n");
  const auto readyz = request(server.port(), "GET", "/readyz?verbose");
  EXPECT_NE(status_line(readyz).find(" 503 "), std::string::npos) << readyz;
  EXPECT_EQ(body(readyz), "caches syncing\n");
  EXPECT_NE(status_line(request(server.port(), "GET", "/nothing")).find(" 404 "), std::string::npos);
  EXPECT_NE(status_line(request(server.port(), "POST", "/healthz")).find(" 405 "), std::string::npos);
}

TEST(ProbeServer, StopsListeningWhenStopped) {
  ProbeServer server;
  server.handle("/healthz", [] { return std::pair<int, std::string>{200, "ok\n"}; });
  ASSERT_TRUE(server.start("127.0.0.1:0").ok());
  const int port = server.port();
  server.stop();
  EXPECT_EQ(request(port, "GET", "/healthz"), "");
}

TEST(ProbeServer, RefusesAPortInUse) {
  ProbeServer first;
  ASSERT_TRUE(first.start("127.0.0.1:0").ok());
  ProbeServer second;
  const auto r = second.start("127.0.0.1:" + std::to_string(first.port()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot listen on 127.0.0.1:"), std::string::npos) << r.error().message;
}

TEST(ProbeServer, RefusesAddressesItCannotListenOn) {
  for (const std::string address : {"8081", "127.0.0.1:http", "127.0.0.1:70000", "example.org:8081"}) {
    ProbeServer server;
    EXPECT_FALSE(server.start(address).ok()) << address;
  }
}

}  // namespace
}  // namespace kubedist::controller
