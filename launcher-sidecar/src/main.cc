// kubedist-launcher: a static, torchrun-compatible launcher (see launcher-sidecar/README.md).
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "agent.h"
#include "fs_util.h"
#include "install.h"
#include "local_world_size.h"
#include "metrics_server.h"
#include "net.h"
#include "rendezvous_auth.h"
#include "rendezvous_client.h"
#include "rendezvous_host.h"
#include "resolver.h"

extern char** environ;

using namespace kubedist::launcher;

namespace {

int fail(const std::string& message, int code) {
  write_all(2, "kubedist-launcher: " + message + "\n");
  return code;
}

int fail_usage(const std::string& message) { return fail(message, 2); }

Env current_env() {
  Env env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

// Signals arrive through a signalfd. A handler is installed anyway: as PID 1 the kernel drops signals that
// have the default disposition, and a blocked signal with a handler stays pending for the signalfd.
int setup_signals() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) {
    sigaddset(&mask, sig);
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigaction(sig, &sa, nullptr);
  }
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

// The directory for error files and logs: LOG_DIR/RUN_ID, else a fresh temporary one (temporary=true: ours to
// remove). Without a writable temporary directory (an image without /tmp) workers run without error files.
std::string make_run_dir(const LaunchConfig& config, bool& temporary) {
  temporary = false;
  if (!config.log_dir.empty()) {
    std::string dir = config.log_dir + "/" + config.run_id;
    if (!make_dirs(dir)) write_all(2, "kubedist-launcher: cannot create the log directory " + dir + "\n");
    return dir;
  }
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/kubedist-launcher-XXXXXX";
  if (!mkdtemp(tmpl.data())) return "/nonexistent/kubedist-launcher";
  temporary = true;
  return tmpl;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto install = install_request(args)) {
    if (!*install) return fail_usage(install->error());
    auto installed = install_self(install->value());
    if (!installed) return fail(installed.error(), 1);
    write_all(1, "kubedist-launcher: installed " + *installed + "\n");
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
  auto nproc = local_world_size(config.nproc_per_node, env, list_directory("/dev"), usable_cpu_count());
  if (!nproc) return fail_usage(nproc.error());
  if (config.master_port == 0) {  // --standalone
    auto port = pick_free_port("127.0.0.1");
    if (!port) return fail(port.error(), 1);
    config.master_port = *port;
  }
  if (!env.count("OMP_NUM_THREADS") && *nproc > 1)
    write_all(2, "kubedist-launcher: setting OMP_NUM_THREADS=1 for each worker (set it yourself to tune)\n");

  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans of our workers come to us to be reaped
  const int signal_fd = setup_signals();
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
    CoordinatorSettings settings{config.run_id, config.min_nodes, config.max_nodes, config.max_restarts,
                                 std::chrono::milliseconds(static_cast<long>(config.last_call_timeout * 1000)),
                                 std::chrono::milliseconds(static_cast<long>(config.join_timeout * 1000)),
                                 config.permanent_exit_codes};
    HostGuard guard = HostGuard::for_nodes(config.max_nodes);
    guard.secret = secret;
    guard.idle_timeout = std::chrono::milliseconds(static_cast<long>(config.idle_timeout * 1000));
    host = std::make_unique<RendezvousHost>(loop, settings, guard);
    if (config.multi_node()) {
      // Listen on the endpoint's own address when it is a loopback one (tests); else on every address.
      auto ip = parse_ipv4(config.rdzv_host);
      std::string bind = ip && (ntohl(ip->s_addr) >> 24) == 127 ? config.rdzv_host : "";
      auto ok = host->listen(bind, config.rdzv_port);
      if (!ok && config.node_rank_given) return fail(ok.error(), 1);
      if (!ok) host.reset();
    }
  }
  if (!host) config.node_rank = config.node_rank_given ? config.node_rank : 1;  // the round assigns GROUP_RANK

  bool temporary_run_dir = false;
  const std::string run_dir = make_run_dir(config, temporary_run_dir);
  if (temporary_run_dir && (config.redirects.any() || config.tee.any()))
    write_all(2, "kubedist-launcher: worker logs in " + run_dir + " (set --log-dir to choose)\n");
  Agent agent(loop, config, env, *nproc, run_dir, metrics);
  loop.watch(signal_fd, EPOLLIN, [&](std::uint32_t) {
    signalfd_siginfo info;
    while (read(signal_fd, &info, sizeof info) == sizeof info) {
      if (info.ssi_signo == SIGCHLD) {
        agent.reap_children();
      } else {
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
  if (temporary_run_dir && !config.redirects.any() && !config.tee.any()) remove_tree(run_dir);
  return agent.exit_code().value_or(1);
}
