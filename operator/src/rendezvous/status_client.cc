#include "rendezvous/status_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "rendezvous/rdzv_auth.h"

namespace kubedist::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits until fd is ready for `events` or the deadline passes.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

Error fail(const std::string& where, const std::string& what) {
  return Error{Error::Kind::kOther, "rendezvous at " + where + ": " + what, 0};
}

// One request line to ip:port and its one answer line, signed and checked with a secret (see the header).
Result<std::string> exchange(const std::string& ip, int port, std::chrono::milliseconds timeout,
                             const std::string& secret, const std::string& request_line) {
  const std::string where = ip + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (port <= 0 || port > 65535 || ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    return fail(where, "not an IPv4 address and port");
  }
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return fail(where, std::strerror(errno));
  const auto deadline = Clock::now() + timeout;
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    return fail(where, std::strerror(errno));
  }
  if (!wait_for(fd.get(), POLLOUT, deadline)) return fail(where, "connect timed out");
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return fail(where, std::strerror(err));
  std::string in;
  auto read_line = [&]() -> Result<std::string> {
    while (in.find('\n') == std::string::npos) {
      if (in.size() > 4096) return fail(where, "answer longer than 4096 bytes");
      if (!wait_for(fd.get(), POLLIN, deadline)) return fail(where, "no answer within " + std::to_string(timeout.count()) + "ms");
      char buf[512];
      const ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n == 0) return fail(where, "connection closed before an answer");
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return fail(where, std::strerror(errno));
      }
      in.append(buf, static_cast<size_t>(n));
    }
    const size_t nl = in.find('\n');
    std::string line = in.substr(0, nl);
    in.erase(0, nl + 1);
    return line;
  };
  std::string challenge;
  if (!secret.empty()) {
    auto hello = read_line();
    if (!hello) return hello.error();
    auto parsed = parse_rdzv_hello(*hello);
    if (!parsed) return fail(where, parsed.error().message);
    challenge = *parsed;
  }
  const std::string request = secret.empty() ? request_line + "\n" : seal_rdzv_request(secret, challenge, 1, request_line);
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    return fail(where, "cannot send the request");
  }
  auto answer = read_line();
  if (!answer) return answer.error();
  std::string line = *answer;
  if (!secret.empty()) {
    auto plain = open_rdzv_reply(secret, challenge, 1, *answer);
    if (!plain) return fail(where, plain.error().message);
    line = *plain;
  }
  return line;
}

}  // namespace

Result<contract::StatusReport> query_status(const std::string& ip, int port, std::chrono::milliseconds timeout,
                                            const std::string& secret) {
  auto line = exchange(ip, port, timeout, secret, contract::kStatusVerb);
  if (!line) return line.error();
  contract::ParsedStatusLine parsed = contract::parse_status_line(*line);
  if (!parsed.report) return Error::invalid(parsed.error);
  return *parsed.report;
}

Result<contract::ReleaseAnswer> send_release(const std::string& ip, int port, std::chrono::milliseconds timeout,
                                             const std::string& secret, const contract::ReleaseNotice& notice) {
  auto line = exchange(ip, port, timeout, secret, contract::encode_release(notice));
  if (!line) return line.error();
  auto answer = contract::parse_release_answer(*line);
  if (!answer || answer->node_rank != notice.node_rank) {
    return Error::invalid("node 0 answered the release of node rank " + std::to_string(notice.node_rank) + " with '" +
                          line->substr(0, 200) + "' (a launcher older than notices answers none)");
  }
  return *answer;
}

}  // namespace kubedist::rendezvous
