// Why the launchers restarted their group in place: the cause keys of the STATUS line, which the operator folds
// into status.restartsByReason under the same names.
#pragma once

namespace kubedist::contract {

inline constexpr const char* kCauseWorkerCrash = "worker_crash";  // a worker failed
inline constexpr const char* kCauseNodeLost = "node_lost";        // a node vanished from the group
inline constexpr const char* kCauseScale = "scale";               // a node joined, or left with LEAVE
inline constexpr const char* kCauseHang = "hang";                 // the job's step stopped advancing (--hang-timeout)

}  // namespace kubedist::contract
