#include "trainingjob/act/launcher_poller.h"

#include <future>
#include <mutex>
#include <set>

#include "common/log.h"
#include "common/utf8.h"
#include "contract/pod_env.h"
#include "rendezvous/status_client.h"
#include "trainingjob/api/bounds.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {

LauncherReport launcher_report(const contract::StatusReport& status, const std::string& pod_uid) {
  // The line's free text is the workers' (hang_msg quotes their Python stacks, any bytes): made valid here, where
  // it enters, so that the Events, conditions and lastFailure that quote it can be sent.
  // Its numbers are bounded before any arithmetic (api/bounds.h): a step of 18 digits, an age of 10^17 ms.
  auto progress = status.progress;
  if (progress) {
    progress = bounded(*progress);
    progress->hang_message = valid_utf8(progress->hang_message);
  }
  return {pod_uid,   status.round, status.restarts, status.restarts_by_cause, status.nodes,       status.world_size,
          valid_utf8(status.phase), valid_utf8(status.run_id), progress, now_unix(), status.lost_nodes, status.carried};
}

Result<LauncherReport> query_launcher(const std::string& ip, int port, std::chrono::milliseconds timeout,
                                      const std::string& secret) {
  auto status = rendezvous::query_status(ip, port, timeout, secret);
  if (!status) return status.error();
  return launcher_report(*status, "");
}

std::optional<LauncherTarget> launcher_target(const TrainingJob& job, const std::vector<PodFacts>& pods) {
  if (!job.spec_error.empty() || job.deleting || job.spec.max_replicas < 2) return std::nullopt;  // no listener
  const JobPhase phase = job.status.phase;
  if (phase == JobPhase::kSucceeded || phase == JobPhase::kFailed || phase == JobPhase::kSuspended) return std::nullopt;
  for (const auto& pod : pods) {
    if (pod.owner_uid != job.uid || pod.deleting || pod.rank != 0 || pod.name != pod_name(job.name, 0)) continue;
    if (pod.phase != "Running" || pod.pod_ip.empty()) return std::nullopt;
    return LauncherTarget{job.ns + "/" + job.name, pod.uid, pod.pod_ip,
                          job.spec.master_port + contract::kRendezvousPortOffset, pod.rdzv_secret,
                          pod.job_rdzv_secret, ""};
  }
  return std::nullopt;
}

LauncherPoller::LauncherPoller(std::chrono::milliseconds interval, Targets targets, OnChange on_change)
    : interval_(interval),
      targets_(std::move(targets)),
      on_change_(std::move(on_change)),
      ticker_("launcher_poller", interval, [this] { poll_once(); }) {}

void LauncherPoller::start() {
  if (interval_.count() > 0) ticker_.start();  // else disabled
}

void LauncherPoller::stop() { ticker_.stop(); }

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
    if (ticker_.stopping()) return;  // shutting down: the rest of the pass would only delay it by its timeouts
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
      LauncherReport same_time = *report;
      same_time.polled_at = slot.polled_at;  // a report is news for what it says, not for when it was asked
      changed = !(slot == same_time);
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
