"""On real nodes: the local cluster's kubelets and containerd run every pod from images built here
(deploy/local/cluster.sh with KUBEDIST_REAL_NODES, deploy/local/images.sh). Nothing is stood in for: the operator
runs as a pod installed by the Helm chart, the launcher is copied into each training pod by its init container,
node 1 finds node 0 through CoreDNS, and PyTorch trains in the containers.

usage: real_test.py SCENARIO     (KUBECONFIG, KUBEDIST_SOURCE_DIR, KUBEDIST_CACHE and KUBEDIST_CLUSTER_DIR set, as
                                  ctest does)
scenarios:
  nodes    the nodes are real kubelets with containerd, advertise nvidia.com/gpu as an extended resource, and a pod
           asking for a GPU is scheduled and runs; one that asks for more than a node has stays Pending
  chart    helm package of the chart, pushed to the cluster's registry (OCI) and installed from there with
           helm install oci://..., with the images built here: the operator runs as a non-root pod with a
           read-only root filesystem, passes its probes, holds the leader lease, and its ServiceAccount may do
           what the operator needs and no more
  train    the CPU example (crd/examples/cpu) applied as a user would runs to Succeeded; kubectl logs of node 0
           shows ranks 0 and 1 and the end of training, node 1's its ranks; node 1's launcher reached node 0's
           rendezvous by the name the operator gave it, looked up through CoreDNS
  crash    the example with a worker crash injected: one in-place restart of the worker group (no pod recreated),
           counted in status.restartsByReason, and Succeeded
  podloss  node 1's pod is deleted while it trains: the operator recreates it and the job still Succeeds
  fail     the example's rank 1 exits with code 3 under restartPolicy ExitCode: the job fails at once, and
           status.lastFailure and the PodFailed Event carry the launcher's one-line summary, which the launcher
           wrote to the trainer's termination message file and the kubelet copied into the pod's status
"""
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import expect  # noqa: E402
from expect import Failure, check, eventually, log  # noqa: E402

expect.log.tag = "real"

SOURCE = os.environ["KUBEDIST_SOURCE_DIR"]
CACHE = os.environ["KUBEDIST_CACHE"]
CLUSTER_DIR = os.environ["KUBEDIST_CLUSTER_DIR"]
REGISTRY = "10.250.0.1:5000"  # the registry as the nodes see it (deploy/local/nodes.sh)
RELEASE, OPERATOR_NS = "kubedist", "kubedist-system"
EXAMPLE = os.path.join(SOURCE, "crd/examples/cpu/trainingjob.yaml")


def run(*args, input=None, ok=True):
    p = subprocess.run(args, input=input, capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p


def kubectl(*args, **kw):
    return run("kubectl", *args, **kw)


def kget(*args):
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def images():
    refs = {}
    with open(os.path.join(CACHE, "images", "images.env")) as f:
        for line in f:
            if "=" in line:
                k, v = line.strip().split("=", 1)
                refs[k] = f"{REGISTRY}/{v}"
    return refs


def new_namespace(prefix):
    ns = f"real-{prefix}-{int(time.time())}-{random.randrange(1000)}"
    kubectl("create", "namespace", ns)
    # The ServiceAccount admission plugin refuses pods until the namespace's default ServiceAccount exists.
    eventually(60, f"serviceaccount default in {ns}", lambda: kubectl("-n", ns, "get", "sa", "default", ok=False)
               .returncode == 0)
    return ns


@contextlib.contextmanager
def namespace(prefix):
    """A fresh namespace for one scenario: what it holds is printed when the scenario fails; deleted after."""
    ns = new_namespace(prefix)
    try:
        yield ns
    except (Failure, RuntimeError):
        dump(ns)
        raise
    finally:
        kubectl("delete", "namespace", ns, "--wait=false", ok=False)


def dump(ns):
    print(kubectl("-n", ns, "get", "tj,pods", "-o", "wide", ok=False).stdout)
    print(kubectl("-n", ns, "get", "events", "--sort-by=.lastTimestamp", ok=False).stdout[-4000:])
    for pod in kubectl("-n", ns, "get", "pods", "-o", "name", ok=False).stdout.split():
        print(f"--- logs {pod} ---")
        print(kubectl("-n", ns, "logs", pod, "--all-containers", "--tail=40", ok=False).stdout)
    op = kubectl("-n", OPERATOR_NS, "logs", f"deploy/{RELEASE}", "--tail=40", ok=False)
    print(f"--- operator ---\n{op.stdout}{op.stderr}")


# ---- the example job -----------------------------------------------------------------------------------------
def apply_example(ns, *extra_args, spec=None):
    """crd/examples/cpu/trainingjob.yaml as it is, with extra arguments appended to the training command (and
    spec fields replaced)."""
    with open(EXAMPLE) as f:
        job = yaml.safe_load(f)
    job["spec"]["template"]["spec"]["containers"][0]["command"] += list(extra_args)
    job["spec"].update(spec or {})
    kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(job))
    return job["metadata"]["name"]


