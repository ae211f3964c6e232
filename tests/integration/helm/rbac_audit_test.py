#!/usr/bin/python3
"""The chart grants exactly what the operator uses: its RBAC rules compared, both ways, with the requests the API
server audited while the operator ran a full scenario under the chart's ServiceAccount.

For each install mode (cluster-wide with a ClusterRole; namespaced, watchNamespace set, with a Role in that
namespace, and networkPolicy.enabled: a NetworkPolicy per job), the chart is rendered with its defaults (leader
election, gang scheduling, Kueue), its RBAC objects and
ServiceAccount (and its empty keyring Secret) are applied in namespace kubedist-audit, and kubedist-operator runs
locally with that ServiceAccount's token and the flags the chart's Deployment gives it. Jobs then take every path
that makes a request: a foreign Secret kubedist-rendezvous (create refused, the Secret read by name, its Event
counted again on each retry), pods created and deleted (a scale down), a finished job deleted after its TTL, a gang
job whose PodGroup and Workload are replaced when minReplicas changes, a Kueue-queued job that finishes (its
Workload's status patched) and one suspended (its Workload deleted), the leader Lease, the keyring (read, then
patched with the namespace's new key).
The local cluster's API server audits every request of the ServiceAccounts of kubedist-audit
(deploy/local/cluster.sh). Then:
  - every audited request is allowed by a rule (none was refused with 403): nothing used is missing;
  - every verb of every rule was used at least once: nothing granted is unused.

usage: rbac_audit_test.py OPERATOR_BINARY     (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lib"))
from kube import kubectl, run  # noqa: E402

OPERATOR = sys.argv[1]
SRC = os.environ["KUBEDIST_SOURCE_DIR"]
CHART = os.path.join(SRC, "helm", "kubedist")
KUBECONFIG = os.environ["KUBECONFIG"]
CLUSTER_DIR = os.path.dirname(KUBECONFIG)
CLUSTER = os.path.basename(CLUSTER_DIR)
AUDIT_LOG = os.path.join(CLUSTER_DIR, "logs", "audit.log")
CLUSTER_SH = os.path.join(SRC, "deploy", "local", "cluster.sh")
AUDIT_NS = "kubedist-audit"  # cluster.sh audits every request of this namespace's ServiceAccounts
RELEASE = "kd-audit"
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def apply(obj, ns=None):
    kubectl(*(["-n", ns] if ns else []), "apply", "-f", "-", input=json.dumps(obj))


def jp(ns, what, path):
    return kubectl("-n", ns, "get", what, "-o", f"jsonpath={path}", check=False).stdout


def eventually(seconds, what, fn):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if fn():
                return
        except (RuntimeError, ValueError, KeyError) as e:
            last = e  # noqa: F841 (a command that failed counts as not yet)
        time.sleep(0.3)
    raise RuntimeError(f"not within {seconds}s: {what}")


def render(*sets):
    args = ["helm", "template", RELEASE, CHART, "--namespace", AUDIT_NS]
    for s in sets:
        args += ["--set", s]
    return [d for d in yaml.safe_load_all(run(*args).stdout) if d]


def job(name, replicas=1, spec=None, labels=None, gpus=None):
    trainer = {"name": "trainer", "image": "busybox", "command": ["python", "train.py"]}
    if gpus:
        trainer["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    obj = {"apiVersion": "kubedist.io/v1alpha1", "kind": "TrainingJob",
           "metadata": {"name": name, "labels": labels or {}},
           "spec": {"replicas": replicas, "template": {"spec": {"containers": [trainer]}}}}
    obj["spec"].update(spec or {})
    return obj


def finish(ns, pod):
    """Ends a kwok pod as its kubelet would report a trainer that exited 0."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {"status": {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}],
                         "containerStatuses": [{"name": "trainer", "image": "x", "imageID": "", "ready": False,
                                                "restartCount": 0, "state": {"terminated": {
                                                    "exitCode": 0, "reason": "Completed", "finishedAt": now}}}]}}
    kubectl("-n", ns, "patch", "pod", pod, "--subresource=status", "--type=merge", "-p", json.dumps(status))


