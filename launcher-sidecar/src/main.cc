// kubedist-launcher: a static, torchrun-compatible launcher (see launcher-sidecar/README.md).
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "agent.h"
#include "process/descendants.h"
#include "util/fs_util.h"
#include "process/guard.h"
#include "install.h"
#include "cli/local_world_size.h"
#include "io/metrics_server.h"
#include "io/net.h"
#include "rendezvous/auth.h"
#include "rendezvous/client.h"
#include "rendezvous/host.h"
#include "io/resolver.h"

extern char** environ;

using namespace kubedist::launcher;

namespace {

int fail(const std::string& message, int code) {
  write_all(2, "kubedist-launcher: " + message + "\n");
  return code;
}

int fail_usage(const std::string& message) { return fail(message, 2); }

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

Env current_env() {
  Env env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

// Signals are blocked and taken synchronously (sigwaitinfo in the guard, a signalfd in the supervisor). A handler
// is installed anyway: as PID 1 the kernel drops signals that have the default disposition, and a blocked signal
// with a handler stays pending. Returns the stop signals (SIGCHLD is blocked too).
sigset_t block_signals() {
  sigset_t stops, all;
  sigemptyset(&stops);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stops, sig);
  all = stops;
  sigaddset(&all, SIGCHLD);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigaction(sig, &sa, nullptr);
  }
  sigprocmask(SIG_BLOCK, &all, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return stops;
}

// The directory for error files and logs. With --log-dir, a fresh LOG_DIR/RUN_ID_XXXXXX per run, as torchrun
// makes one (tempfile.mkdtemp(prefix=RUN_ID + "_", dir=LOG_DIR)): a rerun with the same run id keeps the earlier
// run's logs. Without, a fresh temporary directory (temporary=true: ours to remove unless it holds logs); without a
// writable temporary directory (an image without /tmp) workers run without error files.
Result<std::string> make_run_dir(const LaunchConfig& config, bool& temporary) {
  temporary = false;
  if (!config.log_dir.empty()) {
    std::string tmpl = config.log_dir + "/" + config.run_id + "_XXXXXX";
    if (!make_dirs(config.log_dir) || !mkdtemp(tmpl.data()))
      return make_error("--log-dir: cannot create a directory in " + config.log_dir + ": " + std::strerror(errno));
    return tmpl;
  }
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/kubedist-launcher-XXXXXX";
  if (!mkdtemp(tmpl.data())) return std::string("/nonexistent/kubedist-launcher");
  temporary = true;
  return tmpl;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto install = install_request(args)) {
    if (!*install) return fail_usage(install->error());
    const InstallRequest& req = install->value();
    // The secret first: a pod whose launcher could not sign its rendezvous must not get a launcher either.
    std::string derived;
    if (!req.rdzv_secret_from.empty()) {
      auto secret = install_job_secret(req.dir, req.rdzv_secret_from, req.rdzv_job);
      if (!secret) return fail(secret.error(), 1);
      derived = *secret;
    }
    auto installed = install_self(req.dir);
    if (!installed) return fail(installed.error(), 1);
    write_all(1, "kubedist-launcher: installed " + *installed + "\n");
    if (!derived.empty()) write_all(1, "kubedist-launcher: derived the job's rendezvous secret into " + derived + "\n");
    return 0;
  }
  const Env env = current_env();
  auto parsed = parse_launch_config(args, env);
  if (!parsed) return fail_usage(parsed.error());
  LaunchConfig config = parsed.value();
  if (config.help) {
    write_all(1, usage_text());
    return 0;
  }
  std::string secret;
  if (!config.rdzv_secret_file.empty()) {
    auto read = read_rdzv_secret(config.rdzv_secret_file);
    if (!read) return fail_usage(read.error());
    secret = *read;
  }
  auto nproc =
      local_world_size(config.nproc_per_node, env, list_directory("/dev"), usable_cpu_count(), config.in_training_job);
  if (!nproc) return fail_usage(nproc.error());
  if (!config.no_python) {
    // Once here rather than as many "cannot run" failures as there are workers.
    auto python = find_program(config.python, getenv("PATH"));
    if (!python && !config.python_source.empty())
      return fail_usage(config.python_source + ": cannot run the interpreter " + python.error());
    if (!python)
      return fail_usage("cannot run the script: " + python.error() +
                        " (set PYTHON_EXEC to a Python interpreter, or use --no-python)");
  }
  // Valid: say what the environment decided, so that nothing it changed (or would have) goes unseen.
  if (!config.from_env.empty())
    write_all(2, "kubedist-launcher: from the environment: " + join(config.from_env, ", ") + "\n");
  if (!config.ignored_env.empty())
    write_all(2, "kubedist-launcher: ignoring " + join(config.ignored_env, ", ") +
                     ": read only in a TrainingJob's pod (KUBEDIST_JOB set); use flags or PET_* outside one\n");
  if (config.master_port == 0) {  // --standalone
    auto port = pick_free_port("127.0.0.1");
    if (!port) return fail(port.error(), 1);
    config.master_port = *port;
  }
  if (!env.count("OMP_NUM_THREADS") && *nproc > 1)  // torchrun's notice, as one line
    write_all(2,
              "kubedist-launcher: setting OMP_NUM_THREADS=1 for each worker process by default, to avoid overloading "
              "your system; tune it for the best performance of your application (set OMP_NUM_THREADS yourself)\n");

