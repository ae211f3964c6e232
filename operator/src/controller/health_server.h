// A minimal HTTP server for /healthz and /readyz (and, later, /metrics) on the operator's probe address.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "common/result.h"

namespace kubedist::controller {

class HealthServer {
 public:
  // A handler returns the HTTP status and body for a GET of its path.
  using Handler = std::function<std::pair<int, std::string>()>;

  HealthServer() = default;
  ~HealthServer() { stop(); }

  void handle(const std::string& path, Handler handler) { handlers_[path] = std::move(handler); }
  // address: "host:port" (":8081" = all interfaces, port 0 = any free port).
  Result<void> start(const std::string& address);
  void stop();
  int port() const { return port_; }

 private:
  void serve();
  void answer(int fd);

  std::map<std::string, Handler> handlers_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace kubedist::controller
