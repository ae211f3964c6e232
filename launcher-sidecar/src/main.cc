// kubedist-launcher: a static, torchrun-compatible launcher (see launcher-sidecar/README.md).
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>

#include "agent.h"
#include "cli/completion.h"
#include "cli/numa_binding.h"
#include "workers/worker_env.h"
#include "process/descendants.h"
#include "util/fs_util.h"
#include "process/guard.h"
#include "install.h"
#include "cli/local_rank_style.h"
#include "cli/local_world_size.h"
#include "cli/python_invocation.h"
#include "process/python_probe.h"
#include "io/metrics_server.h"
#include "io/net.h"
#include "rendezvous/auth.h"
#include "rendezvous/client.h"
#include "rendezvous/host.h"
#include "rendezvous/hosting.h"
#include "workers/failure_summary.h"
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

// The signals --signals-to-handle names (and SIGCHLD) are blocked and taken synchronously (sigwaitinfo in the guard,
// a signalfd in the supervisor); the others keep their default action, as under torchrun. A handler is installed
// anyway: as PID 1 the kernel drops signals that have the default disposition, and a blocked signal with a handler
// stays pending. Returns the stop signals (SIGCHLD is blocked too).
sigset_t block_signals(const std::vector<int>& handled) {
  sigset_t stops, all;
  sigemptyset(&stops);
  for (int sig : handled) sigaddset(&stops, sig);
  all = stops;
  sigaddset(&all, SIGCHLD);
  std::vector<int> with_handler = handled;
  with_handler.push_back(SIGCHLD);
  for (int sig : with_handler) {
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

// --install DIR [--rdzv-secret-from FILE --rdzv-job UID]: the init container's mode.
int run_install(const Result<InstallRequest>& install) {
  if (!install) return fail_usage(install.error());
  const InstallRequest& req = install.value();
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

// What a valid command line and environment asked for, with what they name read and checked.
struct Launch {
  LaunchConfig config;
  std::string secret;  // the job's rendezvous secret ("": none)
  EventTrace trace;    // --rdzv-trace: off without it
  int nproc = 1;       // workers on this node
  std::vector<std::string> notes;  // what the launcher found out for itself, to say once the input is valid
};

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return text;
}

// The torch the workers' interpreter would import, found once without importing it: its major version decides the
// workers' environment (torch 1.x's NCCL_ASYNC_ERROR_HANDLING, 2.x's TORCH_NCCL_ASYNC_ERROR_HANDLING...), and
// under --legacy-launch with --local-rank-style=auto the spelling of the local rank argument.
void find_the_workers_torch(Launch& launch, const Env& env) {
  LaunchConfig& config = launch.config;
  const bool spelling = config.legacy_launch && !config.use_env && config.local_rank_style == "auto";
  const PythonInvocation python = python_invocation(config);
  if (python.interpreter.empty() && !spelling) return;  // --no-python of another program: 2.x's environment
  const auto sys_path = python.interpreter.empty() ? Result<std::vector<std::string>>(make_error("no interpreter"))
                                                   : python_sys_path(python, env, std::chrono::seconds(10));
  const WorkersTorch torch = find_workers_torch(python.interpreter, sys_path, read_text_file);
  config.workers_torch_major = torch.major();
  if (!spelling) return;
  const LocalRankChoice choice = choose_local_rank_arg(torch);
  config.local_rank_arg = choice.arg;
  launch.notes.push_back(choice.line);
}

// --numa-binding: each worker's CPUs from this machine's topology, within the launcher's own affinity.
std::optional<Error> plan_numa(Launch& launch, const Env& env) {
  LaunchConfig& config = launch.config;
  if (config.numa_binding.empty()) return std::nullopt;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::set<int> allowed;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &mask)) allowed.insert(cpu);
  const Sysfs fs{read_text_file, list_directory};
  const auto visible = env.count("CUDA_VISIBLE_DEVICES") ? std::optional<std::string>(env.at("CUDA_VISIBLE_DEVICES"))
                                                         : std::nullopt;
  auto plan = plan_numa_binding(config.numa_binding, launch.nproc, fs, allowed, visible);
  if (!plan) return make_error(plan.error());
  for (const auto& cpus : plan->cpus) config.worker_cpus.emplace_back(cpus.begin(), cpus.end());
  launch.notes.push_back(plan->line);
  return std::nullopt;
}