  // Two processes, so that no SIGKILL leaves a worker behind (see guard.h).
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans come to us to be reaped
  const sigset_t stop_signals = block_signals();
  const pid_t guard = getpid();
  const TerminalState terminal = probe_terminal();  // from the launcher's own process group, before the fork
  const pid_t supervisor = fork();
  if (supervisor < 0) return fail(std::string("fork: ") + std::strerror(errno), 1);
  if (supervisor > 0) return run_guard(supervisor, stop_signals);
  if (!become_supervisor(guard)) return 128 + SIGKILL;  // the guard is gone already: nothing was started yet
  sigset_t signalfd_mask = stop_signals;
  sigaddset(&signalfd_mask, SIGCHLD);
  const int signal_fd = signalfd(-1, &signalfd_mask, SFD_NONBLOCK | SFD_CLOEXEC);
  EventLoop loop;
  LauncherMetrics metrics;

  // Who hosts the rendezvous: node rank 0. Without a node rank (torchrun's c10d style, the same command on every
  // node), the node that the endpoint's address belongs to, and of several launchers on that host the first to
  // bind the port; the others join it.
  // The joining member retries on its own, so one lookup asks each server once, briefly: the loop stays responsive.
  ResolverConfig resolver = system_resolver_config();
  resolver.attempts = 1;
  resolver.timeout_ms = std::min(resolver.timeout_ms, 1000);
  bool try_host = config.node_rank == 0;
  if (config.multi_node() && !config.node_rank_given) {
    auto addr = resolve_ipv4(config.rdzv_host, resolver);
    try_host = addr && is_local_address(*addr);
  }
  std::unique_ptr<RendezvousHost> host;
  if (try_host) {
    HostGuard guard = HostGuard::for_nodes(config.max_nodes);
    guard.secret = secret;
    guard.idle_timeout = std::chrono::milliseconds(static_cast<long>(config.idle_timeout * 1000));
    host = std::make_unique<RendezvousHost>(loop, coordinator_settings(config), guard);
    if (config.multi_node()) {
      // Listen on the endpoint's own address when it is a loopback one (tests); else on every address.
      auto ip = parse_ipv4(config.rdzv_host);
      std::string bind = ip && (ntohl(ip->s_addr) >> 24) == 127 ? config.rdzv_host : "";
      auto ok = host->listen(bind, config.rdzv_port);
      if (!ok && config.node_rank_given) return fail(ok.error(), 1);
      if (!ok) host.reset();
      // Without --master-addr the other nodes' workers could only guess 127.0.0.1: each round names the store.
      if (host) host->announce_store(config.rdzv_host);
    }
  }
  // The round assigns GROUP_RANK; node rank 0 only orders it. A launcher on the endpoint's host that found the
  // port taken (another launcher of this job, or of another job on the same endpoint) is node rank 0 as well:
  // the store each round names is on this host, so one of its launchers must be group rank 0.
  if (!host && !config.node_rank_given) config.node_rank = try_host ? 0 : 1;

