// Pure rendering of the objects the operator owns for a TrainingJob: its headless Service and node pods.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/pod_env.h"
#include "trainingjob/api/names.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

inline constexpr const char* kDefaultLauncherImage = "ghcr.io/kubedist/launcher:0.1.0";
inline constexpr const char* kLauncherPath = "/kubedist/bin/kubedist-launcher";
inline constexpr int kDefaultLauncherMetricsPort = 9402;
inline constexpr int kLauncherUser = 65532;  // the uid and gid the launcher init container runs as

// What every pod gets from the operator's configuration rather than from the job.
struct PodOptions {
  std::string launcher_image = kDefaultLauncherImage;
  int launcher_metrics_port = kDefaultLauncherMetricsPort;  // 0: the launchers serve no /metrics
  // The launcher signs its rendezvous: the init container derives the job's secret from the namespace's Secret
  // kubedist-rendezvous (mounted there only) into the trainer's emptyDir, and the launcher is pointed at it.
  bool rdzv_secret = false;
  // With rdzv_secret: instead mount the job's own Secret J-rdzv into the trainer (a job an earlier operator
  // started with a Secret of its own, whose running pods sign with it).
  bool job_rdzv_secret = false;
  // With job_rdzv_secret: the fingerprint of the secret the operator wrote into J-rdzv, which the launcher checks
  // the mounted one against (KUBEDIST_RDZV_SECRET_FINGERPRINT; empty: none, an earlier operator's J-rdzv).
  std::string rdzv_secret_fingerprint{};
  // With rdzv_secret and not job_rdzv_secret: the fingerprint of the namespace key the pod's init container will
  // derive from, recorded in annotation kubedist.io/rendezvous-key (empty: none recorded).
  std::string rdzv_key{};
  // Nodes the pod must not be scheduled on (status.avoidedNodes: decide/bad_nodes.h), added to every term of the
  // template's required node affinity as metadata.name NotIn.
  std::vector<std::string> avoided_nodes{};
  // The operator reads nodes (the cluster-wide install) and so writes each bound pod's topology domain: a job with
  // spec.placement.topologyKey gets the file its launcher waits for (without, the launcher would wait for nothing).
  bool topology_domains = false;
};

inline constexpr const char* kRdzvSecretDir = "/kubedist/rdzv";  // the trainer's read-only mount of Secret J-rdzv
inline constexpr const char* kRdzvSecretKey = "secret";  // a rendezvous Secret's one key
inline constexpr const char* kNamespaceRdzvDir = "/kubedist/rendezvous";  // the init container's mount of it
// The job's secret as the init container derives it into the emptyDir the trainer mounts at /kubedist/bin.
inline std::string job_rdzv_secret_file() { return std::string("/kubedist/bin/") + contract::kJobSecretFileName; }

// Secret kubedist-rendezvous of namespace ns: the secret each job's rendezvous secret is derived from (contract/
// signed_line.h), which signs the job's rendezvous lines (launcher-sidecar/src/rendezvous/auth.h) so that only the
// job's pods and the operator can join, leave or read it. secret: its text (random hex). Owned by nothing: it
// serves every job of the namespace, present and future, and one write serves them all.
nlohmann::json render_namespace_rdzv_secret(const std::string& ns, const std::string& secret);

// Secret J-rdzv, owned by the job: the job's rendezvous secret (the text its launchers sign with), for a job whose
// running pods derive it from a namespace key that was deleted or replaced since (decide/rendezvous.h).
nlohmann::json render_job_rdzv_secret(const TrainingJob& job, const std::string& secret);

// Service J: headless, publishes not-ready addresses (rendezvous starts before readiness), selects the job's pods.
nlohmann::json render_service(const TrainingJob& job);

// Pod J-node-<rank>: the user's template plus the launcher init container, the wrapped trainer command,
// the node env, hostname/subdomain for DNS, labels, the controller owner reference and restartPolicy Never.
// (An integration adds its own to the pod: decide/hook.h.)
// With a launcher metrics port the launcher serves /metrics on the pod's IP there (port "kd-metrics"). With
// rdzv_secret, Secret J-rdzv is mounted read-only into the trainer and named by KUBEDIST_RDZV_SECRET_FILE.
// Requires a job without spec_error.
nlohmann::json render_pod(const TrainingJob& job, int rank, const PodOptions& options);

// The owner reference every object of the job carries (controller, blockOwnerDeletion).
nlohmann::json owner_reference(const TrainingJob& job);

// The metadata of an object the job owns named like the job (its Service, an integration's objects): name,
// namespace, the job-name label and the owner reference.
nlohmann::json owned_metadata(const TrainingJob& job);

}  // namespace kubedist::trainingjob
