#!/usr/bin/python3
"""A burst of JOBS jobs x NODES pods is created on kwok while the test fails pods (exit 137: each a pod_failure
restart), then finishes every fourth job (exit 0), and meanwhile injects its faults at random moments: the
operator SIGKILLed (--operator-kills) and restarted at once, or the API server (--apiserver-restarts) and etcd
(--etcd-restarts) restarted. Then, after the last fault, it measures the time until everything converged and checks:
every job has exactly its pods (0 duplicates: the operator's pod creates that the API server took equal the pods
needed; 0 missing: each job runs exactly <job>-node-0..NODES-1), and every job's status counts exactly what
happened, as the API server's audit log tells (the test's own status patches that failed a pod; any pod deleted by
someone other than the operator): no restart or failure lost or counted twice; the finished jobs Succeeded.

With --spares N each job also keeps N spare pods (<job>-spare-i, spec.spares): the failures and losses fall on
members and spares alike, and afterwards every running job again has exactly N spares (distinct names, none a
duplicate), a spare's failure or loss counted as no restart, and a finished job's spares deleted; every pod's
NODE_RANK is the one its name says (0 duplicate ranks).

usage: burst.py OPERATOR_BINARY [--jobs 200] [--nodes 8] [--spares 0] [--operator-kills 20] [--apiserver-restarts 0]
                [--etcd-restarts 0] [--failures JOBS] [--losses JOBS/4] [--window 120] [--converge-deadline 300]
env: FAULTS_CLUSTER (the cluster's name, default faults; brought up fresh and down again), FAULTS_SEED (random
     seed, printed), KUBEDIST_CACHE."""
import argparse
import collections
import http.client
import math
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import (OPERATOR_AGENT, Api, Cluster, Operator, Scenario, ScenarioFailed, apply_crd,  # noqa: E402
                      audit_events, kubectl, say)

NS = "faults"
FAIL_AGENT = "kubedist-faults/fail"
FINISH_AGENT = "kubedist-faults/finish"
LOSE_AGENT = "kubedist-faults/lose"
KUBELET_AGENT = "kubedist-faults/kubelet"
PODS = f"/api/v1/namespaces/{NS}/pods"
JOBS = f"/apis/kubedist.io/v1alpha1/namespaces/{NS}/trainingjobs"


POD_NAME = re.compile(r"^(.*)-(node|spare)-(\d+)$")
SPARE_RANK_BASE = 10000  # a spare's NODE_RANK is this plus its index (contract/pod_env.h)


def job_of(pod_name):
    m = POD_NAME.match(pod_name)
    return m.group(1) if m else pod_name


def is_spare(pod_name):
    m = POD_NAME.match(pod_name)
    return bool(m) and m.group(2) == "spare"


def rank_of(pod_name):
    """The NODE_RANK a pod of this name has: its index, a spare's above SPARE_RANK_BASE."""
    m = POD_NAME.match(pod_name)
    return None if not m else int(m.group(3)) + (SPARE_RANK_BASE if m.group(2) == "spare" else 0)


