// Job metrics derived from status writes: what changed between the status a write replaced and the one it wrote.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "metrics/operator_metrics.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// The counter increases one status transition means. Pure.
struct StatusTransition {
  bool created = false;                 // the Created condition turned True
  bool succeeded = false;               // the phase turned Succeeded
  bool failed = false;                  // the phase turned Failed
  std::map<std::string, int> restarts;  // positive increases of status.restartsByReason, by reason
  std::optional<double> recovery_seconds;  // the job is Running again after a Restarting condition
  int scaled = 0;                          // the elastic target went down (-1) or up (+1)
  std::optional<double> admission_wait_seconds;  // Kueue admitted the job after it waited this long
};
StatusTransition status_transition(const Spec& spec, const Status& before, const Status& after);

// Whether the status says the job waits for Kueue's admission (its Admitted condition is False); nullopt when the
// job is not queued (no Admitted condition).
std::optional<bool> waiting_for_admission(const Status& status);

// The nodes the operator aims at: the elastic target while one is set, else spec.replicas.
int target_nodes(const Spec& spec, const Status& status);

// Feeds OperatorMetrics from the reconciler. All restart counting goes through written(): the status is the
// one record of restarts, whoever (operator or launchers) put them there, and each successful conditional
// write happens once, so the increase it makes is counted once, also across operator restarts.
class JobMetrics {
 public:
  explicit JobMetrics(metrics::OperatorMetrics& metrics) : metrics_(metrics) {}

  // A job as the cache shows it: its gauges, and its series at their baseline (a first sight counts nothing).
  void seen(const TrainingJob& job);
  // A successful status write that replaced `before` with `after`.
  void written(const TrainingJob& before, const Status& after);
  // The job was deleted: its per-job series go away.
  void forget(const std::string& ns, const std::string& name);

 private:
  metrics::OperatorMetrics& metrics_;
};

}  // namespace kubedist::trainingjob
