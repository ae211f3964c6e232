// LogMux: carries workers' redirected/teed output from pipes to log files and to the console as "[rank N]: ...".
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "io/event_loop.h"

namespace kubedist::launcher {

// Pure: splits a byte stream into lines and prefixes each one; keeps a partial last line until more arrives. With
// `only_containing`, only the lines that contain one of those words come out (--duplicate-*-filters).
class LinePrefixer {
 public:
  static constexpr size_t kMaxPartialLine = 64 * 1024;  // held at most; longer goes out as a line
  explicit LinePrefixer(std::string prefix, std::vector<std::string> only_containing = {})
      : prefix_(std::move(prefix)), only_containing_(std::move(only_containing)) {}
  std::string feed(std::string_view chunk);
  std::string finish();  // the partial last line, newline-terminated, or ""

 private:
  bool wanted(std::string_view line) const;
  std::string prefix_;
  std::vector<std::string> only_containing_;
  std::string partial_;
};

bool write_all(int fd, std::string_view data);

class LogMux {
 public:
  explicit LogMux(EventLoop& loop) : loop_(loop) {}
  ~LogMux();
  LogMux(const LogMux&) = delete;
  LogMux& operator=(const LogMux&) = delete;

  // Takes ownership of read_fd, file_fd and filter_fd (-1 for none); console_fd (1 or 2, -1 for none) is
  // borrowed. filter_fd gets the prefixed lines that contain one of `filters` (a file several streams append to).
  void add(int read_fd, int file_fd, int console_fd, const std::string& prefix, int filter_fd = -1,
           const std::vector<std::string>& filters = {});
  // Reads whatever is still buffered in every pipe (used once all workers are gone, before exiting).
  void drain_all();

 private:
  struct Stream {
    int file_fd;
    int console_fd;
    LinePrefixer prefixer;
    int filter_fd;
    LinePrefixer filter;
  };
  int pump(int fd);  // 1: data, 0: EOF or error, -1: nothing now (read end is non-blocking)
  void close_stream(int fd);
  EventLoop& loop_;
  std::map<int, Stream> streams_;
};

}  // namespace kubedist::launcher