def end_patch(uid, exit_code):
    """A JSON patch that ends a Running pod (that uid only) as its kubelet would report it."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    phase, reason = ("Succeeded", "Completed") if exit_code == 0 else ("Failed", "Error")
    return [{"op": "test", "path": "/metadata/uid", "value": uid},
            {"op": "test", "path": "/status/phase", "value": "Running"},
            {"op": "replace", "path": "/status/phase", "value": phase},
            {"op": "add", "path": "/status/conditions", "value": [{"type": "Ready", "status": "False"}]},
            {"op": "add", "path": "/status/containerStatuses", "value": [{
                "name": "trainer", "image": "x", "imageID": "", "ready": False, "restartCount": 0,
                "state": {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": now}}}]}]


class Burst:
    def __init__(self, sc, args):
        self.sc, self.a = sc, args
        self.rng = sc.rng
        self.jobs = [f"job-{i}" for i in range(1, args.jobs + 1)]
        self.finishing = set(self.jobs[3::4])  # every fourth job ends with exit 0 on all its pods
        self.injected_fail = collections.Counter()  # the test's own record (the audit log is the truth)
        self.ambiguous = 0  # patches whose answer was lost to a fault (the audit log says whether they landed)
        self.faults_done = threading.Event()
        self.progress = 0  # the test's own work done: jobs created, pods failed or lost, jobs finished
        self.total_work = 1
        self.work_over = threading.Event()
        self.confirmed = 0
        self.fault_log = []
        self.last_fault_end = None
        self.error = None

    # -- setup -------------------------------------------------------------------------------------------------

    def setup(self):
        a = self.a
        nodes = max(4, math.ceil(a.jobs * a.nodes / 100) + 1)
        os.environ.setdefault("KUBEDIST_POD_CIDR", "10.201.0.0/16")  # nothing connects to the pods
        # kwok's pod-delete stage off: it would now and then delete a same-named replacement of a pod it saw deleted
        # (cluster.sh says more), a loss this test did not inject; the test confirms deletions itself (confirm()).
        self.cluster = Cluster(os.environ.get("FAULTS_CLUSTER", "faults"), nodes, {"KUBEDIST_KWOK_POD_DELETE": "0"})
        self.sc.on_close(self.cluster.down)
        self.cluster.up()
        self.api = Api(self.cluster.dir)
        apply_crd()
        kubectl("create", "namespace", NS)
        self.op = Operator(a.operator, ["--namespace", NS, "--workers", "16", "--launcher-poll-interval=0",
                                          # its exit-137 failures are dealt at random, not a node's doing
                                          "--avoid-node-after-failures=0"],
                           os.path.join(self.sc.work, "operator.log"))
        self.sc.on_close(self.op.kill)
        self.op.start()

    def job_body(self, name):
        spec = {"replicas": self.a.nodes, "backoffLimit": 10000, "template": {"spec": {"containers": [
            {"name": "trainer", "image": "busybox", "command": ["python", "train.py"]}]}}}
        if self.a.spares:
            spec["spares"] = self.a.spares
        return {"apiVersion": "kubedist.io/v1alpha1", "kind": "TrainingJob", "metadata": {"name": name}, "spec": spec}

    def all_pods(self):
        """A job's pods when all run: its members and its spares."""
        return self.a.nodes + self.a.spares

    # -- what the test does meanwhile ---------------------------------------------------------------------------

    def create_jobs(self, over_s):
        """The jobs, in 10 batches over over_s seconds."""
        batches = [self.jobs[i::10] for i in range(10)]
        for i, batch in enumerate(batches):
            for name in batch:
                status, doc = self.api.call("POST", JOBS, self.job_body(name))
                if status not in (201, 409):  # 409: created, its answer lost to a fault
                    raise ScenarioFailed(f"create {name}: {status} {doc}")
                self.progress += 1
            time.sleep(max(0.0, over_s / 10 - 0.1))

    def running_pods(self):
        """{job: [(pod, uid)]} of the pods Running and not deleting."""
        doc = self.api.get(f"{PODS}?fieldSelector=status.phase%3DRunning")
        out = collections.defaultdict(list)
        for p in doc["items"]:
            if p["metadata"].get("deletionTimestamp"):
                continue
            out[job_of(p["metadata"]["name"])].append((p["metadata"]["name"], p["metadata"]["uid"]))
        return out

    def end_pod(self, pod, uid, code, agent):
        path = f"{PODS}/{pod}/status"
        body = end_patch(uid, code)
        try:
            status, _ = self.api.call("PATCH", path, body, ctype="application/json-patch+json", deadline_s=60,
                                      agent=agent)
        except ScenarioFailed:
            self.ambiguous += 1
            return False
        return status == 200

    def stable_jobs(self, running):
        """Jobs whose pods all run and whose status says so (Running, all ready): a pod lost from one of them is
        a node_lost restart whatever the operator was doing (a pod that vanishes from a job still restarting is
        another matter: docs/architecture.md)."""
        doc = self.api.get(JOBS)
        out = set()
        for t in doc["items"]:
            st = t.get("status", {})
            j = t["metadata"]["name"]
            if (st.get("phase") == "Running" and st.get("readyReplicas") == self.a.nodes and
                    (st.get("spares") or 0) == self.a.spares and len(running.get(j, [])) == self.all_pods()):
                out.add(j)
        return out

    def confirm_loop(self, stop):
        """The kubelets' part in a deletion, by uid: a pod left terminating (a DELETE the API server answered 504
        marks it and may not finish it) is deleted with grace 0, as its kubelet would confirm it."""
        while not stop.is_set():
            try:
                for p in self.api.get(PODS, deadline_s=30)["items"]:
                    md = p["metadata"]
                    if md.get("deletionTimestamp"):
                        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                                "preconditions": {"uid": md["uid"]}}
                        self.api.once("DELETE", f"{PODS}/{md['name']}", body, agent=KUBELET_AGENT)
                        self.confirmed += 1
            except (ScenarioFailed, OSError, http.client.HTTPException):
                pass  # the API server restarting: next round
            stop.wait(2)

    def lose_pod(self, pod, uid):
        """The pod deleted at once (grace 0), as when its node is gone: a node_lost restart."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                "preconditions": {"uid": uid}}
        try:
            status, _ = self.api.call("DELETE", f"{PODS}/{pod}", body, deadline_s=60, agent=LOSE_AGENT)
        except ScenarioFailed:
            self.ambiguous += 1
            return False
        return status == 200

    def inject(self, until, failures, losses, hard):
        """`failures` pod failures (any running pod of a job that will not finish) and `losses` pod losses (of a
        stable job), spread until `until` (monotonic), or later on a slow machine, but not past `hard`."""
        n_fail = n_lost = 0
        while (n_fail < failures or n_lost < losses) and time.monotonic() < hard:
            left = max(1, failures + losses - n_fail - n_lost)
            pace = max(0.05, (until - time.monotonic()) / left)
            running = self.running_pods()
            pool = [(j, p) for j, pods in running.items() if j not in self.finishing for p in pods]
            if not pool:
                time.sleep(0.5)
                continue
            if n_lost < losses:
                stable = sorted(self.stable_jobs(running) - self.finishing)
                for j in self.rng.sample(stable, min(len(stable), max(1, int(2 / pace) // 2))):
                    spares = [p for p in running[j] if is_spare(p[0])]
                    # As many spare losses as member losses, about: a spare's loss is the new path.
                    pod, uid = self.rng.choice(spares if spares and self.rng.random() < 0.5 else running[j])
                    if n_lost < losses and self.lose_pod(pod, uid):
                        n_lost += 1
                        self.progress += 1
                        pool = [(k, p) for k, p in pool if k != j]  # no failure beside the loss this round
            picks = self.rng.sample(pool, min(len(pool), max(1, int(2 / pace))))
            # About a third of the failures on spares (of every fifth pod with 8 nodes and 2 spares, by chance).
            spare_pool = [x for x in pool if is_spare(x[1][0]) and x not in picks]
            for i in range(len(picks)):
                if spare_pool and not is_spare(picks[i][1][0]) and self.rng.random() < 0.2:
                    picks[i] = spare_pool.pop(self.rng.randrange(len(spare_pool)))
            for j, (pod, uid) in picks:
                if n_fail < failures and self.end_pod(pod, uid, 137, FAIL_AGENT):
                    self.injected_fail[j] += 1
                    n_fail += 1
                    self.progress += 1
            time.sleep(min(pace, 2.0))
        return n_fail, n_lost

    def finish_jobs(self, until):
        """Every finishing job's members exit 0, once all its NODES pods (and its spares) run."""
        left = set(self.finishing)
        while left:
            if time.monotonic() >= until:
                raise ScenarioFailed(f"{len(left)} finishing jobs never had all {self.all_pods()} pods running")
            running = self.running_pods()
            for j in sorted(left):
                if len(running.get(j, [])) != self.all_pods():
                    continue
                for pod, uid in running[j]:
                    if not is_spare(pod):
                        self.end_pod(pod, uid, 0, FINISH_AGENT)
                left.discard(j)
                self.progress += 1
            time.sleep(1)

    # -- the faults ----------------------------------------------------------------------------------------------

    def fault_plan(self, window):
        kinds = (["operator-kill"] * self.a.operator_kills + ["apiserver-restart"] * self.a.apiserver_restarts +
                 ["etcd-restart"] * self.a.etcd_restarts)
        self.rng.shuffle(kinds)
        # Random moments over the window (sorted); control-plane restarts take seconds each, so they are spaced.
        moments = sorted(self.rng.uniform(0.02 * window, window) for _ in kinds)
        return list(zip(moments, kinds))

    def run_faults(self, t0, plan):
        try:
            for k, (at, kind) in enumerate(plan):
                delay = t0 + at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                # Not ahead of the work either (a slow machine stretches it): fault k lands once k/K of it is done,
                # so that the faults fall among the creates, failures, losses and finishes whatever the speed.
                while self.progress < k * self.total_work / len(plan) and not self.work_over.is_set():
                    time.sleep(0.1)
                t = time.monotonic()
                if kind == "operator-kill":
                    self.op.kill()
                    self.op.start()
                elif kind == "apiserver-restart":
                    self.cluster.sh("restart-apiserver")
                else:
                    self.cluster.sh("restart-etcd")
                    self.revive_control_plane()
                self.last_fault_end = time.monotonic()
                self.fault_log.append((t - t0, kind, self.last_fault_end - t))
            if not self.op.alive():
                raise ScenarioFailed(f"the operator exited by itself:\n{self.op.log_tail()}")
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.error = e
        finally:
            self.faults_done.set()

    def revive_control_plane(self):
        """kube-scheduler and kube-controller-manager may exit when etcd goes (a real cluster's kubelet restarts
        them); not the operator's to test: say so and go on with restart-apiserver, which starts a fresh scheduler."""
        for what in ("kube-scheduler", "kube-controller-manager", "kwok"):
            pid = self.cluster.pid_of(what)
            if pid is None or not os.path.exists(f"/proc/{pid}"):
                say(f"{what} exited with etcd's restart")

    # -- the checks -----------------------------------------------------------------------------------------------

    def expected(self):
        """What happened, from the audit log, in the order the API server completed the requests: per job, the
        test's failing patches that landed (pod_failure) and the pods someone other than the operator deleted while
        they ran (node_lost: kwok, playing the kubelets, deletes pods by name and now and then takes a same-named
        replacement along; one deleted while still Pending never joined a group and is no restart); and the
        operator's pod creates by answer (201 taken, 409 already there) and its pod deletes by answer. A spare's
        failure or loss is no restart of its job: those are counted apart (self.spare_fails, self.spare_lost, and
        the operator's deletes of spares in self.spare_op_deletes)."""
        fails = collections.Counter()
        foreign_deletes = collections.Counter()
        creates = collections.Counter()
        op_deletes = collections.Counter()
        self.spare_fails, self.spare_lost, self.spare_op_deletes = 0, 0, collections.Counter()
        self.foreign_pending = 0  # deleted by others before they ran: recreated, no restart
        state = {}  # pod name: its current incarnation's state (Pending, Running, Ended)
        for e in audit_events(self.cluster.audit_log,
                              lambda e: e.get("objectRef", {}).get("resource") == "pods" and
                              e.get("objectRef", {}).get("namespace") == NS):
            ref, agent, code = e["objectRef"], e.get("userAgent", ""), e.get("responseStatus", {}).get("code")
            name, sub = ref.get("name", ""), ref.get("subresource", "")
            spare = is_spare(name)
            deletes = self.spare_op_deletes if spare else op_deletes
            if code not in (200, 201):
                if e["verb"] == "create" and not sub and agent.startswith(OPERATOR_AGENT):
                    creates[code] += 1
                    if code == 504:  # the API server's timeout: the pod may exist (kwok's Running patch will say)
                        state.setdefault(name, "Pending")
                elif e["verb"] == "delete" and agent.startswith(OPERATOR_AGENT):
                    deletes[code] += 1
                continue
            if e["verb"] == "create" and not sub:
                state[name] = "Pending"
                if agent.startswith(OPERATOR_AGENT):
                    creates[code] += 1
            elif e["verb"] == "patch" and sub == "status":
                if agent.startswith(FAIL_AGENT):
                    if spare:
                        self.spare_fails += 1
                    else:
                        fails[job_of(name)] += 1
                    state[name] = "Ended"
                elif agent.startswith(FINISH_AGENT):
                    state[name] = "Ended"
                elif agent.startswith("kwok/") and state.get(name) == "Pending":
                    state[name] = "Running"
            elif e["verb"] == "delete" and not sub:
                if agent.startswith(OPERATOR_AGENT):
                    deletes[code] += 1
                elif spare and agent.startswith(LOSE_AGENT):
                    self.spare_lost += 1
                elif state.get(name) == "Running" or agent.startswith(LOSE_AGENT):  # the test lost a running pod
                    foreign_deletes[(job_of(name), agent.split("/")[0])] += 1
                elif state.get(name) == "Pending":
                    self.foreign_pending += 1
                state.pop(name, None)
        return fails, foreign_deletes, creates, op_deletes

    def observed(self):
        pods = self.api.get(PODS, deadline_s=60)["items"]
        tjs = {t["metadata"]["name"]: t for t in self.api.get(JOBS, deadline_s=60)["items"]}
        by_job = collections.defaultdict(list)
        for p in pods:
            by_job[p["metadata"].get("labels", {}).get("kubedist.io/job-name", "?")].append(p)
        return by_job, tjs

    def mismatches(self, fails, lost):
        by_job, tjs = self.observed()
        bad = []
        want_names = lambda j: sorted(f"{j}-node-{r}" for r in range(self.a.nodes))  # noqa: E731
        for p in (p for ps in by_job.values() for p in ps):
            env = {e.get("name"): e.get("value") for c in p["spec"].get("containers", []) if c.get("name") == "trainer"
                   for e in c.get("env", [])}
            if env.get("NODE_RANK") != str(rank_of(p["metadata"]["name"])):
                bad.append(f"{p['metadata']['name']}: NODE_RANK {env.get('NODE_RANK')}")
        for j in self.jobs:
            t = tjs.get(j)
            if t is None:
                bad.append(f"{j}: missing")
                continue
            st = t.get("status", {})
            want = {"pod_failure": fails[j], "node_lost": lost[j]}
            got = {k: v for k, v in (st.get("restartsByReason") or {}).items() if v}
            want_nz = {k: v for k, v in want.items() if v}
            if got != want_nz or st.get("restarts", 0) != sum(want.values()):
                bad.append(f"{j}: restarts {st.get('restarts', 0)} {got}, happened {want_nz}")
            pods = by_job.get(j, [])
            spares = sorted(p["metadata"]["name"] for p in pods if is_spare(p["metadata"]["name"]))
            if j in self.finishing:
                if st.get("phase") != "Succeeded":
                    bad.append(f"{j}: phase {st.get('phase')}, want Succeeded")
                elif spares:
                    bad.append(f"{j}: finished with spare pods left: {spares}")
                continue
            names = sorted(p["metadata"]["name"] for p in pods if not is_spare(p["metadata"]["name"]))
            running = [p for p in pods if p["status"].get("phase") == "Running" and
                       not p["metadata"].get("deletionTimestamp")]
            spare_indices = [rank_of(n) - SPARE_RANK_BASE for n in spares]
            if names != want_names(j) or len(running) != self.all_pods():
                bad.append(f"{j}: pods {names + spares} ({len(running)} running)")
            elif len(spares) != self.a.spares or not all(0 <= i < 2 * self.a.spares for i in spare_indices):
                bad.append(f"{j}: spares {spares}, want {self.a.spares} of index below {2 * self.a.spares}")
            elif st.get("phase") != "Running" or st.get("readyReplicas") != self.a.nodes:
                bad.append(f"{j}: phase {st.get('phase')} ready {st.get('readyReplicas')}")
            elif (st.get("spares") or 0) != self.a.spares:
                bad.append(f"{j}: status.spares {st.get('spares')}, want {self.a.spares}")
        strays = [p["metadata"]["name"] for k, ps in by_job.items() if k not in tjs for p in ps]
        if strays:
            bad.append(f"pods of no job: {strays[:5]}")
        return bad

    # -- the scenario ------------------------------------------------------------------------------------------------

    def run(self):
        a = self.a
        self.setup()
        plan = self.fault_plan(a.window)
        failures = a.failures if a.failures is not None else a.jobs
        say(f"injecting: {a.operator_kills} operator SIGKILLs, {a.apiserver_restarts} API server restarts, "
            f"{a.etcd_restarts} etcd restarts at random moments over {a.window}s; {a.jobs} jobs x {a.nodes} pods"
            f"{f' + {a.spares} spares' if a.spares else ''}; "
            f"about {failures} pod failures (exit 137) and {a.losses if a.losses is not None else a.jobs // 4} pod losses "
            f"(deleted at once); {len(self.finishing)} jobs finished (exit 0)")
        say("fault moments (s): " + ", ".join(f"{at:.1f} {kind}" for at, kind in plan))
        losses = a.losses if a.losses is not None else a.jobs // 4
        self.total_work = a.jobs + failures + losses + len(self.finishing)
        t0 = time.monotonic()
        faults = threading.Thread(target=self.run_faults, args=(t0, plan), daemon=True)
        faults.start()
        stop_confirming = threading.Event()
        self.sc.on_close(stop_confirming.set)
        threading.Thread(target=self.confirm_loop, args=(stop_confirming,), daemon=True).start()
        try:
            self.create_jobs(min(a.window * 0.3, 30))
            until = max(t0 + a.window * 0.8, time.monotonic() + 30)
            n, n_lost = self.inject(until, failures, losses, until + a.converge_deadline)
            self.finish_jobs(time.monotonic() + a.converge_deadline)
        finally:
            self.work_over.set()
        t_work = time.monotonic()
        if n < failures or n_lost < losses:
            raise ScenarioFailed(f"only {n} of {failures} failures and {n_lost} of {losses} losses injected in time")
        self.faults_done.wait()
        if self.error:
            raise self.error
        say(f"faults done at {self.last_fault_end - t0:.1f}s; " +
            "; ".join(f"{kind} at {at:.1f}s took {d:.1f}s" for at, kind, d in self.fault_log if kind != "operator-kill"))
        say(f"{n} pod failures and {n_lost} pod losses injected by the test's answers ({self.ambiguous} answers lost "
            f"to a fault)")

        # Converged: every count and pod as it should be; the audit log is read again while waiting, as late
        # writes land.
        deadline = self.last_fault_end + a.converge_deadline
        while True:
            fails, foreign, creates, op_deletes = self.expected()
            lost = collections.Counter()
            for (j, _agent), c in foreign.items():
                lost[j] += c
            bad = self.mismatches(fails, lost)
            if not bad:
                converged = time.monotonic() - self.last_fault_end
                break
            if time.monotonic() >= deadline:
                raise ScenarioFailed(f"not converged {a.converge_deadline}s after the last fault: {len(bad)} jobs "
                                     f"wrong, e.g.\n  " + "\n  ".join(bad[:15]) + f"\n{self.op.log_tail(15)}")
            time.sleep(1)
        time.sleep(3)  # nothing more may change: a late duplicate or count would show now
        say(f"converged {converged:.1f}s after the last fault")
        fails, foreign, creates, op_deletes = self.expected()
        bad = self.mismatches(fails, lost)
        if bad:
            raise ScenarioFailed("changed after converging:\n  " + "\n  ".join(bad[:15]))
        spare_churn = self.spare_fails + self.spare_lost  # each spare failed or lost is made again
        want_creates = (a.jobs * self.all_pods() + sum(fails.values()) + sum(lost.values()) + spare_churn +
                        self.foreign_pending)
        others = {k: c for k, c in foreign.items() if k[1] != "kubedist-faults"}
        say(f"what happened (audit log): {sum(fails.values())} pod failures, {sum(lost.values())} running pods "
            f"deleted at once, {self.foreign_pending} pending ones" +
            (f"; of the spares: {self.spare_fails} failed, {self.spare_lost} deleted at once" if a.spares else ""))
        if others or self.foreign_pending:
            raise ScenarioFailed(f"pods deleted that the test did not delete: {others}, {self.foreign_pending} pending")
        say(f"pods left terminating and confirmed by the test's kubelet part: {self.confirmed}")
        say(f"operator's pod creates: {creates[201]} taken, {creates[504]} answered 504 (needed {want_creates}), "
            f"{creates[409]} refused as existing; its pod deletes by answer: {dict(op_deletes)}")
        # A create answered 504 (the API server's own timeout, etcd slow or restarting) may have landed.
        if not creates[201] <= want_creates <= creates[201] + creates[504] + creates[500]:
            raise ScenarioFailed(f"{creates[201]} pod creates taken ({creates[504]} answered 504), {want_creates} "
                                 "needed: duplicates or missing")
        # Each failed pod deleted once (a DELETE answered 504 may have landed: the test's kubelet part confirmed it).
        if not op_deletes[200] <= sum(fails.values()) <= op_deletes[200] + op_deletes[504]:
            raise ScenarioFailed(f"the operator deleted {op_deletes[200]} pods ({op_deletes[504]} answered 504), "
                                 f"{sum(fails.values())} failed")
        # Each failed spare deleted once, and each finished job's spares (cleanPodPolicy Running).
        want_spare_deletes = self.spare_fails + len(self.finishing) * a.spares
        spare_deletes = self.spare_op_deletes
        if not spare_deletes[200] <= want_spare_deletes <= spare_deletes[200] + spare_deletes[504]:
            raise ScenarioFailed(f"the operator deleted {spare_deletes[200]} spare pods ({spare_deletes[504]} "
                                 f"answered 504): {self.spare_fails} failed, {len(self.finishing) * a.spares} of "
                                 "finished jobs")
        say(f"checked: {a.jobs} jobs have exactly their pods (0 duplicates, 0 missing" +
            (f"; {a.spares} spares each, every spare failed or lost made again" if a.spares else "") +
            f"); every job's restarts equal what happened (pod_failure {sum(fails.values())}, node_lost "
            f"{sum(lost.values())}: 0 lost, 0 counted twice); {len(self.finishing)} finished jobs Succeeded")
        self.result = (sum(fails.values()), sum(lost.values()), creates[201], creates[409], converged)
        say(f"(the test's own last change was {t_work - self.last_fault_end:+.1f}s from the last fault)")
        print(f"RESULT jobs={a.jobs} nodes={a.nodes} spares={a.spares} operator_kills={a.operator_kills} "
              f"apiserver_restarts={a.apiserver_restarts} etcd_restarts={a.etcd_restarts} "
              f"pod_failures={sum(fails.values())} node_lost={sum(lost.values())} spare_failures={self.spare_fails} "
              f"spares_lost={self.spare_lost} lost=0 duplicates=0 "
              f"converged_s={converged:.1f}", flush=True)


