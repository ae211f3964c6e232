// What the plugin prints about a job: pure text from the TrainingJob and its pods as the API serves them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"

namespace kubedist::kubectl {

// "3 (worker_crash 2, pod_failure 1)", or "0".
std::string restarts_text(const nlohmann::json& status);

// "pod J-node-1 on worker-0 exited with code 3 (Error): rank 1 ... " or "" without status.lastFailure.
std::string last_failure_text(const nlohmann::json& status);

// status.progress when the job reports it (the workers' steps through node 0's launcher): "40% (40/100), epoch 2,
// 3.100 steps/s, loss 0.4100, eta 20s, slowest rank 3 on J-node-1 (1.8x the others' step time), goodput 97%";
// "" when absent. The time left is counted from `now`.
std::string progress_text(const nlohmann::json& status, UnixSeconds now);

// `kubectl kubedist status JOB`: phase, nodes, world size, restarts by reason, last failure, progress,
// conditions, and a table of the job's pods.
std::string status_report(const nlohmann::json& job, const std::vector<nlohmann::json>& pods, UnixSeconds now);

// `kubectl kubedist list`: NAME PHASE NODES WORLD RESTARTS AGE.
std::string list_table(const std::vector<nlohmann::json>& jobs, UnixSeconds now);

// The lines `run` prints when the job has ended: phase, restarts by reason, last failure.
std::string final_report(const nlohmann::json& job, int max_world_size);

// run's exit code for a finished job: 0 Succeeded; Failed: the failing worker's exit code when known (1-255),
// else 1.
int exit_code_for(const nlohmann::json& job);

// How a log line of node K's container is shown: the launcher's "[rank N]: ..." lines as they are, the
// launcher's own and the setup container's lines marked with the node; terminal escapes and other control bytes
// shown as \xNN (terminal_safe), never passed to the terminal.
std::string log_line(int node, bool setup, const std::string& line);

// "1m5s", "2h3m", "40s".
std::string human_duration(int64_t seconds);

}  // namespace kubedist::kubectl
