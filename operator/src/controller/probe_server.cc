#include "controller/probe_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cpprest/http_listener.h>

namespace kubedist::controller {
namespace {

namespace http = web::http;

// http_listener binds the port it is given and cannot say which one the kernel chose for port 0. So for port 0 we
// bind a socket of our own to a free port (SO_REUSEADDR, never listening) and hand that port to the listener,
// whose acceptor also sets SO_REUSEADDR: the port is ours from bind to listen, with no window for another process.
class PortReservation {
 public:
  ~PortReservation() {
    if (fd_ >= 0) ::close(fd_);
  }
  // The reserved port, or an error message.
  Result<int> reserve(const sockaddr_in& where) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd_ < 0 || ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        ::bind(fd_, reinterpret_cast<const sockaddr*>(&where), sizeof where) != 0) {
      return Error::invalid(std::strerror(errno));
    }
    sockaddr_in bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &len) != 0) return Error::invalid(std::strerror(errno));
    return static_cast<int>(ntohs(bound.sin_port));
  }

 private:
  int fd_ = -1;
};

}  // namespace

struct ProbeServer::Listener {
  explicit Listener(const std::string& uri) : listener(web::uri(uri)) {}
  http::experimental::listener::http_listener listener;
};

ProbeServer::ProbeServer() = default;
ProbeServer::~ProbeServer() { stop(); }

Result<void> ProbeServer::start(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return Error::invalid("probe address \"" + address + "\" must be host:port");
  std::string host = address.substr(0, colon);
  int port = -1;
  try {
    port = std::stoi(address.substr(colon + 1));
  } catch (...) {
  }
  if (port < 0 || port > 65535) return Error::invalid("probe address \"" + address + "\" has no valid port");
  if (host.empty()) host = "0.0.0.0";
  if (host == "localhost") host = "127.0.0.1";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Error::invalid("probe address \"" + address + "\": host must be an IPv4 address");
  }
  PortReservation reservation;  // held until the listener listens
  if (port == 0) {
    auto reserved = reservation.reserve(addr);
    if (!reserved) return Error::invalid("cannot listen on " + address + ": " + reserved.error().message);
    port = *reserved;
  }
  try {
    listener_ = std::make_unique<Listener>("http://" + host + ":" + std::to_string(port));
    // Only GET is supported: the listener answers other methods 405 itself.
    listener_->listener.support(http::methods::GET, [this](http::http_request request) {
      auto it = handlers_.find(request.relative_uri().path());
      if (it == handlers_.end()) {
        request.reply(http::status_codes::NotFound, "not found\n", "text/plain");
        return;
      }
      auto [code, body] = it->second();
      request.reply(static_cast<http::status_code>(code), body, "text/plain");
    });
    listener_->listener.open().wait();
  } catch (const std::exception& e) {
    listener_.reset();
    return Error::invalid("cannot listen on " + address + ": " + e.what());
  }
  port_ = port;
  return {};
}

void ProbeServer::stop() {
  if (!listener_) return;
  try {
    listener_->listener.close().wait();
  } catch (const std::exception&) {  // closing a listener that failed: nothing left to release
  }
  listener_.reset();
}

}  // namespace kubedist::controller
