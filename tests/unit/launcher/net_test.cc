#include "io/net.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace kubedist::launcher {
namespace {

// bind() of a new socket to 0.0.0.0:port (SO_REUSEADDR as a TCPStore sets it, or not) then listen(): 0 or errno.
int bind_and_listen(int port, bool reuse, int* fd_out) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  int err = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(fd, 4) != 0) err = errno;
  if (err != 0 || fd_out == nullptr) {
    close(fd);
  } else {
    *fd_out = fd;
  }
  return err;
}

TEST(PortReservation, HoldsAFreePortAgainstPlainBindsUntilReleased) {
  int port = 0;
  {
    auto held = PortReservation::take("");
    ASSERT_TRUE(held) << held.error();
    port = held->port();
    ASSERT_GT(port, 0);
    EXPECT_EQ(bind_and_listen(port, false, nullptr), EADDRINUSE);
  }
  EXPECT_EQ(bind_and_listen(port, false, nullptr), 0);
}

TEST(PortReservation, LetsAServerWithSoReuseaddrListenOnItAndTakeConnections) {
  auto held = PortReservation::take("");
  ASSERT_TRUE(held) << held.error();
  int server = -1;
  ASSERT_EQ(bind_and_listen(held->port(), true, &server), 0);
  int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(held->port()));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << errno;
  int accepted = accept(server, nullptr, nullptr);
  EXPECT_GE(accepted, 0);
  close(accepted);
  close(client);
  close(server);
}

TEST(PortReservation, MovesTheHoldAndRefusesAnAddressThatIsNotIpv4) {
  auto held = PortReservation::take("127.0.0.1");
  ASSERT_TRUE(held) << held.error();
  const int port = held->port();
  PortReservation moved = std::move(held.value());
  EXPECT_EQ(moved.port(), port);
  EXPECT_EQ(held->port(), 0);
  PortReservation other;
  other = std::move(moved);
  EXPECT_EQ(other.port(), port);
  auto bad = PortReservation::take("node-0.example");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "cannot reserve a port on 'node-0.example': not an IPv4 address");
}

}  // namespace
}  // namespace kubedist::launcher
