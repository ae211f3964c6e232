#include "workers/failure_summary.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "io/log_mux.h"

namespace kubedist::launcher {

std::string error_file_message(const std::string& text) {
  auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return "";
  auto message = json.find("message");
  if (message == json.end()) return "";
  if (message->is_object()) {
    auto inner = message->find("message");
    if (inner == message->end()) return "";
    message = inner;
  }
  if (!message->is_string()) return "";
  const std::string& s = message->get_ref<const std::string&>();
  return s.substr(0, s.find('\n'));
}

std::string one_line(const std::string& text, std::size_t max_bytes) {
  std::string line = text;
  for (char& c : line)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (line.size() <= max_bytes) return line;
  std::size_t cut = max_bytes;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so that no character is cut in half.
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return line.substr(0, cut);
}

std::string failure_summary(const WorkerExit& e, const std::string& host, const std::string& error_file_json) {
  std::string line = "rank " + std::to_string(e.rank) + " (local rank " + std::to_string(e.local_rank) + ") on " +
                     host + " ";
  if (e.signal) {
    const char* abbrev = sigabbrev_np(e.signal);
    line += "was killed by signal " + (abbrev ? "SIG" + std::string(abbrev) : std::to_string(e.signal));
  } else {
    line += "exited with code " + std::to_string(e.exit_code);
  }
  std::string message = error_file_message(error_file_json);
  if (!message.empty()) line += ": " + message;
  return one_line(line);
}

std::string final_status_line(contract::StatusReport report) {
  if (report.progress) {
    report.progress->hang_message.clear();
    report.progress->hang_age_ms = 0;
  }
  std::string line = contract::encode_status_line(report);
  if (line.size() > kFinalStatusMax && report.progress) {
    report.progress->metrics.clear();
    line = contract::encode_status_line(report);
  }
  while (!line.empty() && line.back() == '\n') line.pop_back();
  return line.size() <= kFinalStatusMax ? line : "";
}

Result<bool> write_termination_log(const std::string& path, const std::string& line) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error("cannot write the termination log " + path + ": " + std::strerror(errno));
  bool ok = write_all(fd, line);
  int err = errno;
  close(fd);
  if (!ok) return make_error("cannot write the termination log " + path + ": " + std::strerror(err));
  return true;
}

}  // namespace kubedist::launcher
