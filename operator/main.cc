// kubedist-operator: reconciles TrainingJobs into a headless Service and one launcher-wrapped pod per node.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <stop_token>
#include <string>
#include <thread>

#include "common/log.h"
#include "trainingjob/manager.h"
#include "trainingjob/render.h"

namespace {

constexpr const char* kUsage = R"(usage: kubedist-operator [flags]
  --kubeconfig PATH        kubeconfig file (default: $KUBECONFIG, in-cluster config, ~/.kube/config)
  --context NAME           kubeconfig context (default: current-context)
  --namespace NS           watch only NS (default: all namespaces)
  --workers N              concurrent reconciles (default 4)
  --probe-address H:P      /healthz and /readyz listener (default :8081; port 0 = any);
                           also spelled --metrics-address (/metrics is served there too)
  --launcher-image IMAGE   launcher init container image (default ghcr.io/kubedist/launcher:0.1.0)
  --launcher-metrics-port P   each pod's launcher serves /metrics on the pod's IP at P, port name kd-metrics
                           (default 9402; 0: off)
  --log-level LEVEL        debug | info | warn | error (default info)
  --leader-elect[=BOOL]    take a Lease before reconciling, for several replicas (default false)
  --leader-election-namespace NS      namespace of the Lease (default: the kubeconfig's or pod's namespace)
  --leader-election-id NAME           name of the Lease (default kubedist-operator)
  --leader-election-lease-seconds N   a silent leader is replaced after N seconds (default 15)
  --watch-nodes[=BOOL]     watch nodes (read-only) to recreate pods lost with a deleted or NotReady node
                           (default true when watching all namespaces, else false)
  --unschedulable-grace D  elastic jobs give up pods unschedulable longer than D, down to minReplicas, and
                           try to grow back D after each change (default 30s)
  --node-lost-grace D      pods on a node NotReady longer than D are force-deleted and recreated (default 60s)
  --launcher-poll-interval D   ask each running job's node-0 launcher for its STATUS (in-place restarts by
                           reason) every D; 0 disables (default 10s)
  --gang-scheduling MODE   per-job: jobs with spec.scheduling.gang: true are gang-scheduled (default);
                           all: every job unless it says false; off: none (jobs asking for it fail).
                           Needs the cluster's scheduling.k8s.io/v1alpha2 PodGroups (else treated as off)
Durations D: an integer with unit ms, s or m (e.g. 500ms, 30s, 2m); a bare integer is seconds.
)";

bool parse_int(const std::string& value, long min, long max, long* out) {
  char* end = nullptr;
  long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || n < min || n > max) return false;
  *out = n;
  return true;
}

// Milliseconds of "500ms", "30s", "2m" or "30" (seconds), within [min_ms, max_ms].
bool parse_duration_ms(const std::string& value, long min_ms, long max_ms, long* out) {
  size_t digits = 0;
  while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9') ++digits;
  if (digits == 0 || digits > 9) return false;
  const std::string unit = value.substr(digits);
  const long n = std::stol(value.substr(0, digits));
  long ms = 0;
  if (unit == "ms") ms = n;
  else if (unit == "s" || unit.empty()) ms = n * 1000;
  else if (unit == "m") ms = n * 60000;
  else return false;
  if (ms < min_ms || ms > max_ms) return false;
  *out = ms;
  return true;
}