// Everything that can be wrong with the input beyond the flags themselves, checked before anything starts (exit
// code 2).
Result<Launch> configure(LaunchConfig parsed, const Env& env) {
  Launch launch;
  launch.config = std::move(parsed);
  const LaunchConfig& config = launch.config;
  if (config.help || !config.print_completion.empty()) return launch;
  if (!config.rdzv_secret_file.empty()) {
    auto read = read_rdzv_secret(config.rdzv_secret_file);
    if (!read) return make_error(read.error());
    launch.secret = *read;
    // A Secret J-rdzv that someone wrote before the operator could (it takes an AlreadyExists as its own) holds a
    // secret of that person's choosing: not signed with.
    if (const std::string held = config.rdzv_secret_fingerprint.empty() ? "" : secret_fingerprint(launch.secret);
        held != config.rdzv_secret_fingerprint)
      return make_error("--rdzv-secret-file " + config.rdzv_secret_file + ": a rendezvous secret of fingerprint " +
                        held + ", not the " + config.rdzv_secret_fingerprint + " the operator wrote for this job "
                        "(someone else wrote its Secret J-rdzv first): delete that Secret and this pod, and the "
                        "operator writes it again");
  }
  if (!config.rdzv_trace.empty()) {
    auto trace = EventTrace::open(config.rdzv_trace, config.node_rank);
    if (!trace) return make_error(trace.error());
    launch.trace = std::move(trace).value();
  }
  auto nproc =
      local_world_size(config.nproc_per_node, env, list_directory("/dev"), usable_cpu_count(), config.in_training_job);
  if (!nproc) return make_error(nproc.error());
  launch.nproc = *nproc;
  if (auto problem = check_virtual_local_rank(config, launch.nproc, env)) return make_error(*problem);
  if (!config.no_python) {
    // Once here rather than as many "cannot run" failures as there are workers.
    auto python = find_program(config.python, getenv("PATH"));
    if (!python && !config.python_source.empty())
      return make_error(config.python_source + ": cannot run the interpreter " + python.error());
    if (!python)
      return make_error("cannot run the script: " + python.error() +
                        " (set PYTHON_EXEC to a Python interpreter, or use --no-python)");
  }
  find_the_workers_torch(launch, env);
  if (auto error = plan_numa(launch, env)) return *error;
  return launch;
}

// Says what the environment decided, so that nothing it changed (or would have) goes unseen.
void report_environment(const Launch& launch, const Env& env) {
  const LaunchConfig& config = launch.config;
  if (!config.from_env.empty())
    write_all(2, "kubedist-launcher: from the environment: " + join(config.from_env, ", ") + "\n");
  if (!config.ignored_env.empty())
    write_all(2, "kubedist-launcher: ignoring " + join(config.ignored_env, ", ") +
                     ": read only in a TrainingJob's pod (KUBEDIST_JOB set); use flags or PET_* outside one\n");
  for (const auto& note : config.notes) write_all(2, "kubedist-launcher: " + note + "\n");
  for (const auto& note : launch.notes) write_all(2, "kubedist-launcher: " + note + "\n");
  if (!env.count("OMP_NUM_THREADS") && launch.nproc > 1)  // torchrun's notice, as one line
    write_all(2,
              "kubedist-launcher: setting OMP_NUM_THREADS=1 for each worker process by default, to avoid overloading "
              "your system; tune it for the best performance of your application (set OMP_NUM_THREADS yourself)\n");
}

// The connection caps (io/admission.h) and the workers' pipes and sockets must fit in the descriptor limit, whatever
// the pod's soft limit was: raised to the hard one, as the kernel allows without privilege (workers inherit it).
void raise_fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

// --standalone (master_port 0): the workers' store on a port free on this host, chosen once for the whole run, as
// torchrun --standalone does, and held for the rank-0 worker's store until the launcher ends (io/net.h).
std::optional<Error> pick_standalone_store_port(LaunchConfig& config, PortReservation& held) {
  if (config.master_port != 0) return std::nullopt;
  auto reserved = PortReservation::take("127.0.0.1");
  if (!reserved) return make_error(reserved.error());
  config.master_port = reserved->port();
  held = std::move(reserved.value());
  return std::nullopt;
}

// The launcher's two processes (see guard.h): the one that was started stays the guard until the supervisor ends.
struct Supervision {
  std::optional<int> guard_exit_code;  // set in the guard: its exit code, once the supervisor is gone
  pid_t guard = 0;
  sigset_t stop_signals;
  TerminalState terminal;
};

Supervision split_guard_and_supervisor(const LaunchConfig& config) {
  Supervision s;
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans come to us to be reaped
  s.stop_signals = block_signals(config.signals_to_handle);
  s.guard = getpid();
  s.terminal = probe_terminal();  // from the launcher's own process group, before the fork
  const pid_t supervisor = fork();
  if (supervisor < 0) {
    s.guard_exit_code = fail(std::string("fork: ") + std::strerror(errno), 1);
  } else if (supervisor > 0) {
    s.guard_exit_code = run_guard(supervisor, s.stop_signals);
  } else if (!become_supervisor(s.guard)) {
    s.guard_exit_code = 128 + SIGKILL;  // the guard is gone already: nothing was started yet
  }
  return s;
}

