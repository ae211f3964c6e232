"""End to end: kubedist-operator against the real local control plane, and the pods it creates made real by
PodRunner (tests/e2e/podrunner.py): each pod's trainer command, i.e. our launcher wrapping a real PyTorch gloo
DDP script (tests/integration/launcher/workers/ddp_train.py), runs as local processes on the pod's kwok IP.

usage: e2e_test.py OPERATOR LAUNCHER SCENARIO     (KUBECONFIG and KUBEDIST_SOURCE_DIR set, as ctest does)
scenarios:
  success    3 nodes x 2 processes train to identical weights; the job ends Succeeded, no restart
  crash      a worker crashes on the first attempt: one in-place group restart, no pod recreated, Succeeded
  shrink     node 2 is lost and no node can take its pod: the elastic job (2:3) goes on with 2 nodes, the
             operator gives the unschedulable pod up after its grace period, and the job ends Succeeded
  growback   node 2 is lost while the cluster is full, then capacity returns: the group shrinks to 2 nodes
             and grows back to 3 with the recreated pod; nodes 0 and 1 keep their pods throughout
  dashboard  every query of the Grafana dashboard returns data from a real Prometheus scraping the operator and
             the launchers in the pods while a job that reports its progress (kubedist.progress: the progress,
             ETA and goodput panels) restarts in place after a worker crash, then loses a pod
  permanent  every worker exits 3 under restartPolicy ExitCode: the job ends Failed naming exit code 3, with
             no in-place restart and no pod recreated
  progress   2 nodes x 2 DDP workers report their steps (kubedist.progress): status.progress, the PROGRESS and ETA
             columns and the operator's progress metrics follow them; rank 2 then stops in a receive at step 5
             while the others wait for it in the step's all_reduce: within spec.hangTimeout + 5 s the group
             restarts in place (restartsByReason.hang), status.lastFailure and an Event HangDetected name rank 2
             first with its stack, and the job Succeeds; no Straggler
  straggler  one rank of 4 is throttled (it sleeps in its compute section) and another crashes once: an Event
             Straggler names the rank, its pod and its node (status.progress.slowestRank), goodput is below 1 and
             status.progress.lostSeconds matches the measured restart window within a second
"""
import calendar
import glob
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from expect import Failure, check, eventually, log  # noqa: E402
from podrunner import PYTHON, PodRunner, kubectl  # noqa: E402


def free_master_port():
    """A masterPort whose pair (the store, and the rendezvous on masterPort+1) is free on every address now, below
    the ephemeral range (32768-60999 here): a port in it could be the local end of any of the cluster's outgoing
    connections meanwhile, and node 0's store then fails to bind (errno 98) in every restart."""
    for _ in range(200):
        port = random.randrange(20000, 32000, 2)
        socks = []
        try:
            for p in (port, port + 1):
                s = socket.socket()
                socks.append(s)
                s.bind(("0.0.0.0", p))
            return port
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise Failure("no free pair of ports for masterPort in 20000-32000")

SOURCE = os.environ["KUBEDIST_SOURCE_DIR"]
CLUSTER_SH = os.path.join(SOURCE, "deploy/local/cluster.sh")
TRAIN = os.path.join(SOURCE, "tests/integration/launcher/workers/ddp_train.py")
PROGRESS_TRAIN = os.path.join(SOURCE, "tests/integration/launcher/workers/progress_train.py")
# Short graces and polls, so that the scenarios take seconds (the defaults are 30s, 60s, 10s).
OPERATOR_FLAGS = ["--unschedulable-grace=3s", "--node-lost-grace=3s", "--launcher-poll-interval=1s"]


