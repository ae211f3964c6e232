// kubedist-operator: reconciles TrainingJobs into a headless Service and one launcher-wrapped pod per node.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "trainingjob/act/keyring.h"
#include "trainingjob/act/setup.h"
#include "trainingjob/netpol/render.h"
#include "trainingjob/render/render.h"

namespace {

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

// Sets an option from a flag's value; returns what is wrong with the value (after the flag's name), or nothing.
using Setter = std::function<std::optional<std::string>(const std::string& value)>;

std::string got(const std::string& value) { return ", got \"" + value + "\""; }

Setter text(std::string* out) {
  return [out](const std::string& v) -> std::optional<std::string> {
    *out = v;
    return std::nullopt;
  };
}

// An integer in [min, max]; `what` says which in the error ("an integer from 1 to 64").
template <typename Int>
Setter integer(Int* out, long min, long max, const std::string& what) {
  return [=](const std::string& v) -> std::optional<std::string> {
    long n = 0;
    if (!parse_int(v, min, max, &n)) return "must be " + what + got(v);
    *out = static_cast<Int>(n);
    return std::nullopt;
  };
}

// A duration in milliseconds, accepted by `ok`; `what` says which in the error.
Setter duration_ms(std::function<void(long)> store, std::function<bool(long)> ok, long min_ms, long max_ms,
                   const std::string& what) {
  return [=](const std::string& v) -> std::optional<std::string> {
    long ms = 0;
    if (!parse_duration_ms(v, min_ms, max_ms, &ms) || !ok(ms)) return "must be " + what + got(v);
    store(ms);
    return std::nullopt;
  };
}

// "true" or "false" (a bare flag is "true").
template <typename Bool>
Setter boolean(Bool* out) {
  return [out](const std::string& v) -> std::optional<std::string> {
    if (v != "true" && v != "false") return "must be true or false" + got(v);
    *out = v == "true";
    return std::nullopt;
  };
}

struct Flag {
  std::vector<std::string> names;  // the first is the one documented
  bool optional_value;             // --flag[=BOOL]; else --flag VALUE or --flag=VALUE
  Setter set;
  const char* usage;               // its lines in --help
};

std::vector<Flag> flag_table(kubedist::trainingjob::OperatorOptions* o) {
  using kubedist::trainingjob::GangMode;
  using kubedist::trainingjob::check_ingress_rules;
  const std::string grace = "a whole number of seconds from 1s to 24h (e.g. 30s, 2m)";
  auto whole_seconds = [](long ms) { return ms % 1000 == 0; };
  return {
      {{"--kubeconfig"}, false, text(&o->kubeconfig),
       "  --kubeconfig PATH        kubeconfig file (default: $KUBECONFIG, in-cluster config, ~/.kube/config)\n"},
      {{"--context"}, false, text(&o->context), "  --context NAME           kubeconfig context (default: current-context)\n"},
      {{"--namespace"}, false, text(&o->ns), "  --namespace NS           watch only NS (default: all namespaces)\n"},
      {{"--workers"}, false, integer(&o->manager.workers, 1, 64, "an integer from 1 to 64"),
       "  --workers N              concurrent reconciles (default 16)\n"},
      {{"--probe-address", "--metrics-address", "--health-address"}, false, text(&o->manager.probe_address),
       "  --probe-address H:P      /healthz and /readyz listener (default :8081; port 0 = any);\n"
       "                           also spelled --metrics-address (/metrics is served there too)\n"},
      {{"--launcher-image"}, false,
       [o](const std::string& v) -> std::optional<std::string> {
         if (v.empty()) return "must not be empty";
         o->pods.launcher_image = v;
         return std::nullopt;
       },
       "  --launcher-image IMAGE   launcher init container image (default ghcr.io/kubedist/launcher:0.1.0)\n"},
      {{"--launcher-metrics-port"}, false,
       integer(&o->pods.launcher_metrics_port, 0, 65535, "a port number from 0 (off) to 65535"),
       "  --launcher-metrics-port P   each pod's launcher serves /metrics on the pod's IP at P, port name kd-metrics\n"
       "                           (default 9402; 0: off)\n"},
      {{"--log-level"}, false,
       [](const std::string& v) -> std::optional<std::string> {
         kubedist::LogLevel level;
         if (!kubedist::parse_log_level(v, &level)) return "must be debug, info, warn or error" + got(v);
         kubedist::set_log_level(level);
         return std::nullopt;
       },
       "  --log-level LEVEL        debug | info | warn | error (default info)\n"},
      {{"--leader-elect"}, true, boolean(&o->leader_elect),
       "  --leader-elect[=BOOL]    take a Lease before reconciling, for several replicas (default false)\n"},
      {{"--leader-election-namespace"}, false, text(&o->leader_election_namespace),
       "  --leader-election-namespace NS      namespace of the Lease (default: the kubeconfig's or pod's namespace)\n"},
      {{"--leader-election-id"}, false, text(&o->leader_election_id),
       "  --leader-election-id NAME           name of the Lease (default kubedist-operator)\n"},
      {{"--leader-election-lease-seconds"}, false,
       integer(&o->leader_election_lease_seconds, 3, 3600, "an integer from 3 to 3600"),
       "  --leader-election-lease-seconds N   a silent leader is replaced after N seconds (default 15)\n"},
      {{"--keyring-secret"}, false,
       [o](const std::string& v) -> std::optional<std::string> {
         if (auto why = kubedist::trainingjob::check_keyring_secret(v); !why.empty())
           return "must be a Secret's NAMESPACE/NAME: " + why;
         o->keyring_secret = v;
         return std::nullopt;
       },
       "  --keyring-secret NS/NAME keep the namespace keys the operator sees in this Secret too (it must exist;\n"
       "                           get and patch on it), so that a key deleted or replaced while no operator runs\n"
       "                           can still be given to the jobs whose pods derive from it (default: memory only)\n"},
      {{"--watch-nodes"}, true, boolean(&o->watch_nodes),
       "  --watch-nodes[=BOOL]     watch nodes (read-only) to recreate pods lost with a deleted or NotReady node\n"
       "                           (default true when watching all namespaces, else false)\n"},
      {{"--unschedulable-grace"}, false,
       duration_ms([o](long ms) { o->unschedulable_grace_s = ms / 1000; }, whole_seconds, 1000, 86400000, grace),
       "  --unschedulable-grace D  elastic jobs give up pods unschedulable longer than D, down to minReplicas, and\n"
       "                           try to grow back D after each change (default 30s)\n"},
      {{"--node-lost-grace"}, false,
       duration_ms([o](long ms) { o->node_lost_grace_s = ms / 1000; }, whole_seconds, 1000, 86400000, grace),
       "  --node-lost-grace D      pods on a node NotReady longer than D are deleted and recreated (forced once the node is gone) (default 60s)\n"},
      {{"--avoid-node-after-failures"}, false,
       integer(&o->avoid_node_after_failures, 0, 1000, "an integer from 0 (never) to 1000"),
       "  --avoid-node-after-failures N   a node where N of a job's pods failed for reasons not the training\n"
       "                           code's (a signal, not an OOM kill by its own limit; lost with the node; a hang)\n"
       "                           is avoided by the job's new pods (status.avoidedNodes, Event NodeAvoided);\n"
       "                           0: never (default 2)\n"},
      {{"--taint-avoided-nodes"}, true, boolean(&o->taint_avoided_nodes),
       "  --taint-avoided-nodes[=BOOL]   also taint a node a job comes to avoid kubedist.io/avoided:NoSchedule, so\n"
       "                           that no job's new pods land there until --avoided-taint-ttl passes; only for\n"
       "                           the node's own faults (lost with it: NotReady, deleted, out of service), never\n"
       "                           for a job's signals or hangs (needs --watch-nodes and patch on nodes) (default false)\n"},
      {{"--node-loss-limit"}, false, integer(&o->node_loss_limit, 0, 1000000, "an integer from 0 (no bound) to 1000000"),
       "  --node-loss-limit N      a job whose pods were lost with their nodes more than N times fails\n"
       "                           (NodeLossLimitExceeded) instead of recreating them for ever; 0: no bound\n"
       "                           (default 100)\n"},
      {{"--max-tainted-nodes"}, false, integer(&o->max_tainted_nodes, 1, 1000, "an integer from 1 to 1000"),
       "  --max-tainted-nodes N    --taint-avoided-nodes taints no node while N nodes carry the taint (default 3)\n"},
      {{"--avoided-taint-ttl"}, false,
       duration_ms([o](long ms) { o->avoided_taint_ttl_s = ms / 1000; }, whole_seconds, 1000, 604800000,
                   "a whole number of seconds from 1s to 10080m (e.g. 60m)"),
       "  --avoided-taint-ttl D    the operator takes kubedist.io/avoided off a node D after adding it (default 60m)\n"},
      {{"--launcher-poll-interval"}, false,
       duration_ms([o](long ms) { o->launcher_poll_interval_ms = ms; }, [](long ms) { return ms == 0 || ms >= 100; },
                   0, 3600000, "0 (off) or a duration from 100ms to 1h (e.g. 10s)"),
       "  --launcher-poll-interval D   ask each running job's node-0 launcher for its STATUS (in-place restarts by\n"
       "                           reason) every D; 0 disables (default 10s)\n"},
      {{"--progress-write-interval"}, false,
       duration_ms([o](long ms) { o->progress_write_interval_ms = ms; }, [](long) { return true; }, 0, 3600000,
                   "0 (no bound) or a duration up to 1h (e.g. 30s)"),
       "  --progress-write-interval D  a job's status is written for its progress alone (status.progress) at most\n"
       "                           every D; 0: at every change the STATUS poll brings (default 30s)\n"},
      {{"--gang-scheduling"}, false,
       [o](const std::string& v) -> std::optional<std::string> {
         const std::map<std::string, GangMode> modes = {
             {"per-job", GangMode::kPerJob}, {"all", GangMode::kAll}, {"off", GangMode::kOff}};
         auto mode = modes.find(v);
         if (mode == modes.end()) return "must be per-job, all or off" + got(v);
         o->gang_scheduling = mode->second;
         return std::nullopt;
       },
       "  --gang-scheduling MODE   per-job: jobs with spec.scheduling.gang: true are gang-scheduled (default);\n"
       "                           all: every job unless it says false; off: none (jobs asking for it fail).\n"
       "                           Needs the cluster's Workload API, scheduling.k8s.io/v1beta1 (1.37) or\n"
       "                           v1alpha2 (1.36), whichever it serves (else treated as off)\n"},
      {{"--network-policy-per-job"}, true, boolean(&o->network_policy_per_job),
       "  --network-policy-per-job[=BOOL]   give each running job NetworkPolicy J, letting in on every port the\n"
       "                           job's own pods, and the peers of --network-policy-ingress (needs list, watch\n"
       "                           and create on networkpolicies) (default false)\n"},
      {{"--network-policy-ingress"}, false,
       [o](const std::string& v) -> std::optional<std::string> {
         auto rules = nlohmann::json::parse(v, nullptr, false);
         if (rules.is_discarded()) return "must be a JSON array of NetworkPolicy ingress rules: not JSON" + got(v);
         if (auto why = check_ingress_rules(rules)) {
           return "must be a JSON array of NetworkPolicy ingress rules: " + *why + got(v);
         }
         o->network_policy_ingress = std::move(rules);
         return std::nullopt;
       },
       "  --network-policy-ingress JSON   with --network-policy-per-job: ingress rules every job's policy adds\n"
       "                           ([{\"from\": [...], \"ports\": [...]}], NetworkPolicy's own form), e.g. the\n"
       "                           operator's pods on port rendezvous and a metrics scraper on kd-metrics\n"},
  };
}

std::string usage(const std::vector<Flag>& flags) {
  std::string out = "usage: kubedist-operator [flags]\n";
  for (const auto& f : flags) out += f.usage;
  return out + "Durations D: an integer with unit ms, s or m (e.g. 500ms, 30s, 2m); a bare integer is seconds.\n";
}

bool parse_flags(int argc, char** argv, const std::vector<Flag>& flags, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage(flags).c_str(), stdout);
      std::exit(0);
    }
    auto flag = std::find_if(flags.begin(), flags.end(), [&](const Flag& f) {
      return std::find(f.names.begin(), f.names.end(), arg) != f.names.end();
    });
    if (flag == flags.end()) {
      *error = "unknown flag " + arg;
      return false;
    }
    if (!has_value && flag->optional_value) {
      value = "true";
    } else if (!has_value) {
      if (i + 1 >= argc) {
        *error = arg + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (auto wrong = flag->set(value)) {
      *error = arg + " " + *wrong;
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  kubedist::trainingjob::OperatorOptions options;
  const std::vector<Flag> flags = flag_table(&options);
  std::string error;
  if (!parse_flags(argc, argv, flags, &error)) {
    std::fprintf(stderr, "kubedist-operator: %s\n%s", error.c_str(), usage(flags).c_str());
    return 2;
  }
  if (!options.network_policy_ingress.empty() && !options.network_policy_per_job) {
    std::fprintf(stderr, "kubedist-operator: --network-policy-ingress needs --network-policy-per-job\n");
    return 2;
  }
  if (options.taint_avoided_nodes && !options.watch_nodes.value_or(options.ns.empty())) {
    std::fprintf(stderr, "kubedist-operator: --taint-avoided-nodes needs the node watch: --watch-nodes (on by default "
                         "only without --namespace)\n");
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
