// ProbeServer: answers GETs of a few paths (/healthz, /readyz, /metrics) on the probe address, served by
// cpprestsdk's http_listener.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "common/result.h"

namespace kubedist::controller {

class ProbeServer {
 public:
  // A handler returns the HTTP status and the (text/plain) body for a GET of its path.
  using Handler = std::function<std::pair<int, std::string>()>;

  ProbeServer();
  ~ProbeServer();

  // Call before start().
  void handle(const std::string& path, Handler handler) { handlers_[path] = std::move(handler); }
  // address: "host:port" with an IPv4 host (":8081" or "0.0.0.0:8081": all interfaces; port 0: a free port).
  Result<void> start(const std::string& address);
  void stop();
  int port() const { return port_; }  // the port listened on (the chosen one for port 0)

 private:
  struct Listener;
  std::map<std::string, Handler> handlers_;
  std::unique_ptr<Listener> listener_;
  int port_ = 0;
};

}  // namespace kubedist::controller
