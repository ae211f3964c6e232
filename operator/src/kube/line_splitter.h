// LineSplitter: cuts a byte stream that arrives in chunks of any size (a watch, a followed log) into lines, with a
// bound on a line's length so that a peer that never sends a newline cannot grow our memory without end.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kubedist::kube {

class LineSplitter {
 public:
  // A watch event is one object (etcd keeps at most 1.5 MiB by default); a log line is whatever a program printed.
  static constexpr size_t kDefaultMaxLine = size_t{16} << 20;
  // Told each line, without its "\n" and a "\r" before it; returns false to stop reading.
  using OnLine = std::function<bool(const std::string& line)>;

  explicit LineSplitter(size_t max_line = kDefaultMaxLine) : max_line_(max_line) {}

  // Takes the next bytes of the stream and hands on every line they complete. true: read on; false: on_line asked
  // to stop; an error when a line is longer than max_line (the stream cannot be read on).
  Result<bool> feed(std::string_view bytes, const OnLine& on_line);
  // The stream ended: hands on its last line if it had no newline; the same answers as feed.
  Result<bool> finish(const OnLine& on_line);

 private:
  Error too_long();  // forgets the line in progress

  const size_t max_line_;
  std::string line_;  // the line in progress; its capacity is kept from line to line
};

}  // namespace kubedist::kube
