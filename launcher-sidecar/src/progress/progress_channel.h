// ProgressChannel: where this node's workers send their progress reports: one Unix datagram socket per local rank
// in Linux's abstract namespace ("@kubedist-progress-<launcher pid>-<local rank>"), so that a report names its
// rank by where it arrives and nothing needs a writable directory. Datagrams keep each report whole; a worker
// never waits on them (the helper sends without blocking and drops what the full queue refuses), and the launcher
// holds at most the kernel's socket buffer.
#pragma once

#include <sys/types.h>

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
  // sender_ok(local rank, the sender's pid as this PID namespace sees it; 0 when it sees none): whether a report
  // to that rank's socket comes from that rank's worker. The abstract namespace is the network namespace's, so
  // another container of the pod or, with hostNetwork, any process of the node can send there too; the kernel
  // tells the sender (SO_PASSCRED). A report sender_ok refuses goes to on_foreign(local rank, pid) instead.
  using SenderOk = std::function<bool(int, pid_t)>;
  using OnForeign = std::function<void(int, pid_t)>;
  ProgressChannel(EventLoop& loop, OnReport on_report, SenderOk sender_ok = nullptr, OnForeign on_foreign = nullptr)
      : loop_(loop),
        on_report_(std::move(on_report)),
        sender_ok_(std::move(sender_ok)),
        on_foreign_(std::move(on_foreign)) {}
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
  SenderOk sender_ok_;
  OnForeign on_foreign_;
  std::vector<int> fds_;
  std::vector<std::string> names_;
};

}  // namespace kubedist::launcher