def has_event(ns, obj, reason):
    return kubectl("-n", ns, "get", "events", "--field-selector", f"involvedObject.name={obj},reason={reason}",
                   "--no-headers", check=False).stdout.strip() != ""


def event_count(ns, obj, reason):
    """The largest count of obj's Events of this reason (a repeat is counted on the first Event: a patch)."""
    counts = kubectl("-n", ns, "get", "events", "--field-selector", f"involvedObject.name={obj},reason={reason}",
                     "-o", "jsonpath={.items[*].count}", check=False).stdout.split()
    return max([int(c) for c in counts if c.isdigit()], default=0)


def pods(ns, name):
    return [p for p in jp(ns, "pods", "{.items[*].metadata.name}").split() if p.startswith(name + "-node-")]


def scenario(ns, mode):
    """Every path of the operator that makes a request, in namespace ns."""
    # A foreign Secret of the rendezvous Secret's name: the create is refused, the operator reads it by name and
    # refuses the job's pods until it is gone; then it creates its own.
    kubectl("-n", ns, "create", "secret", "generic", "kubedist-rendezvous", "--from-literal=secret=foreign")
    apply(job("a", 2, {"ttlSecondsAfterFinished": 1}), ns)
    eventually(30, "RendezvousSecretConflict on a", lambda: has_event(ns, "a", "RendezvousSecretConflict"))
    # Each retry decides the same: counted on that Event (patch events), not a new one.
    eventually(30, "RendezvousSecretConflict counted twice",
               lambda: event_count(ns, "a", "RendezvousSecretConflict") >= 2)
    kubectl("-n", ns, "delete", "secret", "kubedist-rendezvous")
    eventually(60, "a's 2 pods", lambda: len(pods(ns, "a")) == 2)
    # Scale down: a pod deleted.
    kubectl("-n", ns, "patch", "tj", "a", "--type=merge", "-p", '{"spec":{"replicas":1}}')
    eventually(30, "a scaled down to 1 pod", lambda: pods(ns, "a") == ["a-node-0"])
    # Finished, then deleted after its TTL.
    eventually(30, "a-node-0 running", lambda: jp(ns, "pod/a-node-0", "{.status.phase}") == "Running")
    finish(ns, "a-node-0")
    eventually(60, "a deleted after its TTL", lambda: kubectl("-n", ns, "get", "tj", "a", check=False).returncode != 0)
    # Gang scheduling: Workload and PodGroup created, then replaced for a new minReplicas.
    apply(job("g", 2, {"minReplicas": 1, "maxReplicas": 2, "scheduling": {"gang": True}}), ns)
    eventually(30, "PodGroup g", lambda: jp(ns, "podgroups.scheduling.k8s.io/g",
                                            "{.spec.schedulingPolicy.gang.minCount}") == "1")
    kubectl("-n", ns, "patch", "tj", "g", "--type=merge", "-p", '{"spec":{"minReplicas":2}}')
    # The operator deletes them to recreate them; the PodGroup stays (a finalizer) until its pods are gone.
    eventually(60, "PodGroup g deleted for its new minCount",
               lambda: jp(ns, "podgroups.scheduling.k8s.io/g", "{.metadata.deletionTimestamp}") != "")
    kubectl("-n", ns, "delete", "tj", "g")
    # Kueue: a queued job admitted and finished (its Workload's status patched Finished); one suspended (its
    # Workload deleted).
    flavor = f"{ns}"
    for obj in ({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}},
                {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": flavor},
                 "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                          "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                              {"name": flavor, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}}):
        apply(obj)
    apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "team"},
           "spec": {"clusterQueue": flavor}}, ns)
    queued = {"kueue.x-k8s.io/queue-name": "team"}
    apply(job("q", 1, labels=queued, gpus=1), ns)
    eventually(60, "q admitted and its pod running", lambda: jp(ns, "pod/q-node-0", "{.status.phase}") == "Running")
    finish(ns, "q-node-0")
    eventually(30, "q's Kueue Workload Finished", lambda: jp(
        ns, "workloads.kueue.x-k8s.io/q", '{.status.conditions[?(@.type=="Finished")].status}') == "True")
    apply(job("s", 1, labels=queued, gpus=1), ns)
    eventually(60, "s admitted", lambda: jp(ns, "tj/s", '{.status.conditions[?(@.type=="Admitted")].status}') == "True")
    kubectl("-n", ns, "patch", "tj", "s", "--type=merge", "-p", '{"spec":{"suspend":true}}')
    eventually(30, "s's Kueue Workload deleted",
               lambda: kubectl("-n", ns, "get", "workloads.kueue.x-k8s.io", "s", check=False).returncode != 0)
    kubectl("delete", "clusterqueue", flavor, "--wait=false", check=False)
    kubectl("delete", "resourceflavor", flavor, "--wait=false", check=False)
    if mode == "cluster":
        # A node deleted under a job's pod (nodes are watched cluster-wide only): the operator asks for the node
        # (a 404 confirms it gone) before it force-deletes the pod. Before that, with spec.placement.topologyKey, it
        # reads the node's label once the pod is bound and patches the pod's topology-domain annotation.
        node = f"{ns}-lost"
        apply({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": node, "annotations": {"kwok.x-k8s.io/node": "fake"},
                            "labels": {"kubernetes.io/hostname": node, "type": "kwok", "kubedist.io/test-pool": ns}},
               "spec": {"taints": [{"key": "kubedist.io/test-pool", "value": ns, "effect": "NoSchedule"}]},
               "status": {"capacity": {"cpu": "8", "memory": "64Gi", "pods": "10"},
                          "allocatable": {"cpu": "8", "memory": "64Gi", "pods": "10"}}})
        lost = job("n", 1, {"placement": {"topologyKey": "kubernetes.io/hostname"}})
        lost["spec"]["template"]["spec"].update({
            "nodeSelector": {"kubedist.io/test-pool": ns},
            "tolerations": [{"key": "kubedist.io/test-pool", "operator": "Equal", "value": ns, "effect": "NoSchedule"}]})
        apply(lost, ns)
        eventually(60, "n-node-0 running on its own node",
                   lambda: jp(ns, "pod/n-node-0", "{.spec.nodeName} {.status.phase}") == f"{node} Running")
        eventually(30, "n-node-0 annotated with its node's domain", lambda: jp(
            ns, "pod/n-node-0", "{.metadata.annotations.kubedist\\.io/topology-domain}") == node)
        kubectl("delete", "node", node, "--wait=false")
        eventually(60, "n-node-0 lost with its deleted node", lambda: has_event(ns, "n", "PodLost"))
        kubectl("-n", ns, "delete", "tj", "n")


