// LogMux: carries workers' redirected/teed output from pipes to log files and to the console as "[rank N]: ...".
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "io/event_loop.h"

namespace kubedist::launcher {

// Pure: splits a byte stream into lines and prefixes each one; keeps a partial last line until more arrives.
class LinePrefixer {
 public:
  static constexpr size_t kMaxPartialLine = 64 * 1024;  // held at most; longer goes out as a line
  explicit LinePrefixer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string feed(std::string_view chunk);
  std::string finish();  // the partial last line, newline-terminated, or ""

 private:
  std::string prefix_;
  std::string partial_;
};

bool write_all(int fd, std::string_view data);

class LogMux {
 public:
  explicit LogMux(EventLoop& loop) : loop_(loop) {}
  ~LogMux();
  LogMux(const LogMux&) = delete;
  LogMux& operator=(const LogMux&) = delete;

  // Takes ownership of read_fd and file_fd (-1 for none); console_fd (1 or 2, -1 for none) is borrowed.
  void add(int read_fd, int file_fd, int console_fd, const std::string& prefix);
  // Reads whatever is still buffered in every pipe (used once all workers are gone, before exiting).
  void drain_all();

 private:
  struct Stream {
    int file_fd;
    int console_fd;
    LinePrefixer prefixer;
  };
  int pump(int fd);  // 1: data, 0: EOF or error, -1: nothing now (read end is non-blocking)
  void close_stream(int fd);
  EventLoop& loop_;
  std::map<int, Stream> streams_;
};

}  // namespace kubedist::launcher
