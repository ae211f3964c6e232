// MetricsServer: a minimal HTTP/1.0 server on the event loop answering GET /metrics in Prometheus text format.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "io/admission.h"
#include "io/event_loop.h"
#include "io/listener.h"
#include "io/metrics.h"
#include "util/result.h"

namespace kubedist::launcher {

// Pure: the whole HTTP response for a request head ("GET /metrics HTTP/1.1\r\n...").
std::string http_response_for(const std::string& request_head, const LauncherMetrics& metrics);

// It shares the launcher's event loop with the rendezvous, so whatever reaches the port is bounded: at most
// kMaxClients connections (a newcomer pushes out the oldest of the address holding the most, see admission.h),
// kClientTimeout from accept to the answer sent, and a request head of at most 16 KiB.
class MetricsServer {
 public:
  static constexpr size_t kMaxClients = 32;
  static constexpr std::chrono::milliseconds kClientTimeout{10000};
  MetricsServer(EventLoop& loop, const LauncherMetrics& metrics)
      : loop_(loop), metrics_(metrics), admission_({kMaxClients, 0}), listener_(loop) {}
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  Result<bool> listen(const std::string& addr, int port);  // addr "" for any address; port 0 for any free port
  int port() const { return listener_.port(); }

 private:
  struct Client {
    std::string in;
    std::string out;
    bool answered = false;
    EventLoop::TimerId timer = 0;
  };
  void accept_client(int fd, std::uint32_t source);
  void on_client(int fd, std::uint32_t events);
  void close_client(int fd);
  EventLoop& loop_;
  const LauncherMetrics& metrics_;
  std::map<int, Client> clients_;
  Admission admission_;
  Listener listener_;
};

}  // namespace kubedist::launcher