// The joining member retries on its own, so one lookup asks each server once, briefly: the loop stays responsive.
ResolverConfig brief_resolver() {
  ResolverConfig resolver = system_resolver_config();
  resolver.attempts = 1;
  resolver.timeout_ms = std::min(resolver.timeout_ms, 1000);
  return resolver;
}

// Hosts the rendezvous when the plan says so (nullptr: this launcher joins another's) and sets the node rank the
// rounds order it by. A port that node rank 0 cannot bind is an error.
Result<std::unique_ptr<RendezvousHost>> open_rendezvous(EventLoop& loop, LaunchConfig& config,
                                                        const std::string& secret, const ResolverConfig& resolver) {
  bool endpoint_is_local = false;
  if (hosting_depends_on_endpoint(config)) {
    auto addr = resolve_ipv4(config.rdzv_host, resolver);
    endpoint_is_local = addr && is_local_address(*addr);
  }
  const HostingPlan plan = plan_hosting(config, endpoint_is_local);
  std::unique_ptr<RendezvousHost> host;
  if (plan.host) {
    HostGuard guard = HostGuard::for_nodes(config.max_nodes);
    guard.secret = secret;
    guard.idle_timeout = std::chrono::milliseconds(static_cast<long>(config.idle_timeout * 1000));
    host = std::make_unique<RendezvousHost>(loop, coordinator_settings(config), guard);
    host->watch_progress(progress_settings(config));
  }
  if (plan.listen) {
    auto ok = host->listen(plan.bind_address, config.rdzv_port);
    if (!ok && plan.must_bind) return make_error(ok.error());
    if (!ok) host.reset();
  }
  if (host && !plan.store_address.empty()) host->announce_store(plan.store_address);
  config.node_rank = plan.node_rank;
  return host;
}

// The directory for error files and logs, announced when it holds logs; temporary: ours to remove.
Result<std::string> open_run_dir(const LaunchConfig& config, bool& temporary) {
  auto made = make_run_dir(config, temporary);
  if (!made) return made;
  if (!config.log_dir.empty()) write_all(2, "kubedist-launcher: worker logs in " + *made + "\n");
  if (temporary && (config.redirects.any() || config.tee.any()))
    write_all(2, "kubedist-launcher: worker logs in " + *made + " (set --log-dir to choose)\n");
  return made;
}

// Signals while the job runs: SIGCHLD reaps, a stop signal stops the workers (and sets `signalled`), the guard's
// death kills everything at once.
void watch_signals(EventLoop& loop, int signal_fd, pid_t guard, const sigset_t& handled, Agent& agent,
                   bool& signalled) {
  loop.watch(signal_fd, EPOLLIN, [signal_fd, guard, handled, &agent, &signalled](std::uint32_t) {
    signalfd_siginfo info;
    while (read(signal_fd, &info, sizeof info) == sizeof info) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGCHLD) {
        agent.reap_children();
      } else if (sig == SIGTERM && guard_died(guard)) {
        // The launcher was killed (SIGKILL, say) and nobody waits for us: no grace, leave nothing behind.
        write_all(2, "kubedist-launcher: the launcher process died: killing every worker\n");
        kill_and_reap_descendants(kKillPatienceMs);
        _exit(128 + SIGKILL);
      } else if (!sigismember(&handled, sig)) {
        // SIGTERM sent to this process itself while --signals-to-handle leaves it out: its default action, which
        // takes the workers along.
        kill_and_reap_descendants(kKillPatienceMs);
        _exit(128 + sig);
      } else {
        signalled = true;
        agent.shutdown(static_cast<int>(info.ssi_signo));
      }
    }
  });
}

Result<std::unique_ptr<MetricsServer>> start_metrics(EventLoop& loop, const LaunchConfig& config,
                                                     LauncherMetrics& metrics) {
  if (config.metrics_port < 0) return std::unique_ptr<MetricsServer>();
  auto server = std::make_unique<MetricsServer>(loop, metrics);
  auto ok = server->listen(config.metrics_addr == "0.0.0.0" ? "" : config.metrics_addr, config.metrics_port);
  if (!ok) return make_error(ok.error());
  write_all(2, "kubedist-launcher: metrics on " + config.metrics_addr + ":" + std::to_string(server->port()) +
                   "/metrics\n");
  return server;
}

// Node 0 talks to the coordinator in-process; the others over TCP.
std::unique_ptr<RendezvousMember> make_member(EventLoop& loop, const LaunchConfig& config, RendezvousHost* host,
                                              Agent& agent, const std::string& secret, const ResolverConfig& resolver) {
  if (host) return host->local_member(agent.member_events());
  return std::make_unique<TcpMember>(loop, config.rdzv_host, config.rdzv_port,
                                     std::chrono::milliseconds(static_cast<long>(config.join_timeout * 1000)),
                                     resolver, agent.member_events(), secret);
}

