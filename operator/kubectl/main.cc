// kubectl-kubedist: the kubectl plugin that runs a torchrun command line as a TrainingJob (`kubectl kubedist ...`,
// or standalone).
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "kubectl/act/commands.h"
#include "kubectl/act/run.h"
#include "kubectl/cli/options.h"

int main(int argc, char** argv) {
  using namespace kubedist::kubectl;
  // Ctrl-C detaches from a followed job: every thread (the log streams' included, started later) inherits the blocked
  // mask, and one thread takes the signal and says so.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::atomic<bool> interrupted{false};
  std::thread([set, &interrupted] {
    int sig = 0;
    if (sigwait(&set, &sig) == 0) interrupted = true;
  }).detach();

  const std::vector<std::string> args(argv + 1, argv + argc);
  auto inv = parse_invocation(args);
  if (!inv) {
    std::cerr << "kubectl-kubedist: " << inv.error().message << "\n";
    return 2;
  }
  const std::string& sub = inv->subcommand;
  int code = 0;
  if (sub == "help") {
    std::cout << usage();
  } else if (sub == "run") {
    code = run_command(inv->run, interrupted, std::cout, std::cerr);
  } else if (sub == "logs") {
    code = logs_command(inv->job, interrupted, std::cout, std::cerr);
  } else if (sub == "status") {
    code = status_command(inv->job, std::cout, std::cerr);
  } else if (sub == "list") {
    code = list_command(inv->job, std::cout, std::cerr);
  } else if (sub == "delete") {
    code = delete_command(inv->job, std::cout, std::cerr);
  }
  std::cout.flush();
  // A log stream's thread may still be parked in a request: do not wait for it.
  std::_Exit(code);
}
