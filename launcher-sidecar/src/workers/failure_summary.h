// FailureSummary: the one line a failed launcher leaves in the container's termination message file
// (Kubernetes: terminationMessagePath, /dev/termination-log), which the operator copies to status.lastFailure.
#pragma once

#include <cstddef>
#include <string>

#include "contract/status_line.h"
#include "util/result.h"
#include "workers/worker_group.h"

namespace kubedist::launcher {

// Kubernetes keeps at most 4096 bytes of a container's termination message.
constexpr std::size_t kTerminationMessageMax = 4096;
// What a node tells the rendezvous of its failed worker (the exit and the error's first line): at most this many
// bytes, so that the reason every node gives, with what the coordinator adds, fits one termination message.
constexpr std::size_t kRelayedFailureMax = 2048;

// The first line of the exception message in a torchelastic error file (TORCHELASTIC_ERROR_FILE, as written by
// torch's @record: {"message": {"message": "ValueError: boom", "extraInfo": {...}}}, or {"message": "text"}),
// or "" when the file holds none.
std::string error_file_message(const std::string& json);

// "rank 1 (local rank 1) on HOST exited with code 3: ValueError: boom", or "... was killed by signal SIGKILL".
// One line of at most kTerminationMessageMax bytes (cut at a UTF-8 character boundary).
std::string failure_summary(const WorkerExit& exit, const std::string& host, const std::string& error_file_json);

// What node 0's launcher leaves in the termination message when the job succeeded: its last STATUS line (the job's
// final progress, for a job that ended before the operator polled it: contract/status_line.h), without the hang
// text and, where the line would still be longer than the operator reads of a termination message
// (kFinalStatusMax), without the metrics; "" when even that is too long.
constexpr std::size_t kFinalStatusMax = 1024;
std::string final_status_line(contract::StatusReport report);

// Text made one line (line breaks and tabs become spaces) of at most max_bytes, cut at a UTF-8 boundary.
std::string one_line(const std::string& text, std::size_t max_bytes = kTerminationMessageMax);

// Replaces the file's content with the line (no trailing newline, as Kubernetes shows it verbatim).
Result<bool> write_termination_log(const std::string& path, const std::string& line);

}  // namespace kubedist::launcher