  bool temporary_run_dir = false;
  auto made_run_dir = make_run_dir(config, temporary_run_dir);
  if (!made_run_dir) return fail(made_run_dir.error(), 1);
  const std::string run_dir = *made_run_dir;
  if (!config.log_dir.empty()) write_all(2, "kubedist-launcher: worker logs in " + run_dir + "\n");
  if (temporary_run_dir && (config.redirects.any() || config.tee.any()))
    write_all(2, "kubedist-launcher: worker logs in " + run_dir + " (set --log-dir to choose)\n");
  Agent agent(loop, config, env, *nproc, run_dir, metrics, terminal);
  bool signalled = false;  // told to stop: then it does not linger for other jobs' rendezvous either
  loop.watch(signal_fd, EPOLLIN, [&](std::uint32_t) {
    signalfd_siginfo info;
    while (read(signal_fd, &info, sizeof info) == sizeof info) {
      if (info.ssi_signo == SIGCHLD) {
        agent.reap_children();
      } else if (info.ssi_signo == SIGTERM && guard_died(guard)) {
        // The launcher was killed (SIGKILL, say) and nobody waits for us: no grace, leave nothing behind.
        write_all(2, "kubedist-launcher: the launcher process died: killing every worker\n");
        kill_descendants();
        _exit(128 + SIGKILL);
      } else {
        signalled = true;
        agent.shutdown(static_cast<int>(info.ssi_signo));
      }
    }
  });

  std::unique_ptr<MetricsServer> metrics_server;
  if (config.metrics_port >= 0) {
    metrics_server = std::make_unique<MetricsServer>(loop, metrics);
    auto ok = metrics_server->listen(config.metrics_addr == "0.0.0.0" ? "" : config.metrics_addr, config.metrics_port);
    if (!ok) return fail(ok.error(), 1);
    write_all(2, "kubedist-launcher: metrics on " + config.metrics_addr + ":" + std::to_string(metrics_server->port()) +
                     "/metrics\n");
  }

  std::unique_ptr<RendezvousMember> member;
  if (host) {
    member = host->local_member(agent.member_events());
  } else {
    member = std::make_unique<TcpMember>(loop, config.rdzv_host, config.rdzv_port,
                                         std::chrono::milliseconds(static_cast<long>(config.join_timeout * 1000)),
                                         resolver, agent.member_events(), secret);
  }
  agent.start(*member);
  loop.run();
  if (host && !signalled && !host->other_runs_active().empty()) {
    // Other jobs on this endpoint rendezvous here: serve them until they are over (or a signal ends it).
    std::string runs;
    for (const auto& id : host->other_runs_active()) runs += (runs.empty() ? "" : ", ") + id;
    write_all(2, "kubedist-launcher: this job is over; still hosting the rendezvous of run " + runs + "\n");
    host->on_other_runs_over([&] { loop.stop(); });
    loop.unwatch(signal_fd);
    loop.watch(signal_fd, EPOLLIN, [&](std::uint32_t) {
      signalfd_siginfo info;
      while (read(signal_fd, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGCHLD) agent.reap_children();
        else loop.stop();
      }
    });
    loop.run();
  }
  if (temporary_run_dir && !config.redirects.any() && !config.tee.any()) remove_tree(run_dir);
  return agent.exit_code().value_or(1);
}
