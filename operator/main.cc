// kubedist-operator: reconciles TrainingJobs into a headless Service and one launcher-wrapped pod per node.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
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
  --probe-address H:P      /healthz and /readyz listener (default :8081; port 0 = any)
  --launcher-image IMAGE   launcher init container image (default ghcr.io/kubedist/launcher:0.1.0)
  --log-level LEVEL        debug | info | warn | error (default info)
)";

bool parse_flags(int argc, char** argv, kubedist::trainingjob::ManagerOptions* o, std::string* error) {
  o->launcher_image = kubedist::trainingjob::kDefaultLauncherImage;
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
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--kubeconfig") {
      if (!next()) return false;
      o->kubeconfig = value;
    } else if (arg == "--context") {
      if (!next()) return false;
      o->context = value;
    } else if (arg == "--namespace") {
      if (!next()) return false;
      o->ns = value;
    } else if (arg == "--workers") {
      if (!next()) return false;
      char* end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n < 1 || n > 64) {
        *error = "--workers must be an integer from 1 to 64, got \"" + value + "\"";
        return false;
      }
      o->workers = static_cast<int>(n);
    } else if (arg == "--probe-address" || arg == "--metrics-address" || arg == "--health-address") {
      if (!next()) return false;
      o->probe_address = value;
    } else if (arg == "--launcher-image") {
      if (!next()) return false;
      if (value.empty()) {
        *error = "--launcher-image must not be empty";
        return false;
      }
      o->launcher_image = value;
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
  std::atomic<bool> stop{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    kubedist::log_info("main", std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                                   ", stopping gracefully");
    stop = true;
  });
  waiter.detach();

  auto r = kubedist::trainingjob::run_manager(options, stop);
  if (!r) {
    std::fprintf(stderr, "kubedist-operator: %s\n", r.error().message.c_str());
    return 1;
  }
  return 0;
}