bool parse_flags(int argc, char** argv, kubedist::trainingjob::ManagerOptions* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto next = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= argc) {
        *error = arg + " needs a value";
        return false;
      }
      value = argv[++i];
      return true;
    };
    // Flags that take any string.
    const std::map<std::string, std::string*> strings = {
        {"--kubeconfig", &o->kubeconfig},
        {"--context", &o->context},
        {"--namespace", &o->ns},
        {"--probe-address", &o->probe_address},
        {"--metrics-address", &o->probe_address},
        {"--health-address", &o->probe_address},
        {"--leader-election-namespace", &o->leader_election_namespace},
        {"--leader-election-id", &o->leader_election_id},
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (auto it = strings.find(arg); it != strings.end()) {
      if (!next()) return false;
      *it->second = value;
    } else if (arg == "--leader-elect") {
      if (has_value && value != "true" && value != "false") {
        *error = "--leader-elect must be true or false, got \"" + value + "\"";
        return false;
      }
      o->leader_elect = !has_value || value == "true";
    } else if (arg == "--leader-election-lease-seconds") {
      if (!next()) return false;
      long n = 0;
      if (!parse_int(value, 3, 3600, &n)) {
        *error = "--leader-election-lease-seconds must be an integer from 3 to 3600, got \"" + value + "\"";
        return false;
      }
      o->leader_election_lease_seconds = static_cast<int>(n);
    } else if (arg == "--watch-nodes") {
      if (has_value && value != "true" && value != "false") {
        *error = "--watch-nodes must be true or false, got \"" + value + "\"";
        return false;
      }
      o->watch_nodes = !has_value || value == "true";
    } else if (arg == "--unschedulable-grace" || arg == "--node-lost-grace") {
      if (!next()) return false;
      long ms = 0;
      if (!parse_duration_ms(value, 1000, 86400000, &ms) || ms % 1000 != 0) {
        *error = arg + " must be a whole number of seconds from 1s to 24h (e.g. 30s, 2m), got \"" + value + "\"";
        return false;
      }
      (arg == "--unschedulable-grace" ? o->unschedulable_grace_s : o->node_lost_grace_s) = ms / 1000;
    } else if (arg == "--launcher-poll-interval") {
      if (!next()) return false;
      long ms = 0;
      if (!parse_duration_ms(value, 0, 3600000, &ms) || (ms > 0 && ms < 100)) {
        *error = "--launcher-poll-interval must be 0 (off) or a duration from 100ms to 1h (e.g. 10s), got \"" +
                 value + "\"";
        return false;
      }
      o->launcher_poll_interval_ms = ms;
    } else if (arg == "--gang-scheduling") {
      if (!next()) return false;
      using kubedist::trainingjob::GangMode;
      const std::map<std::string, GangMode> modes = {
          {"per-job", GangMode::kPerJob}, {"all", GangMode::kAll}, {"off", GangMode::kOff}};
      auto mode = modes.find(value);
      if (mode == modes.end()) {
        *error = "--gang-scheduling must be per-job, all or off, got \"" + value + "\"";
        return false;
      }
      o->gang_scheduling = mode->second;
    } else if (arg == "--workers") {
      if (!next()) return false;
      long n = 0;
      if (!parse_int(value, 1, 64, &n)) {
        *error = "--workers must be an integer from 1 to 64, got \"" + value + "\"";
        return false;
      }
      o->workers = static_cast<int>(n);
    } else if (arg == "--launcher-image") {
      if (!next()) return false;
      if (value.empty()) {
        *error = "--launcher-image must not be empty";
        return false;
      }
      o->pods.launcher_image = value;
    } else if (arg == "--launcher-metrics-port") {
      if (!next()) return false;
      long n = 0;
      if (!parse_int(value, 0, 65535, &n)) {
        *error = "--launcher-metrics-port must be a port number from 0 (off) to 65535, got \"" + value + "\"";
        return false;
      }
      o->pods.launcher_metrics_port = static_cast<int>(n);
    } else if (arg == "--log-level") {
      if (!next()) return false;
      kubedist::LogLevel level;
      if (!kubedist::parse_log_level(value, &level)) {
        *error = "--log-level must be debug, info, warn or error, got \"" + value + "\"";
        return false;
      }
      kubedist::set_log_level(level);
    } else {
      *error = "unknown flag " + arg;
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  kubedist::trainingjob::ManagerOptions options;
  std::string error;
  if (!parse_flags(argc, argv, &options, &error)) {
    std::fprintf(stderr, "kubedist-operator: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  // Every thread inherits this mask, so SIGTERM/SIGINT reach only the sigwait below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop;
  std::thread waiter([signals, stop]() mutable {
    int sig = 0;
    sigwait(&signals, &sig);
    kubedist::log_info("main", std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                                   ", stopping gracefully");
    stop.request_stop();
  });
  waiter.detach();

  auto r = kubedist::trainingjob::run_manager(options, stop.get_token());
  if (!r) {
    std::fprintf(stderr, "kubedist-operator: %s\n", r.error().message.c_str());
    return 1;
  }
  return 0;
}