def main(doc=__doc__, **defaults):
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("operator")
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--spares", type=int, default=0, help="spare pods per job (spec.spares)")
    p.add_argument("--operator-kills", type=int, default=0)
    p.add_argument("--apiserver-restarts", type=int, default=0)
    p.add_argument("--etcd-restarts", type=int, default=0)
    p.add_argument("--failures", type=int, default=None, help="pod failures to inject (default: one per job)")
    p.add_argument("--losses", type=int, default=None, help="pod losses to inject (default: one per 4 jobs)")
    p.add_argument("--window", type=float, default=120, help="seconds over which the faults are spread")
    p.add_argument("--converge-deadline", type=float, default=300)
    p.set_defaults(**defaults)
    a = p.parse_args()
    for name in ("jobs", "nodes"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    if not 0 <= a.spares <= 64 or (a.spares and a.nodes < 2):
        p.error("--spares must be 0 to 64, and spares need --nodes 2 or more (spec.spares)")
    if min(a.operator_kills, a.apiserver_restarts, a.etcd_restarts) < 0 or a.window <= 0:
        p.error("fault counts must be 0 or more and --window positive")
    if not os.access(a.operator, os.X_OK):
        p.error(f"not an executable: {a.operator}")
    sc = Scenario("burst")
    say(f"FAULTS_SEED={sc.seed}")
    return sc.run(lambda s: Burst(s, a).run())


if __name__ == "__main__":
    sys.exit(main())
