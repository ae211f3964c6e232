#!/usr/bin/python3
"""Two operator replicas with leader election, each with an identity of its own (a client certificate: the API
server's audit log names every request's replica). The leader runs in a network namespace of the test's own and
reaches the API server through a forwarder on that namespace's loopback; while the test keeps scaling jobs, iptables'
statistic match drops 80% of the packets there. Checked from the audit log: no moment in which both replicas write
(every write the old leader got through was received before the new leader's first write), the standby takes over
(failover: from the cut to its lease acquisition), and afterwards every job has exactly the pods its last scale asked
for. Then the cut is healed and the old leader must not write again while the new one leads.

usage: partition.py OPERATOR_BINARY [--jobs 8] [--lease-seconds 15] [--drop 0.8] [--after 20]
env: FAULTS_CLUSTER (default faults), FAULTS_SEED, KUBEDIST_CACHE. Needs root (ip netns, iptables)."""
import argparse
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import (Api, Cluster, Operator, Scenario, ScenarioFailed, apply_crd, audit_events,  # noqa: E402
                      kubectl, rfc3339_to_unix, say)

NS = "faults"
JOBS = f"/apis/kubedist.io/v1alpha1/namespaces/{NS}/trainingjobs"
PODS = f"/api/v1/namespaces/{NS}/pods"
WRITES = ("create", "update", "patch", "delete", "deletecollection")
REPLICAS = {"a": "kubedist-replica-a", "b": "kubedist-replica-b"}


def wait_for(what, secs, pred, interval=0.2):
    end = time.monotonic() + secs
    while not pred():
        if time.monotonic() >= end:
            raise ScenarioFailed(f"not within {secs}s: {what}")
        time.sleep(interval)


def log_has(op, pattern, after=0):
    try:
        with open(op.log_path, errors="replace") as f:
            return re.search(pattern, f.read()[after:]) is not None
    except OSError:
        return False