class Env:
    """One scenario's namespace, operator process, pod runner and output folder; all torn down on exit."""

    def __init__(self, operator, launcher, scenario):
        self.operator_bin, self.launcher, self.scenario = operator, launcher, scenario
        self.ns = f"e2e-{scenario}-{int(time.time())}-{random.randrange(10000)}"
        self.tmp = tempfile.mkdtemp(prefix=f"kubedist-e2e-{scenario}-")
        self.out = os.path.join(self.tmp, "out")
        os.makedirs(self.out)
        self.operator = None
        self.runner = None
        self.cordoned = []
        self.kueue = False
        self.cluster = os.path.basename(os.path.dirname(os.environ["KUBECONFIG"]))

    def __enter__(self):
        kubectl("apply", "--server-side", "--force-conflicts", "-f",
                os.path.join(SOURCE, "crd/kubedist.io_trainingjobs.yaml"))
        kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/trainingjobs.kubedist.io")
        kubectl("create", "namespace", self.ns)
        if self.scenario == "dashboard":
            self.kueue_up()  # before the operator, which looks for Kueue when it starts
        self.op_log_path = os.path.join(self.tmp, "operator.log")
        self.op_log = open(self.op_log_path, "wb")
        self.operator = subprocess.Popen(
            [self.operator_bin, "--namespace", self.ns, "--probe-address", "127.0.0.1:0", *OPERATOR_FLAGS],
            stdout=self.op_log, stderr=subprocess.STDOUT)
        self.runner = PodRunner(self.ns, self.launcher, os.path.join(self.tmp, "pods"),
                                extra_env={"PYTHONDONTWRITEBYTECODE": "1"})
        self.runner.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        for node in self.cordoned:
            kubectl("uncordon", node, check=False)
        if self.runner:
            self.runner.stop()
        if self.operator and self.operator.poll() is None:
            self.operator.send_signal(signal.SIGTERM)
            try:
                self.operator.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.operator.kill()
                self.operator.wait()
        self.op_log.close()
        if exc_type is not None:
            self.dump()
        kubectl("delete", "namespace", self.ns, "--wait=false", check=False)
        if self.kueue:
            kubectl("delete", f"clusterqueue/{self.ns}", f"resourceflavor/{self.ns}", "--wait=false", check=False)
            subprocess.run([CLUSTER_SH, "kueue-down", self.cluster], capture_output=True)
        return False

    def kueue_up(self):
        """Kueue (cluster.sh kueue-up) with LocalQueue "team" in the namespace: 8 CPUs of quota on one flavor."""
        self.kueue = True
        subprocess.run([CLUSTER_SH, "kueue-up", self.cluster], check=True, capture_output=True)
        kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": self.ns}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": self.ns},
             "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.ns}},
                      "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                          {"name": self.ns, "resources": [{"name": "cpu", "nominalQuota": 8}]}]}]}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "team", "namespace": self.ns}, "spec": {"clusterQueue": self.ns}}]}))

    def dump(self):
        print("--- operator log (last 40 lines) ---")
        with open(self.op_log_path, errors="replace") as f:
            print("".join(f.readlines()[-40:]))
        for path in sorted(glob.glob(os.path.join(self.tmp, "pods", "*.log"))):
            print(f"--- {os.path.basename(path)} (last 25 lines) ---")
            with open(path, errors="replace") as f:
                print("".join(f.readlines()[-25:]))
        print("--- kubectl get tj,pods ---")
        print(kubectl("-n", self.ns, "get", "tj,pods", "-o", "wide", check=False).stdout)
        print(kubectl("-n", self.ns, "get", "events", "--sort-by=.lastTimestamp", check=False).stdout[-3000:])

    # ---- the job ---------------------------------------------------------------------------------------
    def create_job(self, name, replicas, command, min_replicas=None, max_replicas=None, max_restarts=3,
                   restart_policy="OnFailure", backoff_limit=6, queue=None, extra_spec=None, env=None):
        spec = {"replicas": replicas, "nprocPerNode": 2, "masterPort": free_master_port(),
                "maxRestarts": max_restarts, "restartPolicy": restart_policy, "backoffLimit": backoff_limit,
                "template": {"spec": {"containers": [{"name": "trainer", "image": "kubedist-e2e",
                                                      "command": command}]}}}
        spec.update(extra_spec or {})
        if env:
            spec["template"]["spec"]["containers"][0]["env"] = [{"name": k, "value": v} for k, v in env.items()]
        if min_replicas is not None:
            spec["minReplicas"] = min_replicas
        if max_replicas is not None:
            spec["maxReplicas"] = max_replicas
        job = {"apiVersion": "kubedist.io/v1alpha1", "kind": "TrainingJob",
               "metadata": {"name": name, "namespace": self.ns}, "spec": spec}
        if queue:
            job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue}
        kubectl("apply", "-f", "-", input=json.dumps(job))

    def train_command(self, steps, *extra):
        return [PYTHON, TRAIN, self.out, str(steps), *extra]

    def job(self, name):
        return json.loads(kubectl("-n", self.ns, "get", "tj", name, "-o", "json").stdout)

    def wait_phase(self, name, phase, seconds):
        def reached():
            st = self.job(name).get("status", {})
            if st.get("phase") in ("Succeeded", "Failed") and st.get("phase") != phase:
                raise Failure(f"job {name} ended {st.get('phase')}, expected {phase}: {st.get('conditions')}")
            return st if st.get("phase") == phase else None
        return eventually(seconds, f"tj/{name} phase {phase}", reached, interval=0.5)

    def pods(self, name):
        items = json.loads(kubectl("-n", self.ns, "get", "pods", "-l", f"kubedist.io/job-name={name}",
                                   "-o", "json").stdout)["items"]
        return {p["metadata"]["name"]: p for p in items}

    def pod_uids(self, name):
        return {n: p["metadata"]["uid"] for n, p in self.pods(name).items()}

    def progress(self):
        """Rank 0's (world size, restart count, step) lines, in order."""
        path = os.path.join(self.out, "progress")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [tuple(int(x) for x in line.split()) for line in f if len(line.split()) == 3]

    def wait_training(self, seconds, what, pred):
        return eventually(seconds, what, lambda: any(pred(w, r, s) for (w, r, s) in self.progress()), 0.3)

    def rank_results(self):
        out = {}
        for path in glob.glob(os.path.join(self.out, "rank*.json")):
            with open(path) as f:
                r = json.load(f)
            out[r["rank"]] = r
        return out

    def cordon_all(self):
        nodes = kubectl("get", "nodes", "-o", "name").stdout.split()
        for node in nodes:
            kubectl("cordon", node)
            self.cordoned.append(node)

    def uncordon_all(self):
        for node in self.cordoned:
            kubectl("uncordon", node)
        self.cordoned = []

    def lose_pod(self, pod):
        """A node failure as the pod sees it: its processes die at once, then the pod object goes."""
        if not self.runner.kill_pod_process(pod):
            raise Failure(f"{pod} has no running process to lose")
        kubectl("-n", self.ns, "delete", "pod", pod, "--grace-period=0", "--force")

    def launcher_metrics(self, name):
        """Each pod's launcher /metrics text, scraped at the pod's IP and its kd-metrics port as Prometheus would."""
        out = {}
        for pod_name, pod in self.pods(name).items():
            ports = [p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])
                     if p.get("name") == "kd-metrics"]
            url = f"http://{pod['status']['podIP']}:{ports[0]}/metrics"
            with urllib.request.urlopen(url, timeout=2) as r:
                out[pod_name] = r.read().decode()
        return out

    def operator_metrics(self):
        """The operator's /metrics text (its probe port, as its log names it)."""
        with open(self.op_log_path, errors="replace") as f:
            port = next(int(line.split("probes listening on port ")[1].split()[0]) for line in f
                        if "probes listening on port " in line)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read().decode()

    def step_lines(self, rank):
        """(attempt, step, time) of the lines progress_train.py's rank wrote as each step ended."""
        path = os.path.join(self.out, f"steps{rank}")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [(int(a), int(s), float(t)) for a, s, t in (l.split() for l in f if len(l.split()) == 3)]

    def events(self, name):
        items = json.loads(kubectl("-n", self.ns, "get", "events", "--field-selector",
                                   f"involvedObject.name={name}", "-o", "json").stdout)["items"]
        return [(e.get("reason"), e.get("message", "")) for e in items]


