#!/usr/bin/python3
"""Operator benchmark (not a test; never run by ctest): on its own kwok cluster, create JOBS jobs of NODES pods each
and print the time from the last create until every pod exists and every job runs, API writes per job (counted
from the API server's audit log by user agent), the operator's peak RSS and CPU seconds.

  tests/bench/operator/bench.py [OPERATOR_BINARY]             kubedist alone (default build/all/operator/...)
  tests/bench/operator/bench.py --progress S [OPERATOR_BINARY --launcher LAUNCHER_BINARY]
      kubedist alone; once every job runs, a real kubedist-launcher per job plays its node 0 on node 0's pod
      address (kwok's pods get loopback ones: KUBEDIST_POD_CIDR 127.200.0.0/16 here) with one worker reporting
      every step through the progress helper, and for S seconds the operator polls each STATUS (every 10 s) while
      its status writes are counted: writes per job per minute beside the steps the statuses advanced
  tests/bench/operator/bench.py --compare [OPERATOR_BINARY]   side by side with Kubeflow's Training Operator v1
      (PyTorchJobs of 1 Master + NODES-1 Workers), RUNS times each, alternating, each on a fresh cluster; prints
      every run, the medians and the ratios
  env: JOBS (200), NODES (8), WORKERS (16), RUNS (2), KUBEDIST_NODES (fake nodes, 16: room for 1,600 pods),
       NAMESPACES (1; kubedist alone: the jobs spread round-robin over that many namespaces, the operator watching
       all of them), BENCH_CLUSTER (bench-op: the cluster's name, brought up fresh and down again),
       KUBEDIST_POD_CIDR (10.200.0.0/16), KUBEDIST_CACHE (<repo>/.cache)

Kubeflow's operator (built by `deploy/local/tools.sh bench`) runs as a local process with its defaults, as its
manifests deploy it (1 controller thread, client QPS 20, burst 30), and once more with
KUBEFLOW_FLAGS="--controller-threads=4 --kube-api-qps=500 --kube-api-burst=1000" when KUBEFLOW_TUNED=1. Its
webhooks are not called (no ValidatingWebhookConfiguration entries): it needs its webhook Secret and an empty
configuration to start, and it serves its webhook port inside a network namespace of its own.

Whatever it started (operator, port forwarder, network namespace, cluster) is stopped on exit, also on SIGINT,
SIGTERM and SIGHUP.
"""
import argparse
import base64
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lib"))
import kube  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.."))
CLUSTER_SH = os.path.join(REPO, "deploy/local/cluster.sh")
NS = "bench"
WEBHOOK_CERTS = "/tmp/k8s-webhook-server"
KUBEFLOW_TUNED_FLAGS = "--controller-threads=4 --kube-api-qps=500 --kube-api-burst=1000"
DEADLINE_S = 900
HZ = os.sysconf("SC_CLK_TCK")
NPROC = len(os.sched_getaffinity(0))
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class BenchError(Exception):
    """A failure that ends the benchmark with its message (exit 1)."""


def env_int(name, default, low=1, high=None):
    value = os.environ.get(name, str(default))
    if not re.fullmatch(r"[0-9]+", value) or int(value) < low or (high is not None and int(value) > high):
        bound = f"{low} to {high}" if high is not None else f"at least {low}"
        usage_error(f"{name} must be {bound}, got '{value}'")
    return int(value)


def usage_error(message):
    print(f"bench.py: {message}", file=sys.stderr)
    sys.exit(2)


def kubectl(*args, input=None, check=True):
    """Runs kubectl; returns its stdout (raises BenchError with its stderr when check and it fails)."""
    try:
        return kube.kubectl(*args, input=input, check=check).stdout
    except kube.CommandFailed as e:
        raise BenchError(str(e)) from None


