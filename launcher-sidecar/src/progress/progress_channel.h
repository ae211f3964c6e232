// ProgressChannel: where this node's workers send their progress reports: one Unix datagram socket per local rank
// in Linux's abstract namespace ("@kubedist-progress-<launcher pid>-<local rank>"), so that a report names its
// rank by where it arrives and nothing needs a writable directory. Datagrams keep each report whole; a worker
// never waits on them (the helper sends without blocking and drops what the full queue refuses), and the launcher
// holds at most the kernel's socket buffer.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "io/event_loop.h"
#include "util/result.h"

namespace kubedist::launcher {

class ProgressChannel {
 public:
  // on_report(local rank, the datagram (cut to kMaxReportBytes + 1), its real size).
  using OnReport = std::function<void(int, std::string_view, size_t)>;
  ProgressChannel(EventLoop& loop, OnReport on_report) : loop_(loop), on_report_(std::move(on_report)) {}
  ~ProgressChannel();
  ProgressChannel(const ProgressChannel&) = delete;
  ProgressChannel& operator=(const ProgressChannel&) = delete;

  // Sockets for local ranks 0..n-1 (more than before: the new ones are added); an error leaves reporting off.
  Result<bool> open(int local_ranks);
  // The KUBEDIST_PROGRESS value of local_rank ("" when it has no socket).
  std::string address(int local_rank) const;

 private:
  void drain(int local_rank);
  EventLoop& loop_;
  OnReport on_report_;
  std::vector<int> fds_;
  std::vector<std::string> names_;
};

}  // namespace kubedist::launcher