def assert_identical_weights(env, world):
    results = env.rank_results()
    check(sorted(results) == list(range(world)), f"every rank 0..{world - 1} wrote its result ({sorted(results)})")
    weights = {json.dumps(r["weights"]) for r in results.values()}
    check(len(weights) == 1, f"all {world} ranks ended with identical weights")
    check(results[0]["weights"] != results[0]["initial"], "the weights moved from their initial values")
    return results


# ---- scenarios -----------------------------------------------------------------------------------------
def scenario_success(env):
    env.create_job("ddp", 3, env.train_command(8, "--step-sleep", "0.5"))
    env.wait_phase("ddp", "Running", 60)
    uids = eventually(60, "3 pods", lambda: (lambda u: u if len(u) == 3 else None)(env.pod_uids("ddp")))
    scraped = eventually(60, "every pod's launcher serves /metrics with 2 workers running", lambda: (
        lambda m: m if len(m) == 3 and all("kubedist_launcher_workers_running 2\n" in t for t in m.values()) else None)(
        env.launcher_metrics("ddp")))
    check(sorted(scraped) == [f"ddp-node-{i}" for i in range(3)],
          "the 3 launchers serve /metrics on their pods' IPs (kd-metrics port), 2 workers running each")
    st = env.wait_phase("ddp", "Succeeded", 240)
    results = assert_identical_weights(env, 6)
    check(all(r["world"] == 6 and r["restart"] == 0 for r in results.values()), "world size 6, no restart")
    groups = sorted((int(r["env"]["GROUP_RANK"]), int(r["env"]["LOCAL_RANK"])) for r in results.values())
    check(groups == [(g, l) for g in range(3) for l in range(2)], f"group/local ranks {groups}")
    check(all(r["env"]["GROUP_WORLD_SIZE"] == "3" and r["env"]["LOCAL_WORLD_SIZE"] == "2"
              for r in results.values()), "GROUP_WORLD_SIZE 3, LOCAL_WORLD_SIZE 2")
    check(st.get("restarts", 0) == 0, f"status.restarts 0 (got {st.get('restarts')})")
    check(env.pod_uids("ddp") == uids, "the same 3 pods from start to end")
    check(sorted(env.runner.exits()) == [(f"ddp-node-{i}", 0) for i in range(3)],
          f"every pod's launcher exited 0 ({env.runner.exits()})")


