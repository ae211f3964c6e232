#!/usr/bin/python3
"""The Grafana dashboard and the alert rules against a real Prometheus (Debian's) and the real binaries.

Usage: dashboard_test.py prometheus OPERATOR LAUNCHER   (needs the local control plane: KUBECONFIG)
       dashboard_test.py rules                          (helm and promtool only)

prometheus: runs kubedist-operator against the local control plane (with Kueue, cluster.sh kueue-up) and a
kubedist-launcher supervising a small /usr/bin/python3 worker, both on 127.0.0.1, and a Prometheus scraping them
every second. A TrainingJob goes through a pod failure, a second one fails for good, a third is queued for Kueue and
admitted, and the launcher's worker crashes once; then every query of
every panel in deploy/dashboards/kubedist.json must return data (but the progress panels': their metrics come from
the STATUS of node 0's launcher in a real pod, which e2e.dashboard checks), the panels must show the restart and the failure,
and the chart's alerts, loaded into the same Prometheus, must fire (or be pending) for them.

rules: the chart's PrometheusRule passes `promtool check rules`.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lib"))
from kube import run  # noqa: E402

SRC = os.environ["KUBEDIST_SOURCE_DIR"]
DASHBOARD = os.path.join(SRC, "deploy", "dashboards", "kubedist.json")
RATE_INTERVAL = "30s"  # what Grafana's $__rate_interval is for a 1s scrape interval, with room to spare


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def ok(msg):
    print("ok: " + msg, flush=True)


def eventually(seconds, what, fn):
    deadline = time.monotonic() + seconds
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            fail(f"not within {seconds}s: {what}")
        time.sleep(0.25)


def http_get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except Exception as e:  # refused while starting, HTTP errors: the caller polls
        return None, str(e)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_rules(path, *sets):
    """Writes the chart's PrometheusRule groups as a Prometheus rules file; returns the alert names."""
    args = ["helm", "template", "kd", os.path.join(SRC, "helm", "kubedist"), "--set", "metrics.prometheusRule.enabled=true"]
    for s in sets:
        args += ["--set", s]
    rules = [d for d in yaml.safe_load_all(run(*args).stdout) if d and d["kind"] == "PrometheusRule"]
    if len(rules) != 1:
        fail("the chart rendered no PrometheusRule")
    with open(path, "w") as f:
        yaml.safe_dump({"groups": rules[0]["spec"]["groups"]}, f)
    return [r["alert"] for g in rules[0]["spec"]["groups"] for r in g["rules"]]


def rules_test():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rules.yaml")
        names = write_rules(path)
        p = run("promtool", "check", "rules", path, check=False)
        if p.returncode != 0:
            fail("promtool check rules: " + p.stdout + p.stderr)
    ok(f"promtool check rules accepts the chart's alerts {names}")


def panel_queries():
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["refId"], target["expr"]


# The operator's progress metrics (status.progress) come from polling node 0's launcher at its pod's IP: here the
# pods are played by the test and nothing reports progress, so e2e.dashboard (real launchers, a job that reports its
# steps) checks these queries instead.
PROGRESS_METRICS = ("kubedist_job_step", "kubedist_job_steps_per_second",
                    "kubedist_job_estimated_completion_timestamp_seconds", "kubedist_job_goodput")


def needs_progress(expr):
    return any(re.search(r"\b" + m + r"\{", expr) for m in PROGRESS_METRICS)


def dashboard_queries(namespace):
    """(panel title, refId, PromQL) of every query, as Grafana asks them with $namespace set to `namespace`."""
    return [(title, ref, expr.replace("$__rate_interval", RATE_INTERVAL).replace("$namespace", namespace))
            for title, ref, expr in panel_queries()]


def queries_without_data(prom, queries):
    """Returns ({(title, refId): expr} of the queries that return nothing, or an error for one Prometheus refuses)."""
    missing = {}
    for title, ref, expr in queries:
        result, err = prom.query(expr)
        if err:
            return None, f"panel \"{title}\" query {ref} is refused by Prometheus: {err}\n  {expr}"
        if not result:
            missing[(title, ref)] = expr
    return missing, None


class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr, **params):
        endpoint = "query_range" if "start" in params else "query"
        url = f"{self.base}/api/v1/{endpoint}?" + urllib.parse.urlencode({"query": expr, **params})
        code, body = http_get(url)
        if code != 200:
            return None, f"HTTP {code}: {body}"
        return json.loads(body)["data"]["result"], None