def cpu_ticks(pid):
    """User + system clock ticks of a process (fields 14 and 15 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # fields from 3 (state) on; the name may hold spaces
    return int(fields[11]) + int(fields[12])


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise BenchError(f"no VmHWM for process {pid}")


def tail(path, lines=20):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def fmt_row(row):
    label, pods, running, writes, rss, cpu = row
    return f"  {label:<28} {pods:8.1f} s {running:10.1f} s {writes:10.2f} {rss:9.1f} MiB {cpu:8.1f} s"


def header():
    return f"  {'':<28} {'all pods':>10} {'all running':>12} {'writes/job':>10} {'peak RSS':>13} {'CPU':>10}"


def ratio(x, y):
    return x / y if y > 0 else 0


class Bench:
    def __init__(self, op, compare, progress_s=0, launcher=None):
        self.op = op
        self.progress_s = progress_s
        self.launcher = launcher
        self.launchers = []
        self.jobs = env_int("JOBS", 200)
        self.nodes = env_int("NODES", 8)
        self.workers = env_int("WORKERS", 16)
        self.runs = env_int("RUNS", 2)
        namespaces = os.environ.get("NAMESPACES", "1")
        if not re.fullmatch(r"[1-9][0-9]{0,2}", namespaces):
            usage_error(f"NAMESPACES must be 1 to 999, got '{namespaces}'")
        self.namespaces = int(namespaces)
        if self.namespaces != 1 and compare:
            usage_error("NAMESPACES is for kubedist alone")
        self.cluster = os.environ.get("BENCH_CLUSTER", "bench-op")
        self.cache = os.environ.setdefault("KUBEDIST_CACHE", os.path.join(REPO, ".cache"))
        self.kwok_nodes = os.environ.setdefault("KUBEDIST_NODES", "16")
        os.environ["KUBEDIST_REAL_NODES"] = "0"
        os.environ["KUBEDIST_AUDIT"] = "1"
        # Pod addresses outside loopback (the API server refuses loopback ones in a Service's endpoints, and the
        # endpoint controllers would retry every job's Service in a loop, which a real cluster never does). Nothing
        # connects to them: the operator's STATUS poller is off (--launcher-poll-interval=0); kwok's pods run
        # nothing.
        # With --progress the launchers must listen on the pods' addresses, so they are loopback ones (127.200/16): the
        # endpoint controllers then retry every Service, the control plane's CPU and not the operator's.
        os.environ.setdefault("KUBEDIST_POD_CIDR", "127.200.0.0/16" if progress_s else "10.200.0.0/16")
        os.environ["PATH"] = os.path.join(self.cache, "bin") + os.pathsep + os.environ.get("PATH", "")
        self.kubeflow_version = subprocess.run(
            ["bash", "-c", '. "$1" && echo "$KUBEFLOW_TRAINING_OPERATOR_VERSION"', "versions",
             os.path.join(REPO, "deploy/local/versions.sh")], capture_output=True, text=True, check=True).stdout.strip()
        self.netns = f"kdbench-{os.getpid()}"
        self.work = None
        self.op_proc = None
        self.forward = None
        self.netns_added = False
        self.cluster_started = False
        self.audit = None
        self.agent = None
        self.rows = []

    # -- what this run starts, and stopping it ----------------------------------------------------------------

    def cleanup(self):
        """Stops everything this run started; safe to call at any point, and more than once."""
        self.stop_launchers()
        if self.op_proc is not None and self.op_proc.poll() is None:
            self.op_proc.kill()
            self.op_proc.wait()
        self.op_proc = None
        self.stop_forward()
        if self.cluster_started:
            subprocess.run([CLUSTER_SH, "down", self.cluster], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.cluster_started = False
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(WEBHOOK_CERTS, ignore_errors=True)

    def stop_forward(self):
        if self.forward is not None:
            try:
                os.killpg(self.forward.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.forward.wait()
            self.forward = None
        if self.netns_added:
            subprocess.run(["ip", "netns", "del", self.netns], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.netns_added = False

    def stop_launchers(self):
        for proc in self.launchers:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        self.launchers = []

    def stop_operator(self):
        if self.op_proc is not None:
            self.op_proc.terminate()
            self.op_proc.wait()
            self.op_proc = None
        self.stop_forward()

    # -- the cluster and the jobs ------------------------------------------------------------------------------

    def ns_of(self, i):
        """The namespace of job i."""
        return NS if self.namespaces == 1 else f"{NS}-{i % self.namespaces}"

    def cluster_up(self):
        """A fresh cluster (audit log from empty) with the namespaces; sets KUBECONFIG and the audit log's path."""
        subprocess.run([CLUSTER_SH, "down", self.cluster], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.cluster_started = True
        up = subprocess.run([CLUSTER_SH, "up", self.cluster], stdout=subprocess.PIPE, text=True)
        if up.returncode != 0:
            raise BenchError(f"cluster.sh up {self.cluster} failed ({up.returncode})")
        kubeconfig = up.stdout.strip().splitlines()[-1]
        os.environ["KUBECONFIG"] = kubeconfig
        self.audit = os.path.join(os.path.dirname(kubeconfig), "logs/audit.log")
        for i in range(self.namespaces):
            kubectl("create", "namespace", self.ns_of(i))

    def wait_crd(self, name):
        """Until the API server serves it (kubectl wait errors while the CRD has no conditions yet)."""
        deadline = time.monotonic() + 60
        while subprocess.run(["kubectl", "wait", "--for=condition=Established", "--timeout=10s", f"crd/{name}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
            if time.monotonic() >= deadline:
                raise BenchError(f"CRD {name} not established")
            time.sleep(0.2)

    def kubedist_jobs(self):
        out = []
        for i in range(1, self.jobs + 1):
            out.append(f"---\napiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\n"
                       f"metadata: {{name: job-{i}, namespace: {self.ns_of(i)}}}\n")
            out.append(f"spec:\n  replicas: {self.nodes}\n  template:\n    spec:\n"
                       "      containers: [{name: trainer, image: busybox, command: [python, train.py]}]\n")
        return "".join(out)

    def kubeflow_jobs(self):
        c = "{spec: {containers: [{name: pytorch, image: busybox, command: [python, train.py]}]}}"
        out = []
        for i in range(1, self.jobs + 1):
            out.append(f"---\napiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
                       f"metadata: {{name: job-{i}, namespace: {NS}}}\n")
            out.append("spec:\n  pytorchReplicaSpecs:\n"
                       f"    Master: {{replicas: 1, restartPolicy: OnFailure, template: {c}}}\n")
            out.append(f"    Worker: {{replicas: {self.nodes - 1}, restartPolicy: OnFailure, template: {c}}}\n")
        return "".join(out)

    # -- the operators -----------------------------------------------------------------------------------------

    def start_kubedist(self):
        kubectl("apply", "--server-side", "--force-conflicts", "-f",
                os.path.join(REPO, "crd/kubedist.io_trainingjobs.yaml"))
        self.wait_crd("trainingjobs.kubedist.io")
        scope = ["--namespace", NS] if self.namespaces == 1 else []
        log_path = os.path.join(self.work, "operator.log")
        with open(log_path, "w") as log:
            self.op_proc = subprocess.Popen(
                [self.op, *scope, "--workers", str(self.workers), "--probe-address", "127.0.0.1:0",
                 "--log-level", "info",
                 "--launcher-poll-interval=10s" if self.progress_s else "--launcher-poll-interval=0"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        port = None
        while True:
            if port is None:
                with open(log_path, errors="replace") as f:
                    m = re.search(r"probes listening on port ([0-9]+)", f.read())
                port = m and m.group(1)
            if port is not None:
                try:
                    with NO_PROXY.open(f"http://127.0.0.1:{port}/readyz", timeout=5):
                        break
                except OSError:
                    pass
            if self.op_proc.poll() is not None:
                raise BenchError(f"kubedist-operator exited ({self.op_proc.returncode}):\n{tail(log_path)}")
            if time.monotonic() >= deadline:
                raise BenchError(f"kubedist-operator not ready within 120 s:\n{tail(log_path)}")
            time.sleep(0.1)
        self.agent = "kubedist-operator"

    def start_kubeflow(self, tuned):
        """Kubeflow's operator in a network namespace of its own: its webhook server listens on every address of that
        namespace only; socat there carries its API connections to the API server on the host's 127.0.0.1 (entering
        this process's own network namespace: PID 1's is not readable here)."""
        moddir = os.path.join(REPO, "deploy/local/tools/kubeflow")
        gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], cwd=moddir, capture_output=True, text=True,
                                    check=True).stdout.strip()
        crds = f"{gomodcache}/github.com/kubeflow/training-operator@{self.kubeflow_version}/manifests/base/crds"
        if not os.path.isdir(crds):
            subprocess.run(["go", "mod", "download", "github.com/kubeflow/training-operator"], cwd=moddir, check=True)
        kubectl("apply", "--server-side", "-f", f"{crds}/kubeflow.org_pytorchjobs.yaml")
        self.wait_crd("pytorchjobs.kubeflow.org")
        kubectl("create", "namespace", "kubeflow")
        kubectl("-n", "kubeflow", "create", "secret", "generic", "training-operator-webhook-cert")
        kubectl("apply", "-f", "-", input="apiVersion: admissionregistration.k8s.io/v1\n"
                "kind: ValidatingWebhookConfiguration\nmetadata: {name: validator.training-operator.kubeflow.org}\n"
                "webhooks: []\n")
        server = kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
        port = server.rsplit(":", 1)[1]
        self.netns_added = True
        subprocess.run(["ip", "netns", "add", self.netns], check=True)
        subprocess.run(["ip", "-n", self.netns, "link", "set", "lo", "up"], check=True)
        in_netns = ["nsenter", f"--net=/run/netns/{self.netns}"]
        self.forward = subprocess.Popen(
            [*in_netns, "socat", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
             f"EXEC:nsenter --net=/proc/{os.getpid()}/ns/net socat STDIO TCP\\:127.0.0.1\\:{port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True)
        flags = os.environ.get("KUBEFLOW_FLAGS", KUBEFLOW_TUNED_FLAGS).split() if tuned else []
        log_path = os.path.join(self.work, "operator.log")
        with open(log_path, "w") as log:
            self.op_proc = subprocess.Popen(
                [*in_netns, os.path.join(self.cache, "bin/training-operator"), "--enable-scheme=pytorchjob",
                 "--namespace", NS, "--metrics-bind-address", "0", "--health-probe-bind-address", "127.0.0.1:8081",
                 *flags], env={**os.environ, "KUBEFLOW_NAMESPACE": "kubeflow"}, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        # Its cert rotator fills the webhook Secret and then waits for the kubelet to mount it where the webhook
        # server reads it; without a kubelet, this benchmark puts the Secret's files there.
        deadline = time.monotonic() + 120
        certs = os.path.join(WEBHOOK_CERTS, "serving-certs")
        shutil.rmtree(certs, ignore_errors=True)
        while True:
            out = kubectl("-n", "kubeflow", "get", "secret", "training-operator-webhook-cert", "-o", "json",
                          check=False)
            data = (json.loads(out).get("data") or {}) if out else {}
            if data.get("tls.crt"):
                break
            if time.monotonic() >= deadline:
                raise BenchError(f"no webhook certificate:\n{tail(log_path)}")
            time.sleep(0.2)
        os.makedirs(certs, exist_ok=True)
        for key in ("ca.crt", "tls.crt", "tls.key"):
            with open(os.path.join(certs, key), "wb") as f:
                f.write(base64.b64decode(data.get(key, "")))
        while subprocess.run([*in_netns, "curl", "-sf", "http://127.0.0.1:8081/readyz"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL).returncode != 0:
            if time.monotonic() >= deadline:
                raise BenchError(f"Kubeflow's operator not ready:\n{tail(log_path)}")
            if self.op_proc.poll() is not None:
                raise BenchError(f"Kubeflow's operator exited:\n{tail(log_path)}")
            time.sleep(0.2)
        self.agent = "training-operator"

    # -- counting ----------------------------------------------------------------------------------------------

    def pods(self, kind):
        if kind == "kubedist":
            out = kubectl("get", "pods", "-A", "-l", "kubedist.io/job-name", "--no-headers", check=False)
        else:
            out = kubectl("-n", NS, "get", "pods", "--no-headers", check=False)
        return len(out.splitlines())

    def running(self, kind):
        if kind == "kubedist":
            out = kubectl("get", "tj", "-A", "-o", "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}",
                          check=False)
            return out.splitlines().count("Running")
        out = kubectl("-n", NS, "get", "pytorchjobs", "-o", "json", check=False)
        items = json.loads(out)["items"] if out else []
        return sum(any(c.get("type") == "Running" and c.get("status") == "True"
                       for c in j.get("status", {}).get("conditions", [])) for j in items)

    def control_plane_ticks(self):
        """{name: ticks} (user + system) of each control-plane process of the bench cluster."""
        ticks = {}
        for path in sorted(glob.glob(os.path.join(os.path.dirname(os.environ["KUBECONFIG"]), "run/*.pid"))):
            try:
                with open(path) as f:
                    ticks[os.path.basename(path)[:-len(".pid")]] = cpu_ticks(int(f.read().strip()))
            except (OSError, ValueError):
                pass
        return ticks

    def api_writes(self):
        """Every write request the operator made, as the API server audited it (Events included)."""
        needle = f'"userAgent":"{self.agent}'.encode()
        with open(self.audit, "rb") as f:
            return sum(1 for line in f if needle in line)

    def wait_for(self, kind, what, count, want, deadline):
        while count(kind) < want:
            if time.monotonic() >= deadline:
                raise BenchError(f"{kind}: {what} within {DEADLINE_S} s")
            time.sleep(0.5)  # listing 1,600 pods costs the shared CPUs too: poll gently

    def run(self, kind, label=None):
        """One measured run on a fresh cluster; appends (label, seconds to pods, seconds to running, writes per job,
        peak RSS MiB, CPU seconds) to self.rows, each rounded as printed, and returns the control plane's CPU line."""
        self.cluster_up()
        jobs_yaml = os.path.join(self.work, "jobs.yaml")
        with open(jobs_yaml, "w") as f:
            f.write(self.kubedist_jobs() if kind == "kubedist" else self.kubeflow_jobs())
        if kind == "kubedist":
            self.start_kubedist()
        else:
            self.start_kubeflow(label == "kubeflow-tuned")
        pid = self.op_proc.pid
        ticks0 = cpu_ticks(pid)
        cp0 = self.control_plane_ticks()
        t_start = time.monotonic()
        kubectl("create", "-f", jobs_yaml)
        t_created = time.monotonic()
        deadline = time.monotonic() + DEADLINE_S
        self.wait_for(kind, "pods not all created", self.pods, self.jobs * self.nodes, deadline)
        t_pods = time.monotonic()
        self.wait_for(kind, "jobs not all running", self.running, self.jobs, deadline)
        t_running = time.monotonic()
        cp1 = self.control_plane_ticks()
        # Where the machine's CPU went from the first create to every job running: each control-plane process's
        # CPU seconds. kubectl's creates overlap the operator's work: the first row's times count from the last
        # create.
        t = t_running - t_start
        used = {name: (ticks - cp0.get(name, 0)) / HZ for name, ticks in cp1.items()}
        total = sum(used.values())
        per_process = "".join(f" {name} {u:.1f} s," for name, u in used.items())
        cpu_line = (f"  from the first create (kubectl took {t_created - t_start:.1f} s) to all running {t:.0f} s; "
                    f"CPU:{per_process} control plane {total:.1f} s "
                    f"({100 * total / (t * NPROC):.0f}% of the {NPROC} CPUs)")
        time.sleep(2)  # let the last status writes land before reading the counters
        if self.progress_s:
            per_minute, advanced, reported, window = self.progress_phase()
            print(f"kubedist-operator with progress: {self.jobs} TrainingJobs x {self.nodes} nodes, each job's node 0 a "
                  f"real launcher whose worker reports a step every 10 ms; the operator polls each STATUS every 10 s "
                  f"and writes progress at most every 30 s (--progress-write-interval)")
            print(f"  over {window:.0f} s: {per_minute:.2f} status writes per job per minute (all the operator's "
                  f"writes, Events included; the bound: 2 for progress alone), while the median job's status.progress."
                  f"step advanced {advanced:.0f} steps (to {reported:.0f})")
            self.stop_launchers()
        rss_kib = peak_rss_kib(pid)
        ticks = cpu_ticks(pid)
        writes = self.api_writes()
        self.stop_operator()
        self.rows.append((label or kind, round_as_printed(t_pods - t_created, 1),
                          round_as_printed(t_running - t_created, 1), round_as_printed(writes / self.jobs, 2),
                          round_as_printed(rss_kib / 1024, 1), round_as_printed((ticks - ticks0) / HZ, 1)))
        return cpu_line

    # -- jobs that report progress ------------------------------------------------------------------------------

    WORKER = r"""
import os, sys, time
from kubedist import progress
i = 0
while True:
    i += 1
    progress.step(i, total=10**9, loss=1.0 / i)
    time.sleep(float(sys.argv[1]))
"""

    def start_launchers(self, step_s):
        """A launcher per job on node 0's pod address, signing with the job's secret as the pod's would (its init
        container's own command derives it), one worker reporting a step every step_s seconds."""
        helper = os.path.join(REPO, "launcher-sidecar/python")
        worker = os.path.join(self.work, "worker.py")
        with open(worker, "w") as f:
            f.write(self.WORKER)
        ns_dir = os.path.join(self.work, "ns")
        os.makedirs(ns_dir, exist_ok=True)
        for i in range(self.namespaces):
            key = kubectl("-n", self.ns_of(i), "get", "secret", "kubedist-rendezvous", "-o",
                          "jsonpath={.data.secret}")
            with open(os.path.join(ns_dir, f"{self.ns_of(i)}.secret"), "wb") as f:
                f.write(base64.b64decode(key))
        pods = json.loads(kubectl("get", "pods", "-A", "-l", "kubedist.io/node-rank=0", "-o", "json"))["items"]
        for pod in pods:
            ns, job = pod["metadata"]["namespace"], pod["metadata"]["labels"]["kubedist.io/job-name"]
            ip = pod["status"]["podIP"]
            if not ip.startswith("127."):
                raise BenchError(f"pod {ns}/{pod['metadata']['name']} has address {ip}, not a loopback one")
            jdir = os.path.join(self.work, "jobs", f"{ns}-{job}")
            os.makedirs(os.path.join(jdir, "bin"), exist_ok=True)
            init = [a.replace("/kubedist/bin", os.path.join(jdir, "bin"))
                     .replace("/kubedist/rendezvous/secret", os.path.join(ns_dir, f"{ns}.secret"))
                    for a in pod["spec"]["initContainers"][0]["command"][1:]]
            subprocess.run([self.launcher, *init], check=True, stdout=subprocess.DEVNULL)
            env = dict(os.environ, PYTHONPATH=helper)
            with open(os.path.join(jdir, "launcher.log"), "w") as log:
                self.launchers.append(subprocess.Popen(
                    [self.launcher, "--nnodes=1:8", "--node-rank=0", f"--master-addr={ip}", "--master-port=29500",
                     f"--rdzv-endpoint={ip}:29501", f"--rdzv-id={job}", "--rdzv-conf=last_call_timeout=0.2",
                     f"--rdzv-secret-file={os.path.join(jdir, 'bin', 'rdzv-secret')}",
                     "--no-python", "--", "/usr/bin/python3", worker, str(step_s)],
                    env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))

    def statuses(self):
        return json.loads(kubectl("get", "tj", "-A", "-o", "json"))["items"]

    def progress_phase(self, step_s=0.01):
        """The progress window: every job's node 0 reports a step every step_s seconds; returns the figures."""
        self.start_launchers(step_s)
        deadline = time.monotonic() + 180
        while sum(1 for j in self.statuses() if j.get("status", {}).get("progress")) < self.jobs:
            if time.monotonic() >= deadline:
                raise BenchError("not every job shows status.progress within 180 s of its launcher's start")
            time.sleep(2)
        steps0 = {j["metadata"]["uid"]: j["status"]["progress"]["step"] for j in self.statuses()}
        writes0, t0 = self.api_writes(), time.monotonic()
        time.sleep(self.progress_s)
        writes1, t1 = self.api_writes(), time.monotonic()
        steps1 = {j["metadata"]["uid"]: j["status"]["progress"]["step"] for j in self.statuses()}
        minutes = (t1 - t0) / 60
        advanced = statistics.median(steps1[u] - steps0.get(u, 0) for u in steps1)
        reported = statistics.median(steps1[u] for u in steps1)
        return (writes1 - writes0) / self.jobs / minutes, advanced, reported, t1 - t0

    # -- the two modes -----------------------------------------------------------------------------------------

    def alone(self):
        cpu_line = self.run("kubedist")
        if self.progress_s:
            return
        with open(os.path.join(self.work, "operator.log"), errors="replace") as f:
            summaries = [line for line in f if "summary" in line]
        summary = summaries[-1] if summaries else ""

        def field(name):
            m = re.search(re.escape(name) + r"=([0-9.]*)", summary)
            return m.group(1) if m else ""

        print(f"kubedist-operator benchmark: {self.jobs} TrainingJobs x {self.nodes} nodes = {self.jobs * self.nodes} "
              f"pods, {self.workers} workers, {NPROC} CPUs, {self.kwok_nodes} kwok nodes")
        print(header())
        print(fmt_row(self.rows[-1]))
        print(f"  reconcile latency median / p99: {field('reconcile_median_ms')} ms / {field('reconcile_p99_ms')} ms "
              f"over {field('reconciles')} reconciles; targets: all pods <= 30 s, writes <= nodes + 3 = "
              f"{self.nodes + 3}, RSS < 30 MiB")
        print(cpu_line)

    def side_by_side(self):
        kinds = ["kubedist", "kubeflow-tuned" if os.environ.get("KUBEFLOW_TUNED", "0") == "1" else "kubeflow"]
        for i in range(1, self.runs + 1):
            for k in kinds:
                self.run("kubedist" if k == "kubedist" else "kubeflow", k)
                print(f"[bench] run {i}: {' '.join(format_raw(self.rows[-1]))}", file=sys.stderr, flush=True)
        print(f"Side by side: {self.jobs} jobs x {self.nodes} pods = {self.jobs * self.nodes} pods on "
              f"{self.kwok_nodes} kwok nodes, {NPROC} CPUs, {self.runs} runs each")
        print(f"  kubedist-operator ({self.workers} workers) vs Kubeflow Training Operator {self.kubeflow_version} "
              f"(PyTorchJob: 1 Master + {self.nodes - 1} Workers)")
        print(header())
        for k in kinds:
            for row in self.rows:
                if row[0] == k:
                    print(fmt_row(row))
        print("  medians:")
        medians = {}
        for k in kinds:
            # As the shell version printed them (awk, %.6g) before reading them again: 0.15, not 0.15000000000000002.
            medians[k] = [float(f"{statistics.median(row[col] for row in self.rows if row[0] == k):.6g}")
                          for col in range(1, 6)]
            print(fmt_row((k, *medians[k])))
        other = kinds[1]
        q = [ratio(a, b) for a, b in zip(medians[other], medians["kubedist"])]
        print(f"  {other} / kubedist:{q[0]:11.2f}x {q[1]:11.2f}x {q[2]:10.2f}x {q[3]:12.2f}x {q[4]:10.2f}x")


def round_as_printed(value, digits):
    """The value as a row prints it, so that medians are taken of the printed figures."""
    return float(f"{value:.{digits}f}")


def format_raw(row):
    label, pods, running, writes, rss, cpu = row
    return [label, f"{pods:.1f}", f"{running:.1f}", f"{writes:.2f}", f"{rss:.1f}", f"{cpu:.1f}"]


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", action="store_true",
                        help="side by side with Kubeflow's Training Operator v1, RUNS times each (needs root)")
    parser.add_argument("--progress", type=int, metavar="S", default=0,
                        help="kubedist alone, then S seconds of every job's node 0 reporting steps (see above)")
    parser.add_argument("--launcher", default=os.path.join(REPO, "build/all/launcher-sidecar/kubedist-launcher"),
                        help="with --progress: the kubedist-launcher binary (default build/all/launcher-sidecar/...)")
    parser.add_argument("operator", nargs="?", default=os.path.join(REPO, "build/all/operator/kubedist-operator"),
                        help="the kubedist-operator binary (default build/all/operator/kubedist-operator)")
    args = parser.parse_args()
    if args.progress and (args.compare or args.progress < 60 or args.progress > 3600):
        print("bench.py: --progress takes 60 to 3600 seconds, and not with --compare", file=sys.stderr)
        return 2
    bench = Bench(os.path.abspath(args.operator), args.compare, args.progress, os.path.abspath(args.launcher))
    if args.progress and not (os.path.isfile(bench.launcher) and os.access(bench.launcher, os.X_OK)):
        print(f"bench.py: no launcher binary at {bench.launcher} (build it first)", file=sys.stderr)
        return 2
    if not (os.path.isfile(bench.op) and os.access(bench.op, os.X_OK)):
        print(f"bench.py: no operator binary at {bench.op} (build it first)", file=sys.stderr)
        return 2
    if args.compare:
        if subprocess.run([os.path.join(REPO, "deploy/local/tools.sh"), "bench"], stdout=subprocess.DEVNULL).returncode:
            print("bench.py --compare: deploy/local/tools.sh bench failed", file=sys.stderr)
            return 1
        if os.geteuid() != 0:
            print("bench.py --compare: needs root (Kubeflow's operator runs in a network namespace)", file=sys.stderr)
            return 2
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)
    try:
        bench.work = tempfile.mkdtemp(prefix="kubedist-bench-")
        if args.compare:
            bench.side_by_side()
        else:
            bench.alone()
        return 0
    except (BenchError, subprocess.CalledProcessError) as e:
        print(f"bench.py: {e}", file=sys.stderr)
        return 1
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # a second Ctrl-C does not cut the cleanup short
        bench.cleanup()


if __name__ == "__main__":
    sys.exit(main())