def scenario_crash(env):
    env.create_job("crash", 3, env.train_command(8, "--crash-rank", "3"), max_restarts=3)
    uids = eventually(60, "3 pods", lambda: (lambda u: u if len(u) == 3 else None)(env.pod_uids("crash")))
    st = env.wait_phase("crash", "Succeeded", 300)
    results = assert_identical_weights(env, 6)
    check(all(r["restart"] == 1 for r in results.values()),
          "every rank finished on TORCHELASTIC_RESTART_COUNT=1: one in-place group restart")
    check(env.pod_uids("crash") == uids, "no pod was recreated")
    check(sorted(env.runner.exits()) == [(f"crash-node-{i}", 0) for i in range(3)],
          "each pod's launcher ran once and exited 0")
    check(st.get("phase") == "Succeeded", "the job ended Succeeded")
    # The in-place restart reaches the job's status through node 0's launcher (STATUS polling).
    by_reason = st.get("restartsByReason", {})
    check(st.get("restarts") == 1 and by_reason.get("worker_crash") == 1 and by_reason.get("pod_failure", 0) == 0,
          f"status.restarts 1, restartsByReason worker_crash 1 ({st.get('restarts')}, {by_reason})")
    reasons = [r for r, _ in env.events("crash")]
    check("WorkerRestarted" in reasons, f"a WorkerRestarted Event tells of it ({reasons})")


def lose_node_two(env, name):
    env.wait_training(180, "training on 3 nodes (world 6)", lambda w, r, s: w == 6 and s >= 2)
    before = env.pod_uids(name)
    env.cordon_all()
    log(f"cordoned every node; losing {name}-node-2")
    env.lose_pod(f"{name}-node-2")
    env.wait_training(120, "training goes on with 2 nodes (world 4)", lambda w, r, s: w == 4 and s >= 2)
    now = env.pod_uids(name)
    check(all(now.get(f"{name}-node-{i}") == before[f"{name}-node-{i}"] for i in (0, 1)),
          "nodes 0 and 1 kept their pods")
    return before


