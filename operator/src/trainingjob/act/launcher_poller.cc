#include "trainingjob/act/launcher_poller.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

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
  auto checkpoint = status.checkpoint;
  if (checkpoint) {  // counts bounded as the progress' are; the reason is [a-z_] by the line's grammar
    checkpoint->step = std::min<int64_t>(checkpoint->step, kMaxCount);
    checkpoint->age_ms = std::min<int64_t>(checkpoint->age_ms, kMaxDurationMs);
  }
  return {pod_uid,   status.round, status.restarts, status.restarts_by_cause, status.nodes,       status.world_size,
          valid_utf8(status.phase), valid_utf8(status.run_id), progress, now_unix(), status.lost_nodes, status.carried,
          status.spares, status.stand_ins, checkpoint};
}

std::optional<LauncherReport> final_launcher_report(const TrainingJob& job, const std::vector<PodFacts>& pods) {
  for (const auto& pod : pods) {
    if (pod.owner_uid != job.uid || pod.rank != 0 || pod.name != pod_name(job.name, 0) || pod.phase != "Succeeded" ||
        pod.termination_message.rfind(std::string(contract::kStatusVerb) + " ", 0) != 0) {
      continue;
    }
    const contract::ParsedStatusLine parsed = contract::parse_status_line(pod.termination_message);
    if (!parsed.report) return std::nullopt;
    LauncherReport report = launcher_report(*parsed.report, pod.uid);
    report.polled_at = parse_rfc3339(pod.finished_at).value_or(report.polled_at);
    return report;
  }
  return std::nullopt;
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

std::vector<size_t> fair_poll_order(const std::vector<LauncherTarget>& targets, size_t rotation) {
  std::map<std::string, std::vector<size_t>> by_ns;
  for (size_t i = 0; i < targets.size(); ++i) {
    by_ns[targets[i].job_key.substr(0, targets[i].job_key.find('/'))].push_back(i);
  }
  std::vector<const std::vector<size_t>*> queues;
  for (const auto& [ns, q] : by_ns) queues.push_back(&q);
  if (!queues.empty()) std::rotate(queues.begin(), queues.begin() + rotation % queues.size(), queues.end());
  std::vector<size_t> order;
  order.reserve(targets.size());
  for (size_t round = 0; order.size() < targets.size(); ++round) {
    for (const auto* q : queues) {
      if (round < q->size()) order.push_back((*q)[round]);
    }
  }
  return order;
}

std::chrono::milliseconds LauncherPoller::query_timeout() const {
  return std::min(interval_ > std::chrono::milliseconds(0) ? interval_ : std::chrono::milliseconds(1000),
                  std::chrono::milliseconds(2000));
}

std::optional<LauncherTarget> LauncherPoller::target_of(const std::string& job_key) const {
  for (LauncherTarget& t : targets_())
    if (t.job_key == job_key) return std::move(t);
  return std::nullopt;
}

std::optional<LauncherReport> LauncherPoller::refresh(const std::string& job_key) {
  if (const auto t = target_of(job_key)) take(*t, query_launcher(t->ip, t->port, query_timeout(), t->secret));
  return latest(job_key);
}

Result<contract::ReleaseAnswer> LauncherPoller::release(const std::string& job_key,
                                                        const contract::ReleaseNotice& notice) {
  const auto t = target_of(job_key);
  if (!t) return Error::invalid("node 0 is not asked yet (no address, or no secret the operator can sign with)");
  auto answer = rendezvous::send_release(t->ip, t->port, query_timeout(), t->secret, notice);
  if (answer && answer->released) take(*t, query_launcher(t->ip, t->port, query_timeout(), t->secret));
  return answer;
}

void LauncherPoller::poll_once() {
  const auto timeout = query_timeout();
  const std::vector<LauncherTarget> targets = targets_();
  std::set<std::string> seen;
  std::vector<size_t> due, failing;  // in fair order, without those backing off; those that answered last first
  {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t pass = passes_++;
    for (size_t i : fair_poll_order(targets, pass)) {
      const LauncherTarget& t = targets[i];
      seen.insert(t.job_key);
      auto h = health_.find(t.job_key);
      if (h != health_.end() && h->second.pod_uid != t.pod_uid) {
        health_.erase(h);  // a new node 0: asked at once
        h = health_.end();
      }
      if (h == health_.end()) {
        due.push_back(i);
      } else if (pass >= h->second.next_pass) {
        failing.push_back(i);
      }
    }
    due.insert(due.end(), failing.begin(), failing.end());
    for (auto it = latest_.begin(); it != latest_.end();) it = seen.count(it->first) ? std::next(it) : latest_.erase(it);
    for (auto it = health_.begin(); it != health_.end();) it = seen.count(it->first) ? std::next(it) : health_.erase(it);
  }
  // kParallel queries in flight, each on its own deadline; each answer is taken as it comes, so a node 0 that does
  // not answer costs its own timeout and a slot, never another job's wait.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next++; k < due.size() && !ticker_.stopping(); k = next++) {
      const LauncherTarget& t = targets[due[k]];
      take(t, query_launcher(t.ip, t.port, timeout, t.secret));
    }
  };
  std::vector<std::thread> workers;
  for (size_t w = 0; w < std::min(kParallel, due.size()); ++w) workers.emplace_back(work);
  for (auto& w : workers) w.join();
}

void LauncherPoller::take(const LauncherTarget& t, Result<LauncherReport> report) {
  if (!report) {
    // Node 0 may be starting or re-forming; the last report stays until it answers again. One that keeps failing is
    // asked less often, and after those that answer: after n failures in a row, once in 2^n passes (at most
    // kMaxSkippedPasses).
    std::lock_guard<std::mutex> lock(mu_);
    Health& h = health_[t.job_key];
    h.pod_uid = t.pod_uid;
    h.failures = std::min(h.failures + 1, 30);
    h.next_pass = passes_ - 1 + std::min<size_t>(size_t{1} << h.failures, kMaxSkippedPasses);
    log_debug("launcher_poller", t.job_key + ": " + report.error().message);
    return;
  }
  // The address may since belong to another job's node 0 (same port): a report of another run is not this job's.
  if (const std::string name = t.job_key.substr(t.job_key.find('/') + 1); !report->run_id.empty() && report->run_id != name) {
    log_debug("launcher_poller", t.job_key + ": " + t.ip + " answers for run " + report->run_id + "; ignored");
    return;
  }
  report->pod_uid = t.pod_uid;
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    health_.erase(t.job_key);
    auto& slot = latest_[t.job_key];
    LauncherReport same_time = *report;
    same_time.polled_at = slot.polled_at;  // a report is news for what it says, not for when it was asked
    changed = !(slot == same_time);
    slot = *report;
  }
  if (changed && on_change_) {
    std::lock_guard<std::mutex> lock(notify_mu_);
    on_change_(t.job_key);
  }
}

std::optional<LauncherReport> LauncherPoller::latest(const std::string& job_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latest_.find(job_key);
  if (it == latest_.end()) return std::nullopt;
  return it->second;
}

}  // namespace kubedist::trainingjob
