// LauncherPoller: asks the rendezvous service on each running job's node 0 for its STATUS, every interval.
//
// Why polling: the launcher knows about in-place group restarts (worker crash, lost node, scale) that no pod
// change shows. The rendezvous service on node 0 already listens on MASTER_PORT+1 for the other nodes; one more
// request there ("STATUS\n", one line back) needs no API access for the launcher and no new port. The rendezvous is
// authenticated with the job's secret, which the operator derives by HMAC from the one namespace Secret
// kubedist-rendezvous as the pods' init containers do: the poller signs with it too (the socket client:
// rendezvous/status_client.h). Only a job an earlier operator gave a Secret J-rdzv of its own, or one whose
// namespace key changed while it ran, signs with J-rdzv. The operator folds the counts into status.restartsByReason in decide()
// (see plan.h).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/ticker.h"
#include "contract/notice.h"
#include "contract/status_line.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// Where one job's rendezvous service listens.
struct LauncherTarget {
  std::string job_key;  // namespace/name
  std::string pod_uid;  // node 0's pod
  std::string ip;       // its status.podIP
  int port = 0;         // spec.masterPort + 1
  bool needs_secret = false;  // node 0 mounts the job's rendezvous Secret: its launcher answers signed lines only
  bool job_secret = false;    // ... and it is the job's own J-rdzv (an earlier operator's), which the poller cannot read
  std::string secret;         // that secret, when needed (filled from the Secret cache)
};

// The job's view of a STATUS answer from node 0's pod pod_uid.
LauncherReport launcher_report(const contract::StatusReport& status, const std::string& pod_uid);

// The last word of a job's node 0 that finished: its launcher's last STATUS line, which it leaves in the
// termination message of a pod that Succeeded (so that a job that ended before a poll still has its progress),
// as of the second the pod finished; nullopt when node 0's pod has not Succeeded or left no such line.
std::optional<LauncherReport> final_launcher_report(const TrainingJob& job, const std::vector<PodFacts>& pods);

// rendezvous::query_status (rendezvous/status_client.h), as a LauncherReport without its pod_uid.
Result<LauncherReport> query_launcher(const std::string& ip, int port, std::chrono::milliseconds timeout,
                                      const std::string& secret = "");

// The rendezvous endpoint of a job, if it has one now: node 0 running with an IP and more than one node allowed.
std::optional<LauncherTarget> launcher_target(const TrainingJob& job, const std::vector<PodFacts>& pods);

// The order one pass asks targets in: one job of each namespace in turn (the namespaces rotated by `rotation`, a
// pass counter), so that no namespace's many jobs go before another's few.
std::vector<size_t> fair_poll_order(const std::vector<LauncherTarget>& targets, size_t rotation);

class LauncherPoller {
 public:
  using Targets = std::function<std::vector<LauncherTarget>()>;
  using OnChange = std::function<void(const std::string& job_key)>;
  LauncherPoller(std::chrono::milliseconds interval, Targets targets, OnChange on_change);
  ~LauncherPoller() { stop(); }
  void start();
  void stop();
  // One pass over every target not backing off (the thread's body; tests call it directly): at most kParallel
  // queries at a time, each on its own deadline, each answer taken as it comes, namespaces in fair order, the
  // targets that failed last after the others.
  void poll_once();
  static constexpr size_t kParallel = 16;
  static constexpr size_t kMaxSkippedPasses = 32;  // 5 min at the default 10 s
  std::optional<LauncherReport> latest(const std::string& job_key) const;
  // The job's node 0 asked for its STATUS now (taken as a poll's answer is); the latest report, which is the one
  // from before when node 0 does not answer.
  std::optional<LauncherReport> refresh(const std::string& job_key);
  // A notice (contract/notice.h) to the job's node 0 now, signed as its STATUS is asked; when node 0 took it, its
  // STATUS is asked at once too, so that the job's next pass sees what changed (the job is woken when it did).
  Result<contract::ReleaseAnswer> release(const std::string& job_key, const contract::ReleaseNotice& notice);

 private:
  const std::chrono::milliseconds interval_;
  const Targets targets_;
  const OnChange on_change_;
  // A target whose queries fail: how many in a row, and the pass to ask it again in (its pod: a new node 0 is
  // asked at once).
  struct Health {
    std::string pod_uid;
    int failures = 0;
    size_t next_pass = 0;
  };
  void take(const LauncherTarget& t, Result<LauncherReport> report);
  std::chrono::milliseconds query_timeout() const;
  // The job's target now (targets_ asked afresh), if it has one.
  std::optional<LauncherTarget> target_of(const std::string& job_key) const;

  mutable std::mutex mu_;  // latest_, health_, passes_
  std::map<std::string, LauncherReport> latest_;
  std::map<std::string, Health> health_;
  size_t passes_ = 0;
  std::mutex notify_mu_;  // on_change_ is called from one query thread at a time
  Ticker ticker_;  // last: its thread stops before the rest goes
};

}  // namespace kubedist::trainingjob