def scenario_shrink(env):
    env.create_job("shrink", 3, env.train_command(40, "--step-sleep", "0.1"), min_replicas=2, max_replicas=3,
                   max_restarts=5)
    lose_node_two(env, "shrink")
    st = env.wait_phase("shrink", "Succeeded", 240)
    results = assert_identical_weights(env, 4)
    check(all(r["world"] == 4 for r in results.values()), "the job finished with 2 nodes x 2 processes")
    check("shrink-node-2" not in env.pods("shrink"), "the unschedulable pod of node 2 was given up")
    reasons = [r for r, _ in env.events("shrink")]
    check("ScaledDown" in reasons, f"an Event tells of the shrink ({reasons})")
    check(st.get("restarts", 0) >= 1, f"status.restarts counts the re-formed group (got {st.get('restarts')})")


def scenario_growback(env):
    env.create_job("grow", 3, env.train_command(60, "--step-sleep", "0.1"), min_replicas=2, max_replicas=3,
                   max_restarts=6)
    before = lose_node_two(env, "grow")
    shrunk_at = max(r for (w, r, s) in env.progress() if w == 4)
    env.uncordon_all()
    log("capacity is back")
    env.wait_training(180, "training back on 3 nodes", lambda w, r, s: w == 6 and r > shrunk_at)
    st = env.wait_phase("grow", "Succeeded", 240)
    results = assert_identical_weights(env, 6)
    now = env.pod_uids("grow")
    check(now["grow-node-0"] == before["grow-node-0"] and now["grow-node-1"] == before["grow-node-1"],
          "nodes 0 and 1 kept their pods to the end")
    check(now["grow-node-2"] != before["grow-node-2"], "node 2 runs in a new pod")
    check(all(r["restart"] >= 2 for r in results.values()), "the group re-formed twice: shrink, then grow")
    check(st.get("restarts", 0) >= 2, f"status.restarts counts both re-formations (got {st.get('restarts')})")


def scenario_permanent(env):
    attempts = os.path.join(env.out, "attempts")
    env.create_job("perm", 3, ["/bin/sh", "-c", f'echo "$RANK $TORCHELASTIC_RESTART_COUNT" >> {attempts}; exit 3'],
                   restart_policy="ExitCode", max_restarts=2)
    st = env.wait_phase("perm", "Failed", 120)
    failed = [c for c in st.get("conditions", []) if c["type"] == "Failed" and c["status"] == "True"]
    check(failed and "3" in failed[0].get("message", ""), f"the Failed condition names exit code 3 ({failed})")
    # The job fails within moments and cleanPodPolicy removes the running pods, so the pod runner's record of
    # what ran is the witness: the 3 pods, each once (the group needs all 3 before any worker starts).
    ran = env.runner.started()
    check([name for name, _ in ran] == [f"perm-node-{i}" for i in range(3)], f"no pod was recreated ({ran})")
    check(any(code == 3 for _, code in env.runner.exits()), f"a launcher exited 3 ({env.runner.exits()})")
    with open(attempts) as f:
        runs = sorted(f.read().split("\n")[:-1])
    # The first failure ends the job, so a worker may be stopped before its first line: no rank twice, none restarted.
    ranks = [line.split()[0] for line in runs]
    check(runs and all(line.endswith(" 0") for line in runs) and len(set(ranks)) == len(ranks),
          f"no in-place restart of a permanent exit code, maxRestarts 2 unspent (worker runs: {runs})")


