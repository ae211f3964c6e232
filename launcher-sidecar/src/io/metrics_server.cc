#include "io/metrics_server.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>


namespace kubedist::launcher {
namespace {
constexpr size_t kMaxRequest = 16384;  // a request head; anything longer is no scrape
}  // namespace

std::string http_response_for(const std::string& head, const LauncherMetrics& metrics) {
  auto reply = [](const std::string& status, const std::string& type, const std::string& body) {
    return "HTTP/1.0 " + status + "\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
  };
  const std::string line = head.substr(0, head.find('\r'));
  if (line.rfind("GET ", 0) != 0) return reply("405 Method Not Allowed", "text/plain", "only GET\n");
  std::string path = line.substr(4, line.find(' ', 4) == std::string::npos ? std::string::npos : line.find(' ', 4) - 4);
  path = path.substr(0, path.find('?'));
  if (path == "/metrics") return reply("200 OK", "text/plain; version=0.0.4; charset=utf-8", render_metrics(metrics));
  return reply("404 Not Found", "text/plain", "try /metrics\n");
}

MetricsServer::~MetricsServer() {
  while (!clients_.empty()) close_client(clients_.begin()->first);
}

Result<bool> MetricsServer::listen(const std::string& addr, int port) {
  auto ok = listener_.open(addr, port, [this](int c, std::uint32_t source) { accept_client(c, source); });
  if (!ok) return make_error("metrics: " + ok.error());
  return true;
}

void MetricsServer::accept_client(int fd, std::uint32_t source) {
  const Admission::Decision d = admission_.arrive(source);
  if (d.evict) close_client(*d.evict);
  if (!d.admit) {
    close(fd);
    return;
  }
  admission_.add(fd, source, Admission::Clock::now());
  Client& c = clients_[fd];
  c.timer = loop_.after(kClientTimeout, [this, fd] {
    clients_[fd].timer = 0;
    close_client(fd);
  });
  loop_.watch(fd, EPOLLIN, [this, fd](std::uint32_t ev) { on_client(fd, ev); });
}

void MetricsServer::on_client(int fd, std::uint32_t events) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = it->second;
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c.answered) {
    char buf[2048];
    ssize_t n = -1;
    while (c.in.size() <= kMaxRequest && (n = read(fd, buf, sizeof buf)) > 0) c.in.append(buf, static_cast<size_t>(n));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || c.in.size() > kMaxRequest) return close_client(fd);
    if (c.in.find("\r\n\r\n") == std::string::npos && c.in.find("\n\n") == std::string::npos) return;
    c.out = http_response_for(c.in, metrics_);
    c.answered = true;
  }
  if (c.answered) {
    ssize_t n = send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) c.out.erase(0, static_cast<size_t>(n));
    if (c.out.empty() || (n < 0 && errno != EAGAIN)) return close_client(fd);
    loop_.modify(fd, EPOLLOUT);
  }
}

void MetricsServer::close_client(int fd) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  if (it->second.timer) loop_.cancel(it->second.timer);
  admission_.remove(fd);
  loop_.unwatch(fd);
  close(fd);
  clients_.erase(fd);
}

}  // namespace kubedist::launcher