class Partition:
    def __init__(self, sc, args):
        self.sc, self.a = sc, args
        self.rng = sc.rng
        self.netns = f"kdf-{os.getpid()}"
        self.jobs = [f"job-{i}" for i in range(1, args.jobs + 1)]
        self.want = {j: 4 for j in self.jobs}
        self.scaling = threading.Event()
        self.scales = 0
        self.error = None

    def ip(self, *args, check=True):
        r = subprocess.run(["ip", *args], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise ScenarioFailed(f"ip {' '.join(args)}: {r.stderr.strip()}")

    def in_ns(self, *args, check=True):
        self.ip("netns", "exec", self.netns, *args, check=check)

    def setup(self):
        a = self.a
        self.cluster = Cluster(os.environ.get("FAULTS_CLUSTER", "faults"), 4)
        self.sc.on_close(self.cluster.down)
        self.cluster.up()
        self.api = Api(self.cluster.dir)
        apply_crd()
        kubectl("create", "namespace", NS)
        for r, cn in REPLICAS.items():
            self.cluster.sign(f"replica-{r}", f"/O=system:masters/CN={cn}")
        # The leader's namespace: its loopback forwards to the API server on the host's (a socat per connection).
        self.ip("netns", "add", self.netns)
        self.sc.on_close(lambda: self.ip("netns", "del", self.netns, check=False))
        self.in_ns("ip", "link", "set", "lo", "up")
        port = self.api.port
        self.forwarder = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "socat", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
             f"EXEC:nsenter --net=/proc/{os.getpid()}/ns/net socat STDIO TCP\\:127.0.0.1\\:{port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.sc.on_close(self.stop_forwarder)
        server = f"https://127.0.0.1:{port}"  # the same address: the namespace's loopback, then the host's
        flags = ["--namespace", NS, "--workers", "4", "--launcher-poll-interval=0", "--leader-elect",
                 f"--leader-election-namespace={NS}", "--leader-election-id=op",
                 f"--leader-election-lease-seconds={a.lease_seconds}"]
        ops = {}
        for r in REPLICAS:
            kc = os.path.join(self.sc.work, f"replica-{r}.kubeconfig")
            self.cluster.kubeconfig_for(f"replica-{r}", server, kc)
            prefix = ["ip", "netns", "exec", self.netns] if r == "a" else []
            ops[r] = Operator(a.operator, flags, os.path.join(self.sc.work, f"replica-{r}.log"), prefix, kc)
            self.sc.on_close(ops[r].kill)
        self.op_a, self.op_b = ops["a"], ops["b"]

    def stop_forwarder(self):
        if self.forwarder.poll() is None:
            os.killpg(self.forwarder.pid, 9)
            self.forwarder.wait()

    def job_body(self, name):
        return {"apiVersion": "kubedist.io/v1alpha1", "kind": "TrainingJob", "metadata": {"name": name},
                "spec": {"replicas": self.want[name], "template": {"spec": {
                    "containers": [{"name": "trainer", "image": "busybox", "command": ["python", "train.py"]}]}}}}

    def scale_loop(self):
        try:
            while self.scaling.is_set():
                j = self.rng.choice(self.jobs)
                n = self.rng.randint(1, 8)
                status, doc = self.api.call("PATCH", f"{JOBS}/{j}", {"spec": {"replicas": n}},
                                            ctype="application/merge-patch+json", agent="kubedist-faults/scale")
                if status != 200:
                    raise ScenarioFailed(f"scale {j}: {status} {doc}")
                self.want[j] = n
                self.scales += 1
                time.sleep(0.3)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.error = e

    def settled(self):
        pods = self.api.get(PODS)["items"]
        tjs = {t["metadata"]["name"]: t for t in self.api.get(JOBS)["items"]}
        for j in self.jobs:
            names = sorted(p["metadata"]["name"] for p in pods
                           if p["metadata"].get("labels", {}).get("kubedist.io/job-name") == j)
            running = [p for p in pods if p["metadata"]["name"] in names and p["status"].get("phase") == "Running"
                       and not p["metadata"].get("deletionTimestamp")]
            st = tjs[j].get("status", {})
            if (names != sorted(f"{j}-node-{r}" for r in range(self.want[j])) or len(running) != self.want[j] or
                    st.get("replicas") != self.want[j] or st.get("phase") != "Running"):
                self.unsettled = f"{j}: want {self.want[j]}, pods {names}, status {st.get('phase')} {st.get('replicas')}"
                return False
        return True

    def run(self):
        a = self.a
        self.setup()
        self.op_a.start()
        wait_for("replica a leads", 60, lambda: log_has(self.op_a, "leading as"))
        self.op_b.start()
        wait_for("replica b waits", 60, lambda: log_has(self.op_b, "waiting to lead"))
        for j in self.jobs:
            status, doc = self.api.call("POST", JOBS, self.job_body(j))
            if status != 201:
                raise ScenarioFailed(f"create {j}: {status} {doc}")
        wait_for("every job Running", 120, self.settled, 0.5)
        say(f"replica a leads, b waits; {len(self.jobs)} jobs run; scaling them every 0.3s")
        self.scaling.set()
        scaler = threading.Thread(target=self.scale_loop, daemon=True)
        scaler.start()
        time.sleep(5)
        # The cut: on the namespace's loopback, which carries all of replica a's traffic to the API server.
        t_cut = time.time()
        self.in_ns("iptables", "-A", "INPUT", "-i", "lo", "-m", "statistic", "--mode", "random", "--probability",
                   str(a.drop), "-j", "DROP")
        say(f"injected: {a.drop:.0%} of the leader's packets dropped (lease {a.lease_seconds}s)")
        wait_for("replica b takes over", 10 * a.lease_seconds, lambda: log_has(self.op_b, "leading as"))
        time.sleep(a.after)
        self.in_ns("iptables", "-D", "INPUT", "-i", "lo", "-m", "statistic", "--mode", "random", "--probability",
                   str(a.drop), "-j", "DROP")
        t_heal = time.time()
        say(f"cut healed after {t_heal - t_cut:.1f}s; scaling goes on for {a.after}s more")
        # The old leader exits once it cannot renew (so that a single leader acts); its Deployment would start it
        # again: it must come back as a standby and write nothing while the new leader leads.
        wait_for("the old leader exits, having lost its lease", 30, lambda: not self.op_a.alive())
        mark = os.path.getsize(self.op_a.log_path)
        self.op_a.start()
        wait_for("the old leader comes back as a standby", 60,
                 lambda: log_has(self.op_a, "waiting to lead", after=mark))
        time.sleep(a.after)
        self.scaling.clear()
        scaler.join()
        t_stop = time.time()
        if self.error:
            raise self.error
        self.unsettled = ""
        try:
            wait_for("every job has the pods its last scale asked for", 120, self.settled, 0.5)
        except ScenarioFailed as e:
            raise ScenarioFailed(f"{e}: {self.unsettled}\n{self.op_b.log_tail(15)}")
        t_settled = time.time()
        time.sleep(2)
        if log_has(self.op_a, "leading as", after=mark):
            raise ScenarioFailed("the old leader led again although the new one held the lease")
        self.check_audit(t_cut, t_stop, t_settled)

    def check_audit(self, t_cut, t_stop, t_settled):
        writes = {r: [] for r in REPLICAS}
        for e in audit_events(self.cluster.audit_log, lambda e: e.get("verb") in WRITES):
            user = e.get("user", {}).get("username")
            for r, cn in REPLICAS.items():
                if user == cn:
                    writes[r].append((rfc3339_to_unix(e["requestReceivedTimestamp"]),
                                      e["responseStatus"].get("code", 0), e["verb"],
                                      e["objectRef"].get("resource", ""), e["objectRef"].get("name", "")))
        taken = {r: sorted(w for w in ws if w[1] < 400) for r, ws in writes.items()}
        if not taken["a"] or not taken["b"]:
            raise ScenarioFailed(f"writes taken: a {len(taken['a'])}, b {len(taken['b'])}: both must have led")
        a_before = [w for w in taken["a"] if w[0] < t_cut]
        a_after_cut = [w for w in taken["a"] if w[0] >= t_cut]
        b_first = taken["b"][0]
        say(f"replica a: {len(a_before)} writes before the cut, {len(a_after_cut)} after it "
            f"(last {taken['a'][-1][0] - t_cut:+.1f}s from the cut: {taken['a'][-1][2]} {taken['a'][-1][3]}); "
            f"{sum(1 for w in writes['a'] if w[1] >= 400)} refused")
        say(f"replica b: first write {b_first[0] - t_cut:+.1f}s from the cut ({b_first[2]} {b_first[3]} "
            f"{b_first[4]}), {len(taken['b'])} writes")
        if b_first[3] != "leases":
            raise ScenarioFailed(f"replica b wrote before it took the lease: {b_first}")
        overlap = [w for w in taken["a"] if w[0] >= b_first[0]]
        if overlap:
            raise ScenarioFailed(f"both replicas wrote: {len(overlap)} writes of replica a after replica b's first, "
                                 f"e.g. {overlap[:3]}")
        a_silent = taken["a"][-1][0]
        say(f"checked: 0 writes of the old leader after the new leader's first (a's last write "
            f"{b_first[0] - a_silent:.1f}s before b's first), {self.scales} scales applied, every job's pods as "
            f"last asked {t_settled - t_stop:.1f}s after the last scale; the old leader, restarted after the heal, "
            f"waits as a standby")
        say(f"failover: {b_first[0] - t_cut:.1f}s from the cut to the standby's lease")
        print(f"RESULT drop={self.a.drop} lease_s={self.a.lease_seconds} scales={self.scales} overlap_writes=0 "
              f"old_leader_last_write_s={a_silent - t_cut:.1f} failover_s={b_first[0] - t_cut:.1f}", flush=True)


def main(doc=__doc__, **defaults):
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("operator")
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--lease-seconds", type=int, default=15)
    p.add_argument("--drop", type=float, default=0.8)
    p.add_argument("--after", type=float, default=15, help="seconds of scaling after the failover and the heal")
    p.set_defaults(**defaults)
    a = p.parse_args()
    if a.jobs < 1 or not 3 <= a.lease_seconds <= 3600 or not 0 < a.drop <= 1 or a.after < 0:
        p.error("--jobs at least 1, --lease-seconds 3 to 3600, --drop in (0, 1], --after 0 or more")
    if not os.access(a.operator, os.X_OK):
        p.error(f"not an executable: {a.operator}")
    if os.geteuid() != 0:
        print("skipped: needs root (ip netns, iptables)", file=sys.stderr)
        return 77
    sc = Scenario("partition")
    say(f"FAULTS_SEED={sc.seed}")
    return sc.run(lambda s: Partition(s, a).run())


if __name__ == "__main__":
    sys.exit(main())