// The job succeeded: node 0 leaves its last STATUS in the termination message, so that a job that ended before the
// operator's poller asked (a short one) still shows its final progress (kubectl get tj, status.progress). A file that
// cannot be written costs a warning, never the exit code.
void write_final_status(const LaunchConfig& config, const RendezvousHost& host) {
  if (config.termination_log.empty()) return;
  const std::string line = final_status_line(host.status_report());
  if (line.empty()) return;
  auto written = write_termination_log(config.termination_log, line);
  if (!written) write_all(2, "kubedist-launcher: warning: " + written.error() + "\n");
}

// Other jobs on this endpoint rendezvous here: serve them until they are over (or a signal ends it).
void serve_other_runs(EventLoop& loop, RendezvousHost& host, int signal_fd, Agent& agent) {
  std::string runs;
  for (const auto& id : host.other_runs_active()) runs += (runs.empty() ? "" : ", ") + id;
  write_all(2, "kubedist-launcher: this job is over; still hosting the rendezvous of run " + runs + "\n");
  host.on_other_runs_over([&loop] { loop.stop(); });
  loop.unwatch(signal_fd);
  loop.watch(signal_fd, EPOLLIN, [&loop, signal_fd, &agent](std::uint32_t) {
    signalfd_siginfo info;
    while (read(signal_fd, &info, sizeof info) == sizeof info) {
      if (info.ssi_signo == SIGCHLD) agent.reap_children();
      else loop.stop();
    }
  });
  loop.run();
}

// The supervisor: rendezvous, workers, signals and /metrics on one event loop until the job is over.
int supervise(Launch launch, const Env& env, const Supervision& supervision) {
  LaunchConfig& config = launch.config;
  sigset_t signalfd_mask = supervision.stop_signals;
  sigaddset(&signalfd_mask, SIGCHLD);
  // SIGTERM is how the kernel says the guard died (PR_SET_PDEATHSIG), also when --signals-to-handle leaves it out.
  sigaddset(&signalfd_mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &signalfd_mask, nullptr);
  const int signal_fd = signalfd(-1, &signalfd_mask, SFD_NONBLOCK | SFD_CLOEXEC);
  EventLoop loop;
  LauncherMetrics metrics;
  const ResolverConfig resolver = brief_resolver();
  auto host = open_rendezvous(loop, config, launch.secret, resolver);
  if (!host) return fail(host.error(), 1);

  bool temporary_run_dir = false;
  auto run_dir = open_run_dir(config, temporary_run_dir);
  if (!run_dir) return fail(run_dir.error(), 1);
  Agent agent(loop, config, env, launch.nproc, *run_dir, metrics, supervision.terminal, std::move(launch.trace));
  bool signalled = false;  // told to stop: then it does not linger for other jobs' rendezvous either
  watch_signals(loop, signal_fd, supervision.guard, supervision.stop_signals, agent, signalled);
  auto metrics_server = start_metrics(loop, config, metrics);
  if (!metrics_server) return fail(metrics_server.error(), 1);

  auto member = make_member(loop, config, host.value().get(), agent, launch.secret, resolver);
  agent.start(*member);
  loop.run();
  if (host.value() && !signalled && !host.value()->other_runs_active().empty())
    serve_other_runs(loop, *host.value(), signal_fd, agent);
  if (host.value() && agent.exit_code() == 0) write_final_status(config, *host.value());
  if (temporary_run_dir && !config.redirects.any() && !config.tee.any()) remove_tree(*run_dir);
  return agent.exit_code().value_or(1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (auto install = install_request(args)) return run_install(*install);
  const Env env = current_env();
  auto parsed = parse_launch_config(args, env);
  if (!parsed) return fail_usage(parsed.error());
  const std::string termination_log = parsed->termination_log;
  auto launch = configure(std::move(parsed).value(), env);
  if (!launch) {
    // What is wrong beyond the flags themselves (the secret file, the workers' count, the interpreter) is the pod's
    // termination message too, so that status.lastFailure says it; a file that cannot be written changes nothing.
    if (!termination_log.empty()) (void)write_termination_log(termination_log, one_line(launch.error()));
    return fail_usage(launch.error());
  }
  if (launch->config.help) {
    write_all(1, usage_text());
    return 0;
  }
  if (!launch->config.print_completion.empty()) {
    write_all(1, completion_script(launch->config.print_completion));
    return 0;
  }
  report_environment(*launch, env);
  raise_fd_limit();
  PortReservation standalone_store;
  if (auto error = pick_standalone_store_port(launch.value().config, standalone_store))
    return fail(error->message, 1);
  const Supervision supervision = split_guard_and_supervisor(launch->config);
  if (supervision.guard_exit_code) return *supervision.guard_exit_code;
  return supervise(std::move(launch).value(), env, supervision);
}