def scenario_dashboard(env):
    """Every panel of the Grafana dashboard answered by a real Prometheus scraping this e2e run: the operator and
    the launchers in the job's pods (at each pod's IP and kd-metrics port, found through a file_sd target file as
    a PodMonitor would find them), while a 3 x 2 DDP job, queued for and admitted by Kueue and reporting its steps
    with the launcher's helper (the progress panels), survives a worker crash in place and then a lost pod."""
    sys.path.insert(0, os.path.join(SOURCE, "tests/integration/dashboard"))
    import dashboard_test as dash  # noqa: E402  (its Prometheus client and the dashboard's queries)

    def op_port():
        with open(env.op_log_path, errors="replace") as f:
            for line in f:
                if "probes listening on port " in line:
                    return int(line.split("probes listening on port ")[1].split()[0])
        return None
    op = eventually(30, "the operator reports its port", op_port)
    targets = os.path.join(env.tmp, "launchers.json")
    with open(targets, "w") as f:
        json.dump([], f)
    prom_port = dash.free_port()
    config = os.path.join(env.tmp, "prometheus.yml")
    with open(config, "w") as f:
        json.dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                   "scrape_configs": [
                       {"job_name": "kubedist-operator", "static_configs": [{"targets": [f"127.0.0.1:{op}"]}]},
                       {"job_name": "kubedist-launchers",
                        "file_sd_configs": [{"files": [targets], "refresh_interval": "1s"}]}]}, f)
    prom_log = open(os.path.join(env.tmp, "prometheus.log"), "wb")
    prom_proc = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={env.tmp}/prometheus",
         f"--web.listen-address=127.0.0.1:{prom_port}", "--storage.tsdb.retention.time=1h"],
        stdout=prom_log, stderr=subprocess.STDOUT)
    try:
        prom = dash.Prometheus(prom_port)
        eventually(60, "Prometheus ready", lambda: dash.http_get(f"{prom.base}/-/ready")[0] == 200)
        eventually(30, "Prometheus scrapes the operator", lambda: prom.query('up{job="kubedist-operator"} == 1')[0])
        started = time.time()
        # Queued for Kueue, which admits it at once: the admission panel has its waiting count and time to admission.
        env.create_job("dash", 3, env.train_command(1_000_000, "--step-sleep", "0.2", "--crash-rank", "3",
                                                     "--report"),
                       max_restarts=3, queue="team")

        def pod_targets():
            pods = env.pods("dash")
            if len(pods) != 3 or not all(p.get("status", {}).get("podIP") for p in pods.values()):
                return None
            return [{"targets": [f"{p['status']['podIP']}:{port['containerPort']}"], "labels": {"pod": name}}
                    for name, p in pods.items() for c in p["spec"]["containers"] for port in c.get("ports", [])
                    if port.get("name") == "kd-metrics"]
        def publish_targets():
            tg = eventually(60, "3 pods with IPs", pod_targets)
            with open(targets + ".tmp", "w") as f:
                json.dump(tg, f)
            os.rename(targets + ".tmp", targets)
            want = sorted(x["targets"][0] for x in tg)
            eventually(30, "Prometheus scrapes the 3 launchers", lambda: sorted(
                s["metric"]["instance"] for s in prom.query('up{job="kubedist-launchers"} == 1')[0] or []) == want)
        publish_targets()
        check(True, f"Prometheus on 127.0.0.1:{prom_port} scrapes the operator and the launchers of 3 pods")
        env.wait_training(180, "training again after the in-place restart", lambda w, r, s: w == 6 and r == 1 and s >= 3)
        eventually(30, "status shows the worker_crash restart",
                   lambda: env.job("dash").get("status", {}).get("restartsByReason", {}).get("worker_crash") == 1)
        # A pod-level recovery too (the operator's own recovery time): node 1's pod is lost and recreated.
        old_uid = env.pod_uids("dash")["dash-node-1"]
        env.lose_pod("dash-node-1")
        eventually(60, "dash-node-1 recreated", lambda: env.pod_uids("dash").get("dash-node-1") not in (None, old_uid))
        publish_targets()
        env.wait_training(180, "training again with the new pod", lambda w, r, s: w == 6 and r == 2 and s >= 3)
        eventually(30, "status shows the node_lost restart and Running",
                   lambda: (lambda st: st.get("phase") == "Running" and
                            st.get("restartsByReason", {}).get("node_lost", 0) >= 1)(env.job("dash").get("status", {})))
        # The loss is one restart, though the operator saw the pod go and node 0's launcher saw the group re-form.
        eventually(10, "node 0's launcher has reported the re-formed group",
                   lambda: env.job("dash")["status"].get("launcher", {}).get("absorb") == 0)
        st = env.job("dash")["status"]
        check(st.get("restarts") == 2 and st.get("restartsByReason", {}).get("node_lost") == 1,
              f"one worker crash and one lost pod are 2 restarts ({st.get('restarts')}, {st.get('restartsByReason')})")

        queries = dash.dashboard_queries(env.ns)
        missing = {}

        def all_return_data():
            found, err = dash.queries_without_data(prom, queries)
            if err:
                raise RuntimeError(err)  # kept as eventually's last value: a refused query stays refused
            missing.clear()
            missing.update(found)
            return not missing
        try:
            eventually(60, "every panel query returns data", all_return_data, interval=0.5)
        except Failure as e:
            raise Failure("; ".join(f"{t} {r} returns no data: {x}" for (t, r), x in missing.items()) or str(e))
        check(True, f"all {len(queries)} queries of {len({q[0] for q in queries})} panels return data")

        def peak(title, ref, label, value):
            expr = next(e for t, r, e in queries if t == title and r == ref)
            result, err = prom.query(expr, start=str(started), end=str(time.time()), step="1")
            if err:
                raise Failure(err)
            return max((float(v) for s in result if s["metric"].get(label) == value for _, v in s["values"]),
                       default=0.0)
        for reason in ("worker_crash", "node_lost"):
            eventually(30, f"the restart panel shows a {reason} restart",
                       lambda: peak("Restarts by reason", "A", "reason", reason) > 0)
        check(True, "the restarts panel shows worker_crash (reported by node 0's launcher) and node_lost")
        workers = eventually(30, "every launcher reports 2 workers running", lambda: (
            lambda r: r if r and len(r) == 3 and all(float(s["value"][1]) == 2 for s in r) else None)(
            prom.query('kubedist_launcher_workers_running{job="kubedist-launchers"}')[0]))
        check(len(workers) == 3, "the launchers panel: 3 launchers, 2 workers running each")
        # The progress panels follow the job's reports (1,000,000 steps: hours left, goodput below 1 after 2 restarts).
        def now(title, ref):
            result, err = prom.query(next(e for t, r, e in queries if t == title and r == ref))
            if err:
                raise Failure(err)
            return {s["metric"].get("job_name"): float(s["value"][1]) for s in result}.get("dash")
        step = now("Training progress: step and steps per second", "A")
        rate = now("Training progress: step and steps per second", "B")
        eta = now("Estimated time to completion", "A")
        goodput = now("Goodput", "A")
        check(step >= 3 and rate > 0 and eta > 3600 and 0 < goodput < 1,
              f"the progress panels: step {step}, {rate} steps/s, {eta:.0f} s left, goodput {goodput}")
    finally:
        prom_proc.terminate()
        try:
            prom_proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            prom_proc.kill()
            prom_proc.wait()
        prom_log.close()


