#include "trainingjob/launcher_poller.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <set>

#include "common/log.h"
#include "trainingjob/parse.h"
#include "trainingjob/rdzv_auth.h"
#include "trainingjob/render.h"

namespace kubedist::trainingjob {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits until fd is ready for `events` or the deadline passes.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

Error fail(const std::string& where, const std::string& what) {
  return Error{Error::Kind::kOther, "rendezvous STATUS from " + where + ": " + what, 0};
}

}  // namespace

Result<LauncherReport> query_launcher(const std::string& ip, int port, std::chrono::milliseconds timeout,
                                      const std::string& secret) {
  const std::string where = ip + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (port <= 0 || port > 65535 || ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    return fail(where, "not an IPv4 address and port");
  }
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return fail(where, std::strerror(errno));
  const auto deadline = Clock::now() + timeout;
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    return fail(where, std::strerror(errno));
  }
  if (!wait_for(fd.get(), POLLOUT, deadline)) return fail(where, "connect timed out");
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return fail(where, std::strerror(err));
  std::string in;
  auto read_line = [&]() -> Result<std::string> {
    while (in.find('\n') == std::string::npos) {
      if (in.size() > 4096) return fail(where, "answer longer than 4096 bytes");
      if (!wait_for(fd.get(), POLLIN, deadline)) return fail(where, "no answer within " + std::to_string(timeout.count()) + "ms");
      char buf[512];
      const ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n == 0) return fail(where, "connection closed before an answer");
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return fail(where, std::strerror(errno));
      }
      in.append(buf, static_cast<size_t>(n));
    }
    const size_t nl = in.find('\n');
    std::string line = in.substr(0, nl);
    in.erase(0, nl + 1);
    return line;
  };
  std::string challenge;
  if (!secret.empty()) {
    auto hello = read_line();
    if (!hello) return hello.error();
    auto parsed = parse_rdzv_hello(*hello);
    if (!parsed) return fail(where, parsed.error().message);
    challenge = *parsed;
  }
  const std::string request = secret.empty() ? "STATUS\n" : seal_rdzv_request(secret, challenge, 1, "STATUS");
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    return fail(where, "cannot send the request");
  }
  auto answer = read_line();
  if (!answer) return answer.error();
  if (secret.empty()) return parse_launcher_report(*answer);
  auto plain = open_rdzv_reply(secret, challenge, 1, *answer);
  if (!plain) return fail(where, plain.error().message);
  return parse_launcher_report(*plain);
}

std::optional<LauncherTarget> launcher_target(const TrainingJob& job, const std::vector<PodFacts>& pods) {
  if (!job.spec_error.empty() || job.deleting || job.spec.max_replicas < 2) return std::nullopt;  // no listener
  const JobPhase phase = job.status.phase;
  if (phase == JobPhase::kSucceeded || phase == JobPhase::kFailed || phase == JobPhase::kSuspended) return std::nullopt;
  for (const auto& pod : pods) {
    if (pod.owner_uid != job.uid || pod.deleting || pod.rank != 0 || pod.name != pod_name(job.name, 0)) continue;
    if (pod.phase != "Running" || pod.pod_ip.empty()) return std::nullopt;
    return LauncherTarget{job.ns + "/" + job.name, pod.uid, pod.pod_ip, job.spec.master_port + 1, pod.rdzv_secret, ""};
  }
  return std::nullopt;
}

LauncherPoller::LauncherPoller(std::chrono::milliseconds interval, Targets targets, OnChange on_change)
    : interval_(interval), targets_(std::move(targets)), on_change_(std::move(on_change)) {}

void LauncherPoller::start() {
  if (interval_.count() <= 0) return;  // disabled
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      try {
        poll_once();
      } catch (const std::exception& e) {  // no thread to spare (std::async), no memory: try again next time
        log_error("launcher_poller", std::string("poll failed: ") + e.what());
      }
      lock.lock();
      wake_.wait_for(lock, interval_, [this] { return stopping_.load(); });
    }
  });
}

void LauncherPoller::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LauncherPoller::poll_once() {
  const auto timeout = std::min(interval_ > std::chrono::milliseconds(0) ? interval_ : std::chrono::milliseconds(1000),
                                std::chrono::milliseconds(2000));
  std::set<std::string> seen;
  const std::vector<LauncherTarget> targets = targets_();
  // A few at a time: a node 0 whose address no longer answers costs the timeout, not the whole pass.
  constexpr size_t kParallel = 16;
  std::vector<std::future<Result<LauncherReport>>> pending;
  std::vector<Result<LauncherReport>> answers;
  answers.reserve(targets.size());
  for (size_t i = 0; i < targets.size(); i += kParallel) {
    pending.clear();
    for (size_t j = i; j < std::min(targets.size(), i + kParallel); ++j) {
      pending.push_back(
          std::async(std::launch::async, query_launcher, targets[j].ip, targets[j].port, timeout, targets[j].secret));
    }
    for (auto& f : pending) answers.push_back(f.get());
    if (stopping_) return;  // shutting down: the rest of the pass would only delay it by its timeouts
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    const LauncherTarget& t = targets[i];
    seen.insert(t.job_key);
    auto& report = answers[i];
    if (!report) {
      // Node 0 may be starting or re-forming; the last report stays until it answers again.
      log_debug("launcher_poller", t.job_key + ": " + report.error().message);
      continue;
    }
    // The address may since belong to another job's node 0 (same port): a report of another run is not this job's.
    if (const std::string name = t.job_key.substr(t.job_key.find('/') + 1); !report->run_id.empty() && report->run_id != name) {
      log_debug("launcher_poller", t.job_key + ": " + t.ip + " answers for run " + report->run_id + "; ignored");
      continue;
    }
    report->pod_uid = t.pod_uid;
    bool changed = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& slot = latest_[t.job_key];
      changed = !(slot == *report);
      slot = *report;
    }
    if (changed && on_change_) on_change_(t.job_key);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = latest_.begin(); it != latest_.end();) it = seen.count(it->first) ? std::next(it) : latest_.erase(it);
}

std::optional<LauncherReport> LauncherPoller::latest(const std::string& job_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latest_.find(job_key);
  if (it == latest_.end()) return std::nullopt;
  return it->second;
}

}  // namespace kubedist::trainingjob