def prometheus_test(operator, launcher):
    subprocess.run(["kubectl", "apply", "--server-side", "--force-conflicts", "-f",
                    os.path.join(SRC, "crd", "kubedist.io_trainingjobs.yaml")], check=True, capture_output=True)
    run("kubectl", "wait", "--for=condition=Established", "--timeout=60s", "crd/trainingjobs.kubedist.io")
    ns = f"dashboard-{int(time.time())}-{os.getpid()}"
    run("kubectl", "create", "namespace", ns)
    procs = {}
    tmp = tempfile.mkdtemp(prefix="kubedist-dashboard-")
    passed = False
    cluster_sh = os.path.join(SRC, "deploy", "local", "cluster.sh")
    cluster = os.path.basename(os.path.dirname(os.environ["KUBECONFIG"]))
    try:
        # Kueue, before the operator (which looks for it when it starts), with a queue for this namespace.
        run(cluster_sh, "kueue-up", cluster)
        run("kubectl", "apply", "-f", "-", input=f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {ns}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {ns}}}
spec:
  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {ns}}}}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{{name: {ns}, resources: [{{name: cpu, nominalQuota: 8}}]}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: team, namespace: {ns}}}
spec: {{clusterQueue: {ns}}}
""")
        # The operator.
        op_log = open(os.path.join(tmp, "operator.log"), "w+")
        procs["operator"] = subprocess.Popen([operator, "--namespace", ns, "--probe-address", "127.0.0.1:0"],
                                             stdout=op_log, stderr=subprocess.STDOUT)

        def op_port():
            op_log.seek(0)
            m = re.search(r"probes listening on port (\d+)", op_log.read())
            return m and int(m.group(1))
        op = eventually(30, "operator reports its port", op_port)

        # A launcher whose worker crashes once, when told to, and then runs until told to stop.
        worker = os.path.join(tmp, "worker.py")
        with open(worker, "w") as f:
            f.write(f"""import os, sys, time
d = {tmp!r}
deadline = time.monotonic() + 600
if not os.path.exists(os.path.join(d, "crashed")):
    while not os.path.exists(os.path.join(d, "crash")) and time.monotonic() < deadline:
        time.sleep(0.1)
    open(os.path.join(d, "crashed"), "w").close()
    sys.exit(1)
while not os.path.exists(os.path.join(d, "stop")) and time.monotonic() < deadline:
    time.sleep(0.1)