def scenario_progress(env):
    hang_timeout = 8
    env.create_job("prog", 2, [PYTHON, PROGRESS_TRAIN, env.out, "60", "--step-sleep", "0.25", "--hang-rank", "2",
                               "--hang-step", "5"],
                   extra_spec={"hangTimeout": f"{hang_timeout}s"})
    # The progress the workers report reaches the status, kubectl get tj and the operator's metrics.
    st = eventually(120, "status.progress with a step", lambda: (
        lambda s: s if s.get("progress", {}).get("step", 0) >= 2 else None)(env.job("prog").get("status", {})))
    p = st["progress"]
    check(p.get("totalSteps") == 60 and p.get("summary", "").endswith(f"({p['step']}/60)") and "loss" in p.get(
        "metrics", {}), f"status.progress has the step of 60, its summary and the loss ({p})")
    table = kubectl("-n", env.ns, "get", "tj", "prog").stdout
    header, row = table.splitlines()[0].split(), table.splitlines()[1]
    check("PROGRESS" in header and "ETA" in header and p["summary"].split()[0] in row,
          f"kubectl get tj shows PROGRESS and ETA:\n{table}")
    metrics = eventually(30, "kubedist_job_step in the operator's metrics", lambda: (
        lambda m: m if f'kubedist_job_step{{job_name="prog",job_namespace="{env.ns}"}}' in m else None)(
        env.operator_metrics()))
    check(f'kubedist_job_steps_per_second{{job_name="prog",job_namespace="{env.ns}"}}' in metrics,
          "the operator's metrics have kubedist_job_step and kubedist_job_steps_per_second for the job")
    # Rank 2 stops in a receive at step 5 of the first attempt; the others wait for it in the step's all_reduce.
    st = eventually(120, "a hang restart counted", lambda: (
        lambda s: s if s.get("restartsByReason", {}).get("hang") == 1 else None)(env.job("prog").get("status", {})))
    failure = st.get("lastFailure", {})
    detected = time.time()
    last_step = max(t for a, _, t in env.step_lines(2) if a == 0)
    check(failure.get("reason") == "Hang" and failure.get("pod") == "prog-node-1",
          f"status.lastFailure names the hang and the stuck rank's pod ({failure})")
    check(re.search(r": rank 2 on prog-node-1 stuck \d+ s at step 4 in recv \(progress_train\.py:\d+\) \[recv "
                    r"distributed_c10d\.py:\d+ < <module> progress_train\.py:\d+\]", failure.get("message", "")),
          f"status.lastFailure has the stuck rank's stack ({failure.get('message')})")
    when = calendar.timegm(time.strptime(failure["time"], "%Y-%m-%dT%H:%M:%SZ"))
    check(when - last_step < hang_timeout + 5,
          f"detected {when - last_step:.0f} s after rank 2's last step (hangTimeout {hang_timeout} s; the operator "
          f"saw it {detected - last_step:.0f} s after)")
    events = env.events("prog")
    check(any(r == "HangDetected" and "in recv (progress_train.py:" in m for r, m in events),
          f"an Event HangDetected names where rank 2 is stuck ({[r for r, _ in events]})")
    st = env.wait_phase("prog", "Succeeded", 240)
    check(st.get("restarts") == 1 and st["restartsByReason"].get("hang") == 1,
          f"one restart, for the hang ({st.get('restartsByReason')})")
    check(max(s for a, s, _ in env.step_lines(2) if a == 1) == 60, "training resumed in place and finished")
    check(not any(r == "Straggler" for r, _ in env.events("prog")), "no Straggler in a run without one")


