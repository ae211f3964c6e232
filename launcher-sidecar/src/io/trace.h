// EventTrace: for benchmarks (--rdzv-trace PATH), one line per rendezvous step this node takes, appended to a file
// that every launcher of a run may share: "<unix time in ns> <node rank> <event>". Off, and free, without a path.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace kubedist::launcher {

class EventTrace {
 public:
  EventTrace() = default;
  // Opens PATH for appending (created 0644 when absent), or says why it cannot.
  static Result<EventTrace> open(const std::string& path, int node_rank);
  EventTrace(EventTrace&& other) noexcept;
  EventTrace& operator=(EventTrace&& other) noexcept;
  EventTrace(const EventTrace&) = delete;
  EventTrace& operator=(const EventTrace&) = delete;
  ~EventTrace();
  // One write() of one short line with O_APPEND: lines of several launchers never interleave.
  void stamp(std::string_view event) const;

 private:
  int fd_ = -1;
  int node_rank_ = 0;
};

}  // namespace kubedist::launcher
