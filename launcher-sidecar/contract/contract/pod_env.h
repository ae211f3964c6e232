// The names of the variables the operator sets on a TrainingJob's trainer and the launcher reads.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace kubedist::contract {

// torchrun's plain spellings. The launcher reads them only in a TrainingJob's pod (kJob set).
inline constexpr const char* kMasterAddr = "MASTER_ADDR";
inline constexpr const char* kMasterPort = "MASTER_PORT";
inline constexpr const char* kNodeRank = "NODE_RANK";
inline constexpr const char* kNnodes = "NNODES";
inline constexpr const char* kNprocPerNode = "NPROC_PER_NODE";

// Ours, always read by the launcher.
inline constexpr const char* kJob = "KUBEDIST_JOB";                         // the job's name: --rdzv-id
inline constexpr const char* kRestartPolicy = "KUBEDIST_RESTART_POLICY";    // --restart-policy
inline constexpr const char* kMetricsPort = "KUBEDIST_METRICS_PORT";        // --metrics-port
inline constexpr const char* kMetricsAddr = "KUBEDIST_METRICS_ADDR";        // --metrics-addr
inline constexpr const char* kTerminationLog = "KUBEDIST_TERMINATION_LOG";  // --termination-log
inline constexpr const char* kRdzvSecretFile = "KUBEDIST_RDZV_SECRET_FILE"; // --rdzv-secret-file
// --rdzv-secret-fingerprint: what the secret file must hold (contract/signed_line.h), set where the operator wrote it.
inline constexpr const char* kRdzvSecretFingerprint = "KUBEDIST_RDZV_SECRET_FINGERPRINT";
// --stop-timeout: the SIGTERM-to-SIGKILL grace the launcher gives its workers, which the operator derives from the
// pod's terminationGracePeriodSeconds, so that a checkpoint written on SIGTERM is not cut short.
inline constexpr const char* kStopTimeout = "KUBEDIST_STOP_TIMEOUT";
// The longest duration the launcher takes, in seconds (about 3 years), KUBEDIST_STOP_TIMEOUT included: longer ones
// would overflow its clock arithmetic. The operator gives no pod a longer stop timeout than this.
inline constexpr long kMaxDurationSeconds = 100000000;
// --spare (1/true): the pod is one of the job's spec.spares; its node rank may be at or above the job's maximum.
inline constexpr const char* kSpare = "KUBEDIST_SPARE";
// The CRD's bound on spec.spares (crd/, checked by the unit tests against it).
inline constexpr int kMaxSpares = 64;
// A spare pod's node rank: this plus its index (pod J-spare-<index>), above every member's (maxReplicas <= 10000),
// so that scaling a job never gives a member's rank to a spare.
inline constexpr int kSpareNodeRankBase = 10000;
// spec.placement.topologyKey: the operator writes the value of that label of the pod's node into the pod's annotation
// kTopologyDomainAnnotation once the pod is bound ("-" for a node without it), the kubelet projects the annotation
// into a file (downward API), and the trainer's KUBEDIST_TOPOLOGY_DOMAIN_FILE names it (--topology-domain-file): the
// rendezvous gives one domain's nodes consecutive group ranks.
inline constexpr const char* kTopologyDomainFile = "KUBEDIST_TOPOLOGY_DOMAIN_FILE";
// spec.checkpoint, for the kubedist.checkpoint helper (launcher-sidecar/python/kubedist/checkpoint.py): where the
// checkpoint volume is mounted, every how many steps to save, a save's budget in seconds, how many to keep.
inline constexpr const char* kCheckpointDir = "KUBEDIST_CHECKPOINT_DIR";
inline constexpr const char* kCheckpointEverySteps = "KUBEDIST_CHECKPOINT_EVERY_STEPS";
inline constexpr const char* kCheckpointTimeout = "KUBEDIST_CHECKPOINT_TIMEOUT";
inline constexpr const char* kCheckpointKeep = "KUBEDIST_CHECKPOINT_KEEP";
// How long a launcher given SIGTERM waits for its workers' just-in-time checkpoint before it stops them: the save's
// budget (spec.checkpoint.saveTimeoutSeconds; 60 s when it has none) and 5 s for the workers to see the request
// (they look about once a second) and answer. The operator lengthens the pod's grace period by as much.
inline int checkpoint_wait_seconds(int save_timeout_s) { return (save_timeout_s > 0 ? save_timeout_s : 60) + 5; }
inline constexpr const char* kTopologyDomainAnnotation = "kubedist.io/topology-domain";
inline constexpr std::string_view kNoTopologyDomain = "-";
// A domain as a node label's value: 1 to 63 letters, digits, '-', '_' and '.', beginning and ending alphanumeric
// (no space: it travels as one word of a JOIN).
inline bool is_topology_domain(std::string_view v) {
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (v.empty() || v.size() > 63 || !alnum(v.front()) || !alnum(v.back())) return false;
  for (char c : v)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}
// The legacy torch.distributed.launch form, asked for through the pod's env (the operator passes a template's env
// on; `kubectl kubedist run -- python -m torch.distributed.launch ...` sets them) rather than a CRD field.
inline constexpr const char* kLegacyLaunch = "KUBEDIST_LEGACY_LAUNCH";        // --legacy-launch (1/true)
inline constexpr const char* kUseEnv = "KUBEDIST_USE_ENV";                    // --use-env (1/true)
inline constexpr const char* kLocalRankStyle = "KUBEDIST_LOCAL_RANK_STYLE";   // --local-rank-style
// The file the launcher init container derives the job's rendezvous secret into (`--install DIR
// --rdzv-secret-from FILE --rdzv-job UID`: DIR/<this>), which the trainer's KUBEDIST_RDZV_SECRET_FILE names.
inline constexpr const char* kJobSecretFileName = "rdzv-secret";

// torchrun's PET_<FLAG> twin of a flag ("master-addr" -> "PET_MASTER_ADDR"), which the launcher reads as torchrun
// does and the operator sets too, so that a user's own torchrun-style tooling sees the same values.
inline std::string pet_name(std::string_view flag) {
  std::string out = "PET_";
  for (char c : flag) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The launcher flags the operator sets through their PET_ twins.
inline constexpr const char* kFlagMasterAddr = "master-addr";
inline constexpr const char* kFlagMasterPort = "master-port";
inline constexpr const char* kFlagNodeRank = "node-rank";
inline constexpr const char* kFlagNnodes = "nnodes";
inline constexpr const char* kFlagNprocPerNode = "nproc-per-node";
inline constexpr const char* kFlagMaxRestarts = "max-restarts";
inline constexpr const char* kFlagHangTimeout = "hang-timeout";  // seconds; spec.hangTimeout

// Node rank 0's rendezvous service listens on MASTER_PORT + this (also where the operator asks for STATUS).
inline constexpr int kRendezvousPortOffset = 1;

}  // namespace kubedist::contract