def scenario_straggler(env):
    env.create_job("slow", 2, [PYTHON, PROGRESS_TRAIN, env.out, "80", "--step-sleep", "0.05", "--slow-rank", "2",
                               "--slow-sleep", "0.2", "--crash-rank", "1", "--crash-step", "6"],
                   env={"PET_STRAGGLER_STEPS": "8"})
    pods = eventually(60, "2 pods placed", lambda: (
        lambda p: p if len(p) == 2 and all(x["spec"].get("nodeName") for x in p.values()) else None)(env.pods("slow")))
    node = pods["slow-node-1"]["spec"]["nodeName"]
    message = eventually(180, "an Event Straggler", lambda: next(
        (m for r, m in env.events("slow") if r == "Straggler"), None), interval=1)
    check(message.startswith(f"rank 2 (pod slow-node-1 on node {node}) takes "),
          f"the Straggler Event names rank 2, its pod and its node ({message})")
    slowest = eventually(60, "status.progress.slowestRank", lambda: env.job("slow").get("status", {}).get(
        "progress", {}).get("slowestRank"))
    check(slowest.get("rank") == 2 and slowest.get("pod") == "slow-node-1" and slowest.get("node") == node and
          slowest.get("ratio", 0) > 1.5, f"status.progress.slowestRank is rank 2 on its node ({slowest})")
    st = env.wait_phase("slow", "Succeeded", 300)
    p = st.get("progress", {})
    with open(os.path.join(env.out, "crash_time")) as f:
        crashed = float(f.read())
    resumed = min(t for rank in range(4) for a, _, t in env.step_lines(rank) if a == 1)
    window = resumed - crashed
    check(st["restartsByReason"].get("worker_crash") == 1, f"one worker crash ({st['restartsByReason']})")
    check(0 < p.get("goodput", 1) < 1, f"goodput below 1 ({p.get('goodput')})")
    check(abs(p.get("lostSeconds", 0) - window) < 1.0,
          f"lostSeconds {p.get('lostSeconds')} matches the restart window {window:.2f} s within a second")


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in SCENARIOS:
        print(f"usage: {sys.argv[0]} OPERATOR LAUNCHER {'|'.join(SCENARIOS)}", file=sys.stderr)
        return 2
    operator, launcher, scenario = sys.argv[1:]
    start = time.monotonic()
    try:
        with Env(operator, launcher, scenario) as env:
            SCENARIOS[scenario](env)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    log(f"{scenario} passed in {time.monotonic() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