""")
        l_log = open(os.path.join(tmp, "launcher.log"), "w+")
        procs["launcher"] = subprocess.Popen(
            [launcher, "--standalone", "--nproc-per-node=1", "--max-restarts=2", "--metrics-port=0",
             "--metrics-addr=127.0.0.1", "--no-python", "--", "/usr/bin/python3", worker],
            stdout=l_log, stderr=subprocess.STDOUT, cwd=tmp)

        def launcher_port():
            l_log.seek(0)
            m = re.search(r"metrics on 127\.0\.0\.1:(\d+)/metrics", l_log.read())
            return m and int(m.group(1))
        lp = eventually(30, "launcher reports its metrics port", launcher_port)

        # Prometheus, scraping both every second.
        prom_port = free_port()
        config = os.path.join(tmp, "prometheus.yml")
        # The chart's alerts too, with a storm threshold of 0 restarts an hour so that one restart trips it.
        write_rules(os.path.join(tmp, "rules.yaml"), "metrics.prometheusRule.restartStorm.restartsPerHour=0")
        with open(config, "w") as f:
            yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                            "rule_files": [os.path.join(tmp, "rules.yaml")],
                            "scrape_configs": [
                                {"job_name": "kubedist-operator", "static_configs": [{"targets": [f"127.0.0.1:{op}"]}]},
                                {"job_name": "kubedist-launcher", "static_configs": [{"targets": [f"127.0.0.1:{lp}"]}]},
                            ]}, f)
        prom_log = open(os.path.join(tmp, "prometheus.log"), "w+")
        procs["prometheus"] = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp}/data",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--storage.tsdb.retention.time=1h"],
            stdout=prom_log, stderr=subprocess.STDOUT)
        prom = Prometheus(prom_port)
        eventually(60, "Prometheus ready", lambda: http_get(f"{prom.base}/-/ready")[0] == 200)

        def both_up():
            r, _ = prom.query("up == 1")
            return r is not None and len(r) == 2
        eventually(30, "Prometheus scrapes the operator and the launcher (up == 1 for both)", both_up)
        ok(f"Prometheus on 127.0.0.1:{prom_port} scrapes the operator (:{op}) and the launcher (:{lp})")
        started = time.time()

        # A job, seen by Prometheus before anything happens to it, so that every increase shows.
        job = ("apiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: j}\nspec:\n  replicas: 2\n"
               "  template:\n    spec:\n      containers: [{name: trainer, image: busybox, command: [python, train.py]}]\n")
        run("kubectl", "-n", ns, "apply", "-f", "-", input=job)

        def phase():
            return run("kubectl", "-n", ns, "get", "tj/j", "-o", "jsonpath={.status.phase}", check=False).stdout

        eventually(60, "job Running", lambda: phase() == "Running")
        # A job queued for Kueue, admitted at once: the admission panel's waiting count and time to admission.
        run("kubectl", "-n", ns, "apply", "-f", "-", input=job.replace(
            "{name: j}", "{name: queued, labels: {kueue.x-k8s.io/queue-name: team}}").replace("replicas: 2", "replicas: 1"))
        eventually(60, "the queued job admitted by Kueue and Running", lambda: run(
            "kubectl", "-n", ns, "get", "tj/queued", "-o",
            'jsonpath={.status.phase} {.status.conditions[?(@.type=="Admitted")].status}', check=False).stdout ==
            "Running True")
        # A second job whose pod fails permanently: the failed counter and its alert.
        run("kubectl", "-n", ns, "apply", "-f", "-",
            input=job.replace("{name: j}", "{name: doomed}").replace("replicas: 2", "replicas: 1\n  restartPolicy: Never"))
        sel = f'job_namespace="{ns}",job_name="j"'

        def scraped(expr):
            return lambda: (prom.query(expr)[0] or [None])[0] is not None
        eventually(30, "Prometheus has the job at 0 restarts",
                   scraped(f'kubedist_restarts_total{{{sel},reason="pod_failure"}} == 0'))
        eventually(30, "Prometheus has the launcher at 0 restarts",
                   scraped("kubedist_launcher_worker_restarts_total == 0"))

        eventually(30, "Prometheus has the namespace's failed jobs at 0",
                   scraped(f'kubedist_jobs_failed_total{{job_namespace="{ns}"}} == 0'))
        eventually(30, "doomed's pod exists", lambda: run("kubectl", "-n", ns, "get", "pod/doomed-node-0",
                                                          check=False).returncode == 0)

        def fail_pod(pod):  # through the status subresource, as the kubelet reports it
            run("kubectl", "-n", ns, "patch", "pod", pod, "--subresource=status", "--type=merge", "-p", json.dumps(
                {"status": {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False"}],
                            "containerStatuses": [{"name": "trainer", "image": "x", "imageID": "", "ready": False,
                                                   "restartCount": 0,
                                                   "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}]}}))

        # A pod failure, a permanent one, and a worker crash.
        old = run("kubectl", "-n", ns, "get", "pod/j-node-1", "-o", "jsonpath={.metadata.uid}").stdout
        fail_pod("j-node-1")
        fail_pod("doomed-node-0")
        open(os.path.join(tmp, "crash"), "w").close()

        # pod_failure, not all restarts: kwok, playing the kubelets, deletes pods by name and now and then takes the
        # same-named replacement too, a node_lost restart of its own (as operator.cluster.fail says).
        def recovered():
            uid = run("kubectl", "-n", ns, "get", "pod/j-node-1", "-o", "jsonpath={.metadata.uid}", check=False).stdout
            restarts = run("kubectl", "-n", ns, "get", "tj/j", "-o", "jsonpath={.status.restartsByReason.pod_failure}",
                           check=False).stdout
            return uid and uid != old and restarts == "1" and phase() == "Running"
        eventually(60, "pod recreated, pod_failure=1, job Running again", recovered)
        eventually(30, "the launcher restarted its worker in place",
                   scraped("kubedist_launcher_worker_restarts_total == 1 and kubedist_launcher_workers_running == 1"))
        eventually(30, "Prometheus has the job's recovery time", scraped(f"kubedist_job_last_recovery_seconds{{{sel}}}"))
        ok("job j: a pod failed and was recreated; the launcher's worker crashed and was restarted")

        # Every panel's every query returns data (as Grafana would ask, with $namespace set to our namespace).
        progress_queries = [q for q in dashboard_queries(ns) if needs_progress(q[2])]
        queries = [q for q in dashboard_queries(ns) if not needs_progress(q[2])]
        if len(progress_queries) < 4:
            fail(f"the dashboard has only {len(progress_queries)} progress queries")
        if len(queries) < 8:
            fail(f"the dashboard has only {len(queries)} queries")
        deadline = time.monotonic() + 60
        while True:
            missing, err = queries_without_data(prom, queries)
            if err:
                fail(err)
            if not missing or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for (title, ref), expr in missing.items():
            print(f"FAIL: panel \"{title}\" query {ref} returns no data:\n  {expr}", flush=True)
        if missing:
            sys.exit(1)
        ok(f"all {len(queries)} queries of {len({q[0] for q in queries})} panels return data (the "
           f"{len(progress_queries)} progress queries are e2e.dashboard's)")

        # The restart panel shows the pod failure (and the launcher panel its in-place restart) over the run.
        def peak(title, ref, label, value):
            expr = next(e for t, r, e in queries if t == title and r == ref)
            result, err = prom.query(expr, start=str(started), end=str(time.time()), step="1")
            if err:
                fail(err)
            return max((float(v) for s in result if value is None or s["metric"].get(label) == value
                        for _, v in s["values"]),
                       default=0.0)
        eventually(30, "the restart panel shows a pod_failure restart",
                   lambda: peak("Restarts by reason", "A", "reason", "pod_failure") > 0)
        eventually(30, "the launcher panel shows the in-place restart",
                   lambda: peak("Launchers: workers running and in-place restarts", "B", "instance", f"127.0.0.1:{lp}") > 0)
        # The failed job's phase reaches the panel with the next scrape after its status (the query can come first).
        def phases():
            result, _ = prom.query(next(e for t, r, e in queries if t == "Jobs by phase"))
            return sorted(s["metric"].get("phase") for s in result or [])
        eventually(30, "the jobs-by-phase panel shows Failed and Running", lambda: phases() == ["Failed", "Running"])
        eventually(30, "the jobs panel shows the failed job",
                   lambda: peak("Jobs created, succeeded, failed", "C", "job_namespace", None) > 0)
        ok("the restart panel shows reason pod_failure, the launcher panel the worker restart, the jobs panel the "
           "failure; jobs by phase: Failed and Running")

        # The chart's alerts, evaluated by this Prometheus on these metrics.
        def alert(name, state, **labels):
            code, body = http_get(f"{prom.base}/api/v1/alerts")
            alerts = json.loads(body)["data"]["alerts"] if code == 200 else []
            return any(a["labels"].get("alertname") == name and a["state"] == state and
                       all(a["labels"].get(k) == v for k, v in labels.items()) for a in alerts)
        eventually(30, "TrainingJobFailed fires for the namespace", lambda: alert("TrainingJobFailed", "firing",
                                                                                job_namespace=ns))
        eventually(30, "TrainingJobRestartStorm is pending for job j (threshold 0, for: 5m)",
                   lambda: alert("TrainingJobRestartStorm", "pending", job_namespace=ns, job_name="j"))
        ok("the chart's alerts: TrainingJobFailed fires, TrainingJobRestartStorm is pending for j")
        passed = True
    finally:
        open(os.path.join(tmp, "stop"), "w").close()
        for name in ("prometheus", "launcher", "operator"):
            p = procs.get(name)
            if p is None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if not passed:
            for name in ("operator", "launcher", "prometheus"):
                path = os.path.join(tmp, name + ".log")
                if os.path.exists(path):
                    with open(path) as f:
                        print(f"--- {name} log (last 30 lines) ---\n" + "".join(f.readlines()[-30:]), flush=True)
        subprocess.run(["kubectl", "delete", "namespace", ns, "--wait=false"], capture_output=True)
        subprocess.run(["kubectl", "delete", f"clusterqueue/{ns}", f"resourceflavor/{ns}", "--wait=false"],
                       capture_output=True)
        subprocess.run([cluster_sh, "kueue-down", cluster], capture_output=True)
        subprocess.run(["rm", "-rf", "--", tmp])


if __name__ == "__main__":
    if sys.argv[1:2] == ["rules"]:
        rules_test()
    elif sys.argv[1:2] == ["prometheus"] and len(sys.argv) == 4:
        prometheus_test(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
