#include "io/log_mux.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

namespace kubedist::launcher {

std::string LinePrefixer::feed(std::string_view chunk) {
  std::string out;
  size_t start = 0;
  while (start < chunk.size()) {
    size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) {
      partial_.append(chunk.substr(start));
      // A worker that never ends a line (a progress bar redrawn with '\r') must not grow the launcher without
      // bound: a partial line that long goes out as a line of its own.
      if (partial_.size() >= kMaxPartialLine) out += finish();
      break;
    }
    partial_.append(chunk.substr(start, nl - start + 1));
    if (wanted(partial_)) {
      out += prefix_;
      out += partial_;
    }
    partial_.clear();
    start = nl + 1;
  }
  return out;
}

std::string LinePrefixer::finish() {
  if (partial_.empty()) return "";
  std::string out = wanted(partial_) ? prefix_ + partial_ + "\n" : "";
  partial_.clear();
  return out;
}

bool LinePrefixer::wanted(std::string_view line) const {
  if (only_containing_.empty()) return true;
  for (const auto& word : only_containing_)
    if (line.find(word) != std::string_view::npos) return true;
  return false;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

LogMux::~LogMux() {
  while (!streams_.empty()) close_stream(streams_.begin()->first);
}

void LogMux::add(int read_fd, int file_fd, int console_fd, const std::string& prefix, int filter_fd,
                 const std::vector<std::string>& filters) {
  streams_.emplace(read_fd, Stream{file_fd, console_fd, LinePrefixer(prefix), filter_fd, LinePrefixer(prefix, filters)});
  loop_.watch(read_fd, EPOLLIN, [this, read_fd](std::uint32_t) {
    if (pump(read_fd) == 0) loop_.defer([this, read_fd] { close_stream(read_fd); });
  });
}

int LogMux::pump(int fd) {
  auto it = streams_.find(fd);
  if (it == streams_.end()) return 0;
  char buf[16384];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return -1;
  if (n <= 0) return 0;
  Stream& s = it->second;
  std::string_view chunk(buf, static_cast<size_t>(n));
  if (s.file_fd >= 0) write_all(s.file_fd, chunk);
  if (s.console_fd >= 0) write_all(s.console_fd, s.prefixer.feed(chunk));
  // Whole lines in one write each: several workers' streams append to the same file (O_APPEND) without tearing.
  if (s.filter_fd >= 0) write_all(s.filter_fd, s.filter.feed(chunk));
  return 1;
}

void LogMux::close_stream(int fd) {
  auto it = streams_.find(fd);
  if (it == streams_.end()) return;
  if (it->second.console_fd >= 0) write_all(it->second.console_fd, it->second.prefixer.finish());
  if (it->second.file_fd >= 0) close(it->second.file_fd);
  if (it->second.filter_fd >= 0) {
    write_all(it->second.filter_fd, it->second.filter.finish());
    close(it->second.filter_fd);
  }
  loop_.unwatch(fd);
  close(fd);
  streams_.erase(it);
}

void LogMux::drain_all() {
  for (auto it = streams_.begin(); it != streams_.end();) {
    int fd = it->first;
    ++it;
    while (pump(fd) > 0) {
    }
    close_stream(fd);
  }
}

}  // namespace kubedist::launcher