def wait_phase(ns, name, phase, seconds):
    def reached():
        st = kget("-n", ns, "tj", name).get("status", {})
        if st.get("phase") in ("Succeeded", "Failed") and st.get("phase") != phase:
            raise Failure(f"tj/{name} ended {st.get('phase')}, expected {phase}: {st.get('conditions')}")
        return st if st.get("phase") == phase else None
    return eventually(seconds, f"tj/{name} {phase}", reached, interval=1)


def pod_uids(ns, name):
    return {p["metadata"]["name"]: p["metadata"]["uid"]
            for p in kget("-n", ns, "pods", "-l", f"kubedist.io/job-name={name}")["items"]}


def logs(ns, pod):
    return kubectl("-n", ns, "logs", pod, "-c", "trainer").stdout


def ranks_in(text):
    return sorted({int(m) for m in re.findall(r"^start: RANK=(\d+) ", text, re.M)})


# The pinned Kubernetes release (deploy/local/versions.sh), which the real nodes' kubelets run.
with open(os.path.join(os.environ["KUBEDIST_SOURCE_DIR"], "deploy", "local", "versions.sh")) as f:
    KUBERNETES_VERSION = re.search(r"^KUBERNETES_VERSION=(\S+)$", f.read(), re.M).group(1)


# ---- scenarios ---------------------------------------------------------------------------------------------
def scenario_nodes():
    nodes = kget("nodes")["items"]
    check(len(nodes) == 2, f"2 nodes ({[n['metadata']['name'] for n in nodes]})")
    for n in nodes:
        info = n["status"]["nodeInfo"]
        ready = [c["status"] for c in n["status"]["conditions"] if c["type"] == "Ready"]
        check(ready == ["True"] and info["containerRuntimeVersion"].startswith("containerd://2.")
              and info["kubeletVersion"] == KUBERNETES_VERSION,
              f"{n['metadata']['name']}: Ready, kubelet {info['kubeletVersion']}, {info['containerRuntimeVersion']}")
        check(n["status"]["allocatable"].get("nvidia.com/gpu") == "4",
              f"{n['metadata']['name']} advertises nvidia.com/gpu 4 (an extended resource in node status)")
    with namespace("nodes") as ns:
        image = images()["KUBEDIST_EXAMPLE_CPU_IMAGE"]
        for pod, gpus in (("one-gpu", 1), ("five-gpus", 5)):
            kubectl("-n", ns, "apply", "-f", "-", input=json.dumps({
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod},
                "spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": image, "command": ["python3", "-c", "print('ran on a real node')"],
                    "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}))
        eventually(300, "the 1-GPU pod Succeeded", lambda: kget("-n", ns, "pod", "one-gpu")["status"]
                   .get("phase") == "Succeeded")
        check("ran on a real node" in kubectl("-n", ns, "logs", "one-gpu").stdout,
              "a pod asking for nvidia.com/gpu 1 was scheduled, ran its container and its log is readable")
        unschedulable = eventually(60, "the 5-GPU pod Unschedulable", lambda: [
            c for c in kget("-n", ns, "pod", "five-gpus")["status"].get("conditions", [])
            if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"])
        check("nvidia.com/gpu" in unschedulable[0].get("message", ""),
              f"a pod asking for 5 GPUs stays Pending: {unschedulable[0].get('message')}")


def push_chart():
    """helm package of helm/kubedist, pushed to the cluster's registry as an OCI artifact: its oci:// reference and
    version. The package must carry the CRD and the dashboard themselves, not the links the chart holds them by."""
    chart = os.path.join(SOURCE, "helm/kubedist")
    with open(os.path.join(chart, "Chart.yaml")) as f:
        version = yaml.safe_load(f)["version"]
    registry = run(os.path.join(SOURCE, "deploy/local/cluster.sh"), "registry",
                   os.path.basename(CLUSTER_DIR)).stdout.strip()
    with tempfile.TemporaryDirectory() as out:
        run("helm", "package", chart, "--destination", out)
        package = os.path.join(out, f"kubedist-{version}.tgz")
        with tarfile.open(package) as tar:
            for inside, source in (("kubedist/crds/kubedist.io_trainingjobs.yaml", "crd/kubedist.io_trainingjobs.yaml"),
                                   ("kubedist/dashboards/kubedist.json", "deploy/dashboards/kubedist.json")):
                member = tar.getmember(inside)
                with open(os.path.join(SOURCE, source), "rb") as f:
                    check(member.isfile() and tar.extractfile(member).read() == f.read(),
                          f"helm package holds {source} itself as {inside}")
        pushed = run("helm", "push", package, f"oci://{registry}/charts", "--plain-http")
    check(f"{registry}/charts/kubedist:{version}" in pushed.stdout + pushed.stderr,
          f"helm push put the chart into the cluster's registry as oci://{registry}/charts/kubedist:{version}")
    return f"oci://{registry}/charts/kubedist", version


def scenario_chart():
    refs = images()
    op_repo, op_tag = refs["KUBEDIST_OPERATOR_IMAGE"].rsplit(":", 1)
    chart, version = push_chart()
    run("helm", "upgrade", "--install", RELEASE, chart, "--version", version, "--plain-http",
        "--namespace", OPERATOR_NS, "--create-namespace", "--wait", "--timeout", "240s",
        "--set", f"image.repository={op_repo}", "--set", f"image.tag={op_tag}",
        "--set", f"launcherImage={refs['KUBEDIST_LAUNCHER_IMAGE']}", "--set", "launcherPollInterval=2s")
    release = json.loads(run("helm", "list", "--namespace", OPERATOR_NS, "--filter", f"^{RELEASE}$",
                             "--output", "json").stdout)
    check([r.get("chart") for r in release] == [f"kubedist-{version}"],
          f"helm installed release {RELEASE} from {chart} ({[r.get('chart') for r in release]})")
    dep = kget("-n", OPERATOR_NS, "deployment", RELEASE)
    check(dep["status"].get("availableReplicas") == 2,
          "helm install --wait: the operator Deployment is available with its 2 replicas (leader and standby)")
    pods = kget("-n", OPERATOR_NS, "pods", "-l", "app.kubernetes.io/component=operator")["items"]
    pod = pods[0]
    name = pod["metadata"]["name"]
    spec, status = pod["spec"], pod["status"]
    c = spec["containers"][0]
    check(c["image"] == refs["KUBEDIST_OPERATOR_IMAGE"] and pod["spec"]["nodeName"].startswith("worker-"),
          f"the operator runs from {c['image']} on real node {spec['nodeName']}")
    sc, psc = c.get("securityContext", {}), spec.get("securityContext", {})
    check(psc.get("runAsNonRoot") is True and psc.get("runAsUser") == 65532 and sc.get("readOnlyRootFilesystem")
          is True and sc.get("allowPrivilegeEscalation") is False and sc.get("capabilities", {}).get("drop") == ["ALL"],
          "non-root (65532), read-only root filesystem, no privilege escalation, all capabilities dropped")
    cs = status["containerStatuses"][0]
    uid = cs.get("user", {}).get("linux", {}).get("uid")
    check(uid in (None, 65532), f"the kubelet reports the container's process user {uid}")
    check(cs["ready"] is True and cs["restartCount"] == 0 and c.get("livenessProbe") and c.get("readinessProbe"),
          "ready through its readiness probe (/readyz), liveness probe set, never restarted")
    mounts = [v for v in spec["volumes"] if v.get("projected")]
    check(spec["serviceAccountName"] == RELEASE and mounts,
          f"runs as ServiceAccount {RELEASE} with a projected token volume")
    lease = eventually(60, "the leader lease", lambda: kget("-n", OPERATOR_NS, "lease", RELEASE)["spec"]
                       .get("holderIdentity"))
    check(any(lease.startswith(p["metadata"]["name"]) for p in pods), f"an operator pod holds the leader lease ({lease})")
    sa = f"system:serviceaccount:{OPERATOR_NS}:{RELEASE}"
    for verb, what, want in (("create", "pods", "yes"), ("watch", "trainingjobs.kubedist.io", "yes"),
                             ("patch", "trainingjobs.kubedist.io --subresource=status", "yes"),
                             ("update", "trainingjobs.kubedist.io", "no"), ("update", "secrets", "no"),
                             ("delete", "nodes", "no"), ("create", "deployments.apps", "no")):
        got = kubectl("auth", "can-i", verb, *what.split(), "--all-namespaces", "--as", sa, ok=False).stdout.strip()
        check(got == want, f"its ServiceAccount may {verb} {what}: {got}")


def scenario_train():
    with namespace("train") as ns:
        name = apply_example(ns)
        st = wait_phase(ns, name, "Succeeded", 480)
        node0, node1 = logs(ns, f"{name}-node-0"), logs(ns, f"{name}-node-1")
        check(ranks_in(node0) == [0, 1] and ranks_in(node1) == [2, 3],
              f"kubectl logs shows ranks 0 and 1 on node 0 ({ranks_in(node0)}), 2 and 3 on node 1 ({ranks_in(node1)})")
        check(re.search(r"^training finished: .* world size 4", node0, re.M) is not None,
              "rank 0 logged the end of training with world size 4")
        check(st.get("restarts", 0) == 0 and not st.get("restartsByReason"), f"no restart ({st.get('restarts')})")
        master = f"{name}-node-0.{name}.{ns}.svc"
        check(f"MASTER_ADDR={master}" in node1, f"node 1's workers were given MASTER_ADDR={master}")
        pods = {p["metadata"]["name"]: p for p in kget("-n", ns, "pods", "-l", f"kubedist.io/job-name={name}")["items"]}
        ip0, ip1 = (pods[f"{name}-node-{i}"]["status"]["podIP"] for i in (0, 1))
        check(pods[f"{name}-node-0"]["spec"]["nodeName"] != pods[f"{name}-node-1"]["spec"]["nodeName"],
              "the two pods ran on different nodes")
        joined = re.search(r"^kubedist-launcher: joined the rendezvous at (\S+) \((\S+)\)", node1, re.M)
        check(joined is not None and joined.group(1) == f"{master}:29501" and joined.group(2) == ip0,
              f"node 1's launcher reached node 0's rendezvous by name, at node 0's pod IP {ip0} "
              f"({joined.group(0) if joined else 'no such line'})")
        with open(os.path.join(CLUSTER_DIR, "logs", "coredns.log"), errors="replace") as f:
            queries = [line for line in f if f'"A IN {master}.cluster.local.' in line and f"{ip1}:" in line]
        check(queries and "NOERROR" in queries[0],
              f"CoreDNS answered node 1's pod ({ip1}) for {master}.cluster.local: {queries[:1]}")


def scenario_crash():
    with namespace("crash") as ns:
        name = apply_example(ns, "--crash-once-at-step", "20")
        eventually(300, "both pods created", lambda: len(pod_uids(ns, name)) == 2)
        uids = pod_uids(ns, name)
        st = wait_phase(ns, name, "Succeeded", 480)
        node0 = logs(ns, f"{name}-node-0")
        check(re.search(r"^training finished: .* restarts 1", node0, re.M) is not None,
              "training finished on the second attempt (TORCHELASTIC_RESTART_COUNT=1)")
        check(pod_uids(ns, name) == uids, "no pod was recreated: the worker group restarted in place")
        by_reason = st.get("restartsByReason", {})
        check(st.get("restarts") == 1 and by_reason.get("worker_crash") == 1,
              f"status.restarts 1, restartsByReason worker_crash 1 ({st.get('restarts')}, {by_reason})")


def scenario_podloss():
    with namespace("podloss") as ns:
        name = apply_example(ns, "--epochs", "40")
        pod = f"{name}-node-1"
        eventually(300, "rank 0 has trained an epoch", lambda: "epoch 1/" in logs(ns, f"{name}-node-0"))
        before = pod_uids(ns, name)
        kubectl("-n", ns, "delete", "pod", pod, "--wait=false")
        eventually(120, f"{pod} recreated", lambda: pod_uids(ns, name).get(pod) not in (None, before[pod]))
        st = wait_phase(ns, name, "Succeeded", 600)
        after = pod_uids(ns, name)
        check(after[pod] != before[pod], f"{pod} was recreated (uid {before[pod][:8]} -> {after[pod][:8]})")
        check(st.get("restarts", 0) >= 1, f"the loss is counted in status.restarts ({st.get('restartsByReason')})")
        check("training finished" in logs(ns, f"{name}-node-0"), "the job trained to the end after the loss")


def scenario_fail():
    with namespace("fail") as ns:
        name = apply_example(ns, "--crash-once-at-step", "5", spec={"restartPolicy": "ExitCode"})
        st = wait_phase(ns, name, "Failed", 480)
        failed = [c for c in st.get("conditions", []) if c.get("type") == "Failed"]
        check(failed and failed[0].get("reason") == "PodFailed", f"the job failed for its pod ({failed})")
        lf = st.get("lastFailure") or {}
        # The first pod to end: node 0's launcher names its own worker ("rank 1 (local rank 1) on HOST exited with
        # code 3"), node 1's the job's reason as node 0 reported it ("node 0: rank 1 (local rank 1, pid P) exited
        # with code 3 at ..."). Either way the line is the launcher's, read from the pod's termination message.
        want = r"rank 1 \(local rank 1[,)].* exited with code 3"
        check(lf.get("pod") in (f"{name}-node-0", f"{name}-node-1") and lf.get("exitCode") == 3 and
              re.search(want, lf.get("message", "")) is not None,
              f"status.lastFailure names the failed worker from the launcher's termination message ({lf})")
        events = kget("-n", ns, "events", "--field-selector", f"involvedObject.name={name},reason=PodFailed")["items"]
        check(any(lf.get("message", "-") in e.get("message", "") for e in events),
              f"the PodFailed Event carries it too ({[e.get('message') for e in events]})")


if __name__ == "__main__":
    scenario = sys.argv[1] if len(sys.argv) > 1 else ""
    fn = globals().get(f"scenario_{scenario}")
    if not fn:
        sys.exit(f"usage: real_test.py nodes|chart|train|crash|podloss|fail (got {scenario!r})")
    try:
        fn()
    except (Failure, RuntimeError) as e:
        print(f"FAIL: {e}", flush=True)
        sys.exit(1)
    log(f"scenario {scenario} passed")