def granted_rules(docs, sa_ns):
    """The rules bound to the chart's ServiceAccount: [(rule, namespace or None for cluster-wide)]."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
             for d in docs if d["kind"] in ("Role", "ClusterRole")}
    out = []
    for b in docs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = b["roleRef"]
        ns = b["metadata"].get("namespace") if b["kind"] == "RoleBinding" else None
        role = roles[(ref["kind"], ns if ref["kind"] == "Role" else None, ref["name"])]
        for rule in role["rules"]:
            out.append((rule, ns))
    return out


def allows(rule, ns, request):
    group, resource, verb, name, req_ns = request
    return (group in rule.get("apiGroups", []) and resource in rule.get("resources", [])
            and verb in rule.get("verbs", []) and (ns is None or req_ns == ns)
            and (not rule.get("resourceNames") or name in rule["resourceNames"]))


def audited_requests(user, start):
    """(apiGroup, resource[/subresource], verb, name, namespace) of every request user made after byte start, the
    non-resource paths it asked for, and the refused requests."""
    requests, non_resource, refused = set(), set(), []
    with open(AUDIT_LOG) as f:
        f.seek(start)
        for line in f:
            e = json.loads(line)
            if e.get("user", {}).get("username") != user:
                continue
            code = e.get("responseStatus", {}).get("code", 0)
            ref = e.get("objectRef")
            if ref is None:
                non_resource.add(e["requestURI"].split("?")[0])
                continue
            resource = ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else "")
            r = (ref.get("apiGroup", ""), resource, e["verb"], ref.get("name", ""), ref.get("namespace"))
            if code == 403:
                refused.append(r)
            requests.add(r)
    return requests, non_resource, refused


def run_mode(mode):
    jobs_ns = f"kd-audit-{mode}-{int(time.time())}"
    kubectl("create", "namespace", jobs_ns)
    # The namespaced mode also isolates jobs (networkPolicy.enabled, perJob by default): each job's NetworkPolicy
    # is created and watched; the cluster-wide mode, with the chart's default, never touches NetworkPolicies.
    sets = [f"watchNamespace={jobs_ns}", "networkPolicy.enabled=true"] if mode == "namespaced" else []
    docs = render(*sets)
    rbac = [d for d in docs if d["kind"] in ("ServiceAccount", "Role", "ClusterRole", "RoleBinding",
                                             "ClusterRoleBinding")]
    for d in rbac:
        apply(d, d["metadata"].get("namespace") or (AUDIT_NS if d["kind"] == "ServiceAccount" else None))
    # The keyring Secret the chart makes empty and the operator fills (get as it starts leading, patch per new key).
    keyring = next(d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"].endswith("-keyring"))
    apply(keyring, AUDIT_NS)
    sa = next(d for d in rbac if d["kind"] == "ServiceAccount")["metadata"]["name"]
    user = f"system:serviceaccount:{AUDIT_NS}:{sa}"
    dep = next(d for d in docs if d["kind"] == "Deployment")
    args = [a for a in dep["spec"]["template"]["spec"]["containers"][0]["args"]
            if not a.startswith("--metrics-address")]
    with tempfile.TemporaryDirectory() as tmp:
        token = run("kubectl", "-n", AUDIT_NS, "create", "token", sa, "--duration=1h").stdout.strip()
        with open(os.path.join(tmp, "token"), "w") as f:
            f.write(token)
        server = kubectl("config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
        ca = kubectl("config", "view", "--raw", "--minify", "-o",
                     "jsonpath={.clusters[0].cluster.certificate-authority-data}").stdout
        with open(os.path.join(tmp, "kubeconfig"), "w") as f:
            yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "sa",
                            "clusters": [{"name": "c", "cluster": {"server": server,
                                                                   "certificate-authority-data": ca}}],
                            "users": [{"name": "u", "user": {"tokenFile": "token"}}],
                            "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "u",
                                                                    "namespace": AUDIT_NS}}]}, f)
        start = os.path.getsize(AUDIT_LOG)
        log_path = os.path.join(tmp, "operator.log")
        with open(log_path, "w") as log:
            op = subprocess.Popen([OPERATOR, "--kubeconfig", os.path.join(tmp, "kubeconfig"),
                                   "--probe-address", "127.0.0.1:0", *args], stdout=log, stderr=subprocess.STDOUT)
        try:
            scenario(jobs_ns, mode)
        except RuntimeError as e:
            check(False, f"{mode}: the scenario ran: {e}")
            with open(log_path) as f:
                print("--- operator log (last 40 lines) ---\n" + "".join(f.readlines()[-40:]))
        finally:
            op.terminate()
            op.wait(30)
        with open(log_path) as f:
            text = f.read()
        check("gang scheduling is off" not in text and "jobs queued for Kueue wait" not in text,
              f"{mode}: the operator saw the Workload API and Kueue (so their rules were exercised)")
        if mode == "namespaced":
            check("a NetworkPolicy per job" in text and "NetworkPolicyUnavailable" not in text,
                  f"{mode}: the operator made a NetworkPolicy per job (so that rule was exercised)")
    entries = json.loads(kubectl("-n", AUDIT_NS, "get", "secret", keyring["metadata"]["name"], "-o", "json").stdout
                         ).get("data", {})
    check(any(e.startswith(jobs_ns + ".") for e in entries),
          f"{mode}: the keyring Secret holds the key the operator made for {jobs_ns} ({sorted(entries)})")
    kubectl("-n", AUDIT_NS, "delete", "secret", keyring["metadata"]["name"], "--wait=false", check=False)
    time.sleep(2)  # the API server writes an audit event once the response is complete
    requests, non_resource, refused = audited_requests(user, start)
    rules = granted_rules(rbac, AUDIT_NS)
    check(requests, f"{mode}: the audit log holds the operator's requests ({len(requests)} distinct)")
    check(not refused, f"{mode}: no request was refused (403)" + (f": {sorted(refused)}" if refused else ""))
    missing = sorted(r for r in requests if not any(allows(rule, ns, r) for rule, ns in rules))
    check(not missing, f"{mode}: every request the operator made is granted (nothing used is missing)" +
          (f"; not granted: {missing}" if missing else ""))
    unused = []
    for rule, ns in rules:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                for verb in rule.get("verbs", []):
                    if not any(r[0] == group and r[1] == resource and r[2] == verb and allows(rule, ns, r)
                               for r in requests):
                        unused.append(f"{verb} {resource}.{group or 'core'}" +
                                      (f" {rule['resourceNames']}" if rule.get("resourceNames") else ""))
    check(not unused, f"{mode}: every verb the chart grants was used (nothing granted is unused)" +
          (f"; unused: {unused}" if unused else ""))
    bad_paths = sorted(p for p in non_resource if not (p in ("/api", "/apis") or p.startswith("/apis/")))
    check(not bad_paths, f"{mode}: its only non-resource requests are API discovery ({sorted(non_resource)})")
    kubectl("-n", AUDIT_NS, "delete", "lease", dep["metadata"]["name"], "--wait=false", check=False)  # made anew next
    for d in rbac:
        if d["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            kubectl("delete", d["kind"].lower(), d["metadata"]["name"], "--wait=false", check=False)
    kubectl("delete", "namespace", jobs_ns, "--wait=false", check=False)


if not os.path.exists(AUDIT_LOG):
    sys.exit(f"FAIL: no audit log at {AUDIT_LOG}: the cluster must be started by a deploy/local/cluster.sh that "
             "audits the ServiceAccounts of kubedist-audit (restart it)")
run("kubectl", "apply", "--server-side", "--force-conflicts", "-f", os.path.join(SRC, "crd", "kubedist.io_trainingjobs.yaml"))
run("kubectl", "wait", "--for=condition=Established", "--timeout=60s", "crd/trainingjobs.kubedist.io")
# An earlier run's namespace may still be going away.
eventually(120, f"namespace {AUDIT_NS} of an earlier run gone", lambda: kubectl(
    "get", "namespace", AUDIT_NS, "-o", "jsonpath={.status.phase}", check=False).stdout != "Terminating")
if kubectl("get", "namespace", AUDIT_NS, check=False).returncode != 0:
    kubectl("create", "namespace", AUDIT_NS)
run(CLUSTER_SH, "kueue-up", CLUSTER)
try:
    for mode in ("cluster", "namespaced"):
        run_mode(mode)
finally:
    run(CLUSTER_SH, "kueue-down", CLUSTER, check=False)
    kubectl("delete", "namespace", AUDIT_NS, "--wait=false", check=False)

print(f"rbac_audit_test: {'all checks passed' if not failures else str(len(failures)) + ' failed'}")
sys.exit(1 if failures else 0)
