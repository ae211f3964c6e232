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
  progress the example reports its steps (kubedist.progress) with spec.hangTimeout: status.progress fills and
           kubectl get tj shows PROGRESS and ETA while it trains; rank 1 stops in a receive at step 5 while the
           others wait for it in the step's all_reduce: the launchers catch it within hangTimeout + 5 s, the
           operator's next STATUS poll (the chart's launcherPollInterval, 2 s here) puts the stuck rank's stack in
           status.lastFailure and an Event HangDetected, restartsByReason.hang is 1, and the job Succeeds
  restricted  a namespace enforcing Pod Security "restricted": the example (which meets it, and so does the
           launcher init container the operator adds) runs to Succeeded; a template with privileged: true gets
           the condition PodsRefused (PodSecurity), one Warning Event, no Created claim and creates retried with
           backoff, counted in the API server's audit log; a ResourceQuota of 1 pod for the 2 replicas shows
           PodsRefused (ResourceQuota) within 30 s, and once the quota allows 2 the second pod is created
  torch2   the example's TrainingJob with the image changed to the torch 2.15 example (deploy/local/images.sh's
           kubedist/example-torch2, the pins of deploy/local/torch2-requirements.txt) and a hang injected at step 5
           under spec.hangTimeout: torch 2.15 workers in both pods (held to one real node: torch2_node), their
           progress reported through the helper, the hang caught at the reported step with rank 1's stack in
           status.lastFailure, restarted in place once, and Succeeded
  dcp      torch.distributed.checkpoint on torch 2.15 in two TrainingJobs of 2 pods x 2 processes whose storage is
           one folder of the node both jobs' pods run on (a hostPath; torch2_node): the first trains and saves
           (dcp.save), the second builds a fresh model and loads it (dcp.load): each rank of the second has the
           weights and step rank 0 saved, the ranks of pod 1 reading what pod 0's wrote
  powerloss  (faults, manual) the issue's node power loss: an elastic job (replicas 2, minReplicas 1) trains, and
           every process of the node running node 1's pod is killed at once and its link cut (cluster.sh
           node-power-loss): node 0's launchers re-form at world size 2 and train to the end, the job Succeeds
           (GroupFinished) without node 1's pod being recreated, and the operator, whichever of its 2 replicas
           was on the dead node, keeps reconciling; prints the times from the fault to the workers restarted, to
           training resumed (the first epoch after) and to Succeeded; the node is restarted afterwards
  powerloss_rigid  (faults, manual) the same fault under a rigid job (replicas 2): the job waits, Restarting, with
           node 1's pod deleted but not forced (its node may only be cut off); once the node comes back its pod is
           replaced, the group re-forms at world size 4 and the job Succeeds; prints the times
  powerloss_spare  (faults, manual; three real nodes, KUBEDIST_REAL_NODES=3) the same fault under a rigid job with a
           spare (replicas 2, spares 1, one pod per node required): the spare takes node 1's place at once, the
           group re-forms at world size 4 without waiting for the node, a new spare is made, the job Succeeds with
           one node_lost; prints the times from the launchers noticing the loss to the group re-formed
  drain_spare  (faults, manual; three real nodes) kubectl drain of node 1's node (the job's pods only) under a
           rigid job with a spare (replicas 2, spares 1, one pod per node required): the spare takes node 1's
           place (by the operator's notice of the cordon, or node 1's launcher leaving on SIGTERM), node 1's pod
           is not made again, a new spare is, one node_lost, Succeeded; prints the times from the drain
  drain_rigid  (faults, manual; three real nodes) the same drain without a spare: node 1's pod is made again on
           the third node; prints the same times, for the comparison
  netcut   (faults, manual) node 1's node loses its link to the network for 20 s (cluster.sh node-link) while a rigid
           job trains, less than the controller-manager's 60 s before NotReady: the launchers notice, the group
           re-forms at world size 4 once the link is back, no pod is recreated, and the job Succeeds; prints the
           times from the cut to the group stopping and from the heal to training resumed
  upgrade  (faults, manual) helm upgrade of the operator to a new image tag with changed values while a job
           trains: the operator's pods are replaced, the training pods are not (same uids, no container restart),
           the job Succeeds with no restart counted and its status carries on (progress kept, observedGeneration)
"""
import calendar
import contextlib
import json
import os
import random
import re
import shutil
import sys
import tarfile
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import expect  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lib"))
from kube import kubectl, run  # noqa: E402,F401 - plugin_test.py reads them from here too
from expect import Failure, check, eventually, log  # noqa: E402

expect.log.tag = "real"

SOURCE = os.environ["KUBEDIST_SOURCE_DIR"]
CACHE = os.environ["KUBEDIST_CACHE"]
CLUSTER_DIR = os.environ["KUBEDIST_CLUSTER_DIR"]
REGISTRY = "10.250.0.1:5000"  # the registry as the nodes see it (deploy/local/nodes.sh)
RELEASE, OPERATOR_NS = "kubedist", "kubedist-system"
EXAMPLE = os.path.join(SOURCE, "crd/examples/cpu/trainingjob.yaml")


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
    eventually(60, f"serviceaccount default in {ns}", lambda: kubectl("-n", ns, "get", "sa", "default", check=False)
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
        kubectl("delete", "namespace", ns, "--wait=false", check=False)


def dump(ns):
    print(kubectl("-n", ns, "get", "tj,pods", "-o", "wide", check=False).stdout)
    print(kubectl("-n", ns, "get", "events", "--sort-by=.lastTimestamp", check=False).stdout[-4000:])
    for pod in kubectl("-n", ns, "get", "pods", "-o", "name", check=False).stdout.split():
        print(f"--- logs {pod} ---")
        print(kubectl("-n", ns, "logs", pod, "--all-containers", "--tail=40", check=False).stdout)
    op = kubectl("-n", OPERATOR_NS, "logs", f"deploy/{RELEASE}", "--tail=40", check=False)
    print(f"--- operator ---\n{op.stdout}{op.stderr}")
    # Every operator pod (a rollout that stalls shows why: a pod Pending, not Ready, crashing) and their events.
    print(kubectl("-n", OPERATOR_NS, "get", "pods", "-o", "wide", check=False).stdout)
    print(kubectl("-n", OPERATOR_NS, "get", "events", "--sort-by=.lastTimestamp", check=False).stdout[-3000:])
    for pod in kubectl("-n", OPERATOR_NS, "get", "pods", "-o", "name", check=False).stdout.split():
        out = kubectl("-n", OPERATOR_NS, "logs", pod, "--tail=15", check=False)
        print(f"--- logs {OPERATOR_NS}/{pod} ---\n{out.stdout}{out.stderr}")


# ---- the example job -----------------------------------------------------------------------------------------
def apply_example(ns, *extra_args, spec=None, name=None, container_security=None, image=None, node=None):
    """crd/examples/cpu/trainingjob.yaml as it is, with extra arguments appended to the training command (and
    spec fields replaced, the job renamed, the trainer's securityContext or image replaced, its pods held to one
    node)."""
    with open(EXAMPLE) as f:
        job = yaml.safe_load(f)
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["command"] += list(extra_args)
    if image:
        container["image"] = image
    if container_security is not None:
        container["securityContext"] = container_security
    if node:
        job["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    job["spec"].update(spec or {})
    if name:
        job["metadata"]["name"] = name
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


def events(ns, name, reason):
    return kget("-n", ns, "events", "--field-selector", f"involvedObject.name={name},reason={reason}")["items"]


def rfc3339(text):
    """Seconds since the epoch of an RFC 3339 UTC time, with or without fractions of a second."""
    whole, _, frac = text.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + (float(f"0.{frac}") if frac else 0.0)


def condition(st, kind):
    return next((c for c in st.get("conditions", []) if c.get("type") == kind), {})


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
        got = kubectl("auth", "can-i", verb, *what.split(), "--all-namespaces", "--as", sa, check=False).stdout.strip()
        check(got == want, f"its ServiceAccount may {verb} {what}: {got}")


def scenario_train():
    with namespace("train") as ns:
        # By host name, each node is a domain of its own: the launchers learn theirs from the operator's annotation,
        # projected into their file by the kubelet (issue 40), and node 0's domain comes first.
        name = apply_example(ns, spec={"placement": {"topologyKey": "kubernetes.io/hostname"}})
        st = wait_phase(ns, name, "Succeeded", 480)
        node0, node1 = logs(ns, f"{name}-node-0"), logs(ns, f"{name}-node-1")
        check(ranks_in(node0) == [0, 1] and ranks_in(node1) == [2, 3],
              f"kubectl logs shows ranks 0 and 1 on node 0 ({ranks_in(node0)}), 2 and 3 on node 1 ({ranks_in(node1)})")
        check(re.search(r"^training finished: .* world size 4", node0, re.M) is not None,
              "rank 0 logged the end of training with world size 4")
        check(st.get("restarts", 0) == 0 and not st.get("restartsByReason"), f"no restart ({st.get('restarts')})")
        p = st.get("progress", {})
        check(p.get("summary") == "100% (80/80)" and p.get("step") == p.get("totalSteps") == 80,
              f"the Succeeded job shows where it ended, 100% (80/80), from node 0's last STATUS ({p})")
        master = f"{name}-node-0.{name}.{ns}.svc"
        check(f"MASTER_ADDR={master}" in node1, f"node 1's workers were given MASTER_ADDR={master}")
        pods = {p["metadata"]["name"]: p for p in kget("-n", ns, "pods", "-l", f"kubedist.io/job-name={name}")["items"]}
        ip0, ip1 = (pods[f"{name}-node-{i}"]["status"]["podIP"] for i in (0, 1))
        check(pods[f"{name}-node-0"]["spec"]["nodeName"] != pods[f"{name}-node-1"]["spec"]["nodeName"],
              "the two pods ran on different nodes")
        for i, text in ((0, node0), (1, node1)):
            pod = pods[f"{name}-node-{i}"]
            host = pod["spec"]["nodeName"]
            annotation = pod["metadata"].get("annotations", {}).get("kubedist.io/topology-domain")
            said = re.search(r"^kubedist-launcher: this node's topology domain is (\S+)", text, re.M)
            check(annotation == host and said is not None and said.group(1) == host,
                  f"node {i}'s pod is annotated with its node's host name {host} ({annotation}) and its launcher read "
                  f"it from the file the kubelet projected ({said.group(0) if said else 'no such line'})")
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


def scenario_progress():
    hang_timeout, poll = 15, 2  # poll: the chart's launcherPollInterval as scenario_chart installs it
    with namespace("progress") as ns:
        # 500 epochs of 16 steps: well over a minute of training after the hang (11 ms a step on an idle 2-core
        # machine, 35 ms on a loaded one; 150 epochs once took only 26 s), longer than the operator holds back a
        # write of progress alone (30 s), so that one comes while it trains.
        epochs = 500
        name = apply_example(ns, "--epochs", str(epochs), "--hang-once-at-step", "5",
                             spec={"hangTimeout": f"{hang_timeout}s"})
        node0 = f"{name}-node-0"
        # Rank 1 (node 0's second worker) stops at step 5 of the first attempt; the others wait in the all_reduce.
        st = wait_restarts(ns, name, "hang", 1, 300)
        detected_seen = time.time()
        stamped = kubectl("-n", ns, "logs", node0, "-c", "trainer", "--timestamps").stdout
        hung = re.search(r"^(\S+) rank 1: injected hang at step 5:", stamped, re.M)
        check(hung is not None, "rank 1 logged the hang it injected at step 5")
        last_step = rfc3339(hung.group(1))  # right after its 5th step was reported (the kubelet's log timestamp)
        failure = st.get("lastFailure", {})
        check(failure.get("reason") == "Hang" and failure.get("pod") == node0 and failure.get("node", "")
              .startswith("worker-"), f"status.lastFailure names the hang, the stuck rank's pod and node ({failure})")
        # The step is the last one the launcher heard of: the helper reports at most every 0.1 s, and its own
        # thread sends the step the interval held back, so the launcher hears of rank 1's 5th also while it hangs.
        stuck = re.search(rf": rank 1 on {node0} stuck \d+ s at step (\d+) in recv \(train\.py:\d+\) \[recv "
                          r"\S+:\d+ < (.* < )?main train\.py:\d+", failure.get("message", ""))
        check(stuck is not None and int(stuck.group(1)) == 5,
              f"status.lastFailure names rank 1 first, stuck in recv, with its stack ({failure.get('message')})")
        detected = rfc3339(failure["time"])
        check(detected - last_step < hang_timeout + 5,
              f"the launchers caught it {detected - last_step:.1f} s after rank 1's last step (hangTimeout "
              f"{hang_timeout} s + 5)")
        hang_events = events(ns, name, "HangDetected")
        check(len(hang_events) == 1 and hang_events[0]["type"] == "Warning" and "in recv (train.py:" in
              hang_events[0]["message"], f"one Warning Event HangDetected names where rank 1 is stuck "
              f"({[e['message'][:200] for e in hang_events]})")
        seen = rfc3339(hang_events[0]["firstTimestamp"])
        check(seen - last_step < hang_timeout + 5 + poll + 1,
              f"the operator recorded it {seen - last_step:.1f} s after the last step, {detected_seen - last_step:.1f}"
              f" s by the time this test saw the status (hangTimeout {hang_timeout} s + 5 + the {poll} s STATUS "
              f"poll, + 1 for the Event's whole seconds)")

        # The second attempt trains: status.progress and kubectl get tj follow it.
        def training():
            st = kget("-n", ns, "tj", name).get("status", {})
            p = st.get("progress", {})
            if st.get("phase") != "Running" or p.get("step", 0) <= 5 or not p.get("estimatedCompletionTime"):
                return None
            return st, kubectl("-n", ns, "get", "tj", name).stdout
        st, table = eventually(120, "status.progress of the second attempt with a rate and an ETA", training, 1)
        p = st["progress"]
        log(f"kubectl get tj while it trains:\n{table}")
        total = epochs * 16  # 2048 samples over 4 ranks in batches of 32: 16 steps an epoch
        check(p.get("totalSteps") == total and 0 < p["step"] < total and p.get("percent") == p["step"] * 100 // total
              and p.get("stepsPerSecond", 0) > 0 and rfc3339(p["estimatedCompletionTime"]) > time.time() - 5
              and "loss" in p.get("metrics", {}) and p.get("summary") == f"{p['percent']}% ({p['step']}/{total})",
              f"status.progress: step, totalSteps, percent, stepsPerSecond, estimatedCompletionTime, loss ({p})")
        header, row = table.splitlines()[0].split(), table.splitlines()[1].split()
        check(header[5:7] == ["PROGRESS", "ETA"] and row[5:8] == p["summary"].split() + [p[
            "estimatedCompletionTime"]], "kubectl get tj shows them under PROGRESS and ETA")
        st = wait_phase(ns, name, "Succeeded", 600)
        check(st.get("restarts") == 1 and st.get("restartsByReason") == {"hang": 1},
              f"one restart, for the hang ({st.get('restarts')}, {st.get('restartsByReason')})")
        stamped = kubectl("-n", ns, "logs", node0, "-c", "trainer", "--timestamps").stdout
        finished = re.search(r"^(\S+) training finished: .* restarts 1", stamped, re.M)
        check(finished is not None, "training resumed in place (TORCHELASTIC_RESTART_COUNT=1) and finished")
        # The finished job shows node 0's last report (polled every 2 s, in whole seconds), not the last write of
        # progress alone, which may be 30 s old.
        p = st.get("progress", {})
        lag = rfc3339(finished.group(1)) - rfc3339(p.get("lastStepTime", "1970-01-01T00:00:00Z"))
        check(lag <= poll + 2 and not p.get("estimatedCompletionTime"),
              f"status.progress of the finished job: its last step {lag:.1f} s before rank 0 finished, no ETA ({p})")


def torch2_pin():
    """The torch the torch 2.15 example image pins (deploy/local/torch2-requirements.txt)."""
    with open(os.path.join(SOURCE, "deploy/local/torch2-requirements.txt")) as f:
        return re.search(r"^torch==(\S+)", f.read(), re.M).group(1)


def torch2_node():
    """The one real node that runs the torch 2.15 image's pods (the first by name): its 5 GB unpacked is kept by
    that node alone, not by every node, which a cold CI run's disk cannot spare."""
    return sorted(n["metadata"]["name"] for n in kget("nodes")["items"])[0]


def scenario_torch2():
    version = torch2_pin()
    with namespace("torch2") as ns:
        name = apply_example(ns, "--epochs", "3", "--hang-once-at-step", "5", spec={"hangTimeout": "15s"},
                             image=images()["KUBEDIST_EXAMPLE_TORCH2_IMAGE"], node=torch2_node())
        st = wait_phase(ns, name, "Succeeded", 900)
        node0, node1 = logs(ns, f"{name}-node-0"), logs(ns, f"{name}-node-1")
        check(ranks_in(node0) == [0, 1] and ranks_in(node1) == [2, 3],
              f"ranks 0 and 1 on node 0 ({ranks_in(node0)}), 2 and 3 on node 1 ({ranks_in(node1)})")
        check(re.search(rf"^training finished: 3 epochs, .* world size 4, .*restarts 1, torch {re.escape(version)}$",
                        node0, re.M) is not None, f"rank 0 finished on torch {version} after one restart")
        check(st.get("restartsByReason") == {"hang": 1}, f"one restart, for the hang ({st.get('restartsByReason')})")
        failure = st.get("lastFailure", {})
        check(failure.get("reason") == "Hang" and re.search(r"rank 1 on \S+ stuck \d+ s at step 5 in recv \(train\.py:",
                                                              failure.get("message", "")) is not None,
              f"status.lastFailure has rank 1's stack under torch {version}, stuck in recv at the step its "
              f"progress reports named ({failure})")


def scenario_ckpt():
    """Just in time (issue 37 item 2): the CPU example with spec.checkpoint, suspended mid-training. Its pods get
    SIGTERM within the grace period the operator lengthened for it, every rank saves the step it just did before
    its workers stop, and once unsuspended the job resumes from that step: 0 steps lost."""
    with namespace("ckpt") as ns, tempfile.TemporaryDirectory(dir=CLUSTER_DIR, prefix="ckpt-") as shared:
        # The volume an administrator would give the job (ReadWriteMany: both nodes' pods write it): a static
        # PersistentVolume on a folder both real nodes see (they share this machine's file system).
        os.chmod(shared, 0o777)
        pv = f"{ns}-ckpt"
        kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"], "storageClassName": "",
                     "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": shared, "type": "Directory"},
                     "claimRef": {"namespace": ns, "name": "ckpt"}}}))
        try:
            kubectl("-n", ns, "apply", "-f", "-", input=json.dumps({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "ckpt"},
                "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": pv,
                         "resources": {"requests": {"storage": "1Gi"}}}}))
            name = apply_example(ns, "--epochs", "8", "--step-time", "0.2", "--log-steps",  # 128 steps, 26 s
                                 spec={"checkpoint": {"claimName": "ckpt", "everySteps": 1000}})
            # Rank 0's log, not status.progress (written at most every 30 s, by when the job could have ended).
            eventually(300, f"tj/{name} past step 8", lambda: re.search(r"^step 8$", logs(ns, f"{name}-node-0"), re.M),
                       interval=0.5)
            grace = kget("-n", ns, "pod", f"{name}-node-1")["spec"].get("terminationGracePeriodSeconds")
            check(grace == 95, f"the pods' grace period is the template's 30 s and the checkpoint's 65 ({grace})")
            kubectl("-n", ns, "patch", "tj", name, "--type=merge", "-p", '{"spec": {"suspend": true}}')
            wait_phase(ns, name, "Suspended", 180)
            eventually(180, f"tj/{name}'s pods gone", lambda: not pod_uids(ns, name))
            done = sorted(d for d in os.listdir(shared) if os.path.exists(os.path.join(shared, d, "COMPLETE")))
            check(len(done) == 1, f"one complete checkpoint, the one taken on SIGTERM ({done})")
            with open(os.path.join(shared, done[0], "COMPLETE")) as f:
                record = json.load(f)
            at = record["step"]
            check(record["reason"] == "termination" and record["ranks"] == 4 and at >= 8,
                  f"saved by the 4 ranks as their pods stopped, past step 8 ({record})")
            kubectl("-n", ns, "patch", "tj", name, "--type=merge", "-p", '{"spec": {"suspend": false}}')
            wait_phase(ns, name, "Succeeded", 600)
            node0 = logs(ns, f"{name}-node-0")
            check(f"kubedist: checkpoint: resumed from step {at} " in node0, f"resumed from step {at}")
            steps = [int(n) for n in re.findall(r"^step (\d+)$", node0, re.M)]
            check(steps and steps[0] == at + 1, f"the first step done again is step {at + 1}: 0 steps lost "
                                                f"({steps[:3]})")
            log(f"suspended at step {at} (checkpoint on SIGTERM), resumed at step {steps[0]}")
        finally:
            kubectl("delete", "pv", pv, "--wait=false", check=False)


def scenario_dcp():
    with namespace("dcp") as ns, tempfile.TemporaryDirectory(dir=CLUSTER_DIR, prefix="dcp-") as shared:
        # The shared storage an administrator would give the jobs (an NFS export, a ReadWriteMany volume): here a
        # folder of the one node both jobs' pods run on, writable by the example's user.
        for sub in ("", "checkpoint", "out"):
            os.makedirs(os.path.join(shared, sub), exist_ok=True)
            os.chmod(os.path.join(shared, sub), 0o777)
        shutil.copy(os.path.join(SOURCE, "tests/integration/launcher/workers/dcp_train.py"), shared)
        os.chmod(os.path.join(shared, "dcp_train.py"), 0o644)
        with open(EXAMPLE) as f:
            job = yaml.safe_load(f)
        pod = job["spec"]["template"]["spec"]
        pod["nodeSelector"] = {"kubernetes.io/hostname": torch2_node()}
        pod["volumes"] = [{"name": "shared", "hostPath": {"path": shared, "type": "Directory"}}]
        container = pod["containers"][0]
        container["image"] = images()["KUBEDIST_EXAMPLE_TORCH2_IMAGE"]
        container["volumeMounts"] = [{"name": "shared", "mountPath": "/shared"}]
        for phase in ("save", "load"):
            job["metadata"]["name"] = f"dcp-{phase}"
            container["command"] = ["python3", "/shared/dcp_train.py", phase, "/shared/checkpoint", "/shared/out"]
            kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(job))
            st = wait_phase(ns, f"dcp-{phase}", "Succeeded", 600)
            check(st.get("restarts", 0) == 0, f"dcp-{phase} Succeeded without a restart ({st.get('restarts')})")
        check(os.path.exists(os.path.join(shared, "checkpoint", ".metadata")),
              f"dcp.save wrote the checkpoint's metadata ({sorted(os.listdir(os.path.join(shared, 'checkpoint')))})")
        ranks = {}
        for name in sorted(os.listdir(os.path.join(shared, "out"))):
            with open(os.path.join(shared, "out", name)) as f:
                ranks[name.removesuffix(".json")] = json.load(f)
        check(sorted(ranks) == [f"{p}-rank{r}" for p in ("load", "save") for r in range(4)],
              f"each of 4 ranks wrote what it saved and what it loaded ({sorted(ranks)})")
        saved = ranks["save-rank0"]
        for rank in range(4):
            loaded = ranks[f"load-rank{rank}"]
            check(loaded["step"] == saved["step"] == 3 and loaded["weights"] == saved["weights"]
                  and loaded["initial"] != saved["weights"],
                  f"rank {rank} of the second job started fresh and loaded rank 0's weights and step 3 "
                  f"(step {loaded['step']}, same weights: {loaded['weights'] == saved['weights']})")


def wait_restarts(ns, name, reason, count, seconds):
    def counted():
        st = kget("-n", ns, "tj", name).get("status", {})
        if st.get("phase") in ("Succeeded", "Failed"):
            raise Failure(f"tj/{name} ended {st.get('phase')} before {count} {reason} restart(s): {st}")
        return st if st.get("restartsByReason", {}).get(reason, 0) >= count else None
    return eventually(seconds, f"tj/{name} restartsByReason.{reason} {count}", counted, interval=1)


def refused_creates(ns):
    """(time, code) of each pod create the chart's operator sent for namespace ns and the API server refused,
    from the API server's audit log (which records every request of kubedist-system's ServiceAccounts)."""
    refused = []
    with open(os.path.join(CLUSTER_DIR, "logs", "audit.log"), errors="replace") as f:
        for line in f:
            if f'"{ns}"' not in line or '"create"' not in line:
                continue
            e = json.loads(line)
            ref, code = e.get("objectRef", {}), e.get("responseStatus", {}).get("code", 0)
            if (e.get("verb") == "create" and ref.get("resource") == "pods" and ref.get("namespace") == ns and
                    e.get("user", {}).get("username") == f"system:serviceaccount:{OPERATOR_NS}:{RELEASE}" and
                    code >= 400):
                refused.append((rfc3339(e["stageTimestamp"]), code))
    return refused


def scenario_restricted():
    with namespace("restricted") as ns, namespace("quota") as qns:
        for n in (ns, qns):
            kubectl("label", "namespace", n, "pod-security.kubernetes.io/enforce=restricted")
        good = apply_example(ns, name="good")
        priv = apply_example(ns, name="priv", container_security={"privileged": True})

        def refused(namespace_, name, reason):
            c = condition(kget("-n", namespace_, "tj", name).get("status", {}), "PodsRefused")
            return c if (c.get("status"), c.get("reason")) == ("True", reason) else None
        c = eventually(30, "priv: PodsRefused/PodSecurity", lambda: refused(ns, priv, "PodSecurity"), 1)
        t0 = time.time()
        check(re.search(r'violates PodSecurity "restricted.*privileged', c.get("message", "")) is not None,
              f"priv: PodsRefused True, PodSecurity: {c.get('message', '')[:200]}")

        # The quota: node 0 is admitted, node 1 refused.
        kubectl("-n", qns, "create", "quota", "one", "--hard=pods=1")
        eventually(30, "the quota controller has counted quota one", lambda: kget(
            "-n", qns, "quota", "one").get("status", {}).get("hard", {}).get("pods") == "1")
        quota = apply_example(qns, name="quota")
        q0 = time.time()
        c = eventually(30, "quota: PodsRefused/ResourceQuota", lambda: refused(qns, quota, "ResourceQuota"), 0.5)
        check("exceeded quota" in c.get("message", ""),
              f"quota: PodsRefused ResourceQuota within {time.time() - q0:.0f} s: {c.get('message', '')[:200]}")
        check(sorted(pod_uids(qns, quota)) == [f"{quota}-node-0"], f"quota: node 0 only ({sorted(pod_uids(qns, quota))})")
        check(len(events(qns, quota, "PodsRefused")) == 1 and events(qns, quota, "PodsRefused")[0]["type"] == "Warning",
              "quota: one Warning Event PodsRefused")
        kubectl("-n", qns, "patch", "quota", "one", "--type=merge", "-p", '{"spec":{"hard":{"pods":"2"}}}')
        q0 = time.time()
        eventually(90, "quota: node 1 created once the quota allows it", lambda: len(pod_uids(qns, quota)) == 2, 1)
        eventually(30, "quota: PodsRefused cleared", lambda: (lambda c: c.get("status") == "False")(condition(
            kget("-n", qns, "tj", quota).get("status", {}), "PodsRefused")), 1)
        log(f"ok: quota: node 1 created {time.time() - q0:.0f} s after the quota allowed it; PodsRefused False")

        # The compliant example trains to the end under restricted, beside the refused one.
        st = wait_phase(ns, good, "Succeeded", 480)
        pods = kget("-n", ns, "pods", "-l", f"kubedist.io/job-name={good}")["items"]
        check(len(pods) == 2 and all(p["spec"]["initContainers"][0]["securityContext"].get("allowPrivilegeEscalation")
                                     is False for p in pods),
              "good: both pods admitted under restricted, the launcher init container included")
        check(re.search(r"^training finished: .* world size 4", logs(ns, f"{good}-node-0"), re.M) is not None and
              not st.get("restartsByReason"), "good: trained to the end with world size 4 and no restart")

        # The refused job, meanwhile: no pod, no Created claim, not failed, one Event, creates with backoff.
        eventually(30, "a window of 20 s since priv's condition", lambda: time.time() - t0 >= 20, 1)
        st = kget("-n", ns, "tj", priv).get("status", {})
        check(not pod_uids(ns, priv), "priv: no pod exists")
        created = condition(st, "Created")
        check((created.get("status"), created.get("reason")) != ("True", "PodsCreated") and st.get("phase") != "Failed",
              f"priv: no Created claim and not failed for the namespace's rules ({created}, {st.get('phase')})")
        ev = events(ns, priv, "PodsRefused")
        check(len(ev) == 1 and ev[0]["type"] == "Warning" and ev[0].get("count", 1) == 1,
              f"priv: one Warning Event PodsRefused ({[(e['type'], e.get('count')) for e in ev]})")
        tries = refused_creates(ns)
        span = tries[-1][0] - tries[0][0] if tries else 0
        gaps = [round(b[0] - a[0]) for a, b in zip(tries, tries[1:])]
        # Backoff 5 s doubling: 2 creates in the first 5 s, one per window after; a storm would be thousands.
        check(tries and all(code == 403 for _, code in tries) and len(tries) <= 3 + span / 5,
              f"priv: {len(tries)} refused pod creates (403) in {span:.0f} s, gaps {gaps} s (audit log)")
        check(all(b >= a - 1 for a, b in zip(gaps, gaps[1:])), f"priv: the gaps between creates grow ({gaps})")


# ---- faults on real nodes (issue 28) ---------------------------------------------------------------------
def cluster_sh(*args):
    return run(os.path.join(SOURCE, "deploy/local/cluster.sh"), args[0], os.path.basename(CLUSTER_DIR), *args[1:])


def stamped_lines(ns, pod, pattern, after=0.0):
    """(time, line) of the trainer's log lines matching pattern, by the kubelet's timestamps, later than after."""
    out = kubectl("-n", ns, "logs", pod, "-c", "trainer", "--timestamps", check=False).stdout
    found = []
    for line in out.splitlines():
        stamp, _, text = line.partition(" ")
        if re.search(pattern, text):
            t = rfc3339(stamp)
            if t > after:
                found.append((t, text))
    return found


def leader_node():
    holder = kget("-n", OPERATOR_NS, "lease", RELEASE)["spec"].get("holderIdentity", "")
    for pod in kget("-n", OPERATOR_NS, "pods", "-l", "app.kubernetes.io/component=operator")["items"]:
        if holder.startswith(pod["metadata"]["name"]):
            return pod["spec"].get("nodeName", "")
    return ""


@contextlib.contextmanager
def power_lost(node):
    """worker-I (node) loses its power; it is started again on the way out, whatever happened."""
    index = int(node.rsplit("-", 1)[1])
    t = time.time()
    cluster_sh("node-power-loss", str(index))
    try:
        yield t
    finally:
        cluster_sh("node-restart", str(index))  # it returns once the node is Ready and advertises its GPUs


def lost_node_of(ns, name):
    """Once both pods train on different nodes: the node of node 1's pod (the one to lose) and the leader's."""
    eventually(300, "rank 0 has trained an epoch", lambda: "epoch 1/" in logs(ns, f"{name}-node-0"), 1)
    pods = {p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in kget("-n", ns, "pods", "-l", f"kubedist.io/job-name={name}")["items"]}
    check(pods[f"{name}-node-0"] != pods[f"{name}-node-1"], f"the two pods train on different nodes ({pods})")
    return pods[f"{name}-node-1"]


def scenario_powerloss():
    epochs = 120
    with namespace("powerloss") as ns:
        name = apply_example(ns, "--epochs", str(epochs), spec={"replicas": 2, "minReplicas": 1, "maxReplicas": 2})
        lost = lost_node_of(ns, name)
        leader = leader_node()
        node1 = pod_uids(ns, name)[f"{name}-node-1"]
        with power_lost(lost) as fault:
            log(f"injected: {lost} (node 1's pod; the operator's leader on {leader}) lost its power")
            pod0 = f"{name}-node-0"
            restarted = eventually(120, "node 0's workers restarted at world size 2", lambda: stamped_lines(
                ns, pod0, r"^start: RANK=0 .*WORLD_SIZE=2 ", fault), 1)[0][0]
            resumed = eventually(120, "an epoch trained at world size 2", lambda: stamped_lines(
                ns, pod0, r"^epoch \d+/", restarted), 1)[0][0]
            st = wait_phase(ns, name, "Succeeded", 900)
            done = rfc3339(condition(st, "Succeeded").get("lastTransitionTime") or st["completionTime"])
            finished = stamped_lines(ns, pod0, r"^training finished: ")
            check(finished and "world size 2" in finished[-1][1],
                  f"node 0 trained all {epochs} epochs at world size 2 ({finished[-1][1] if finished else 'no end'})")
            check(condition(st, "Succeeded").get("reason") in ("GroupFinished", "AllNodesSucceeded"),
                  f"the job Succeeded as node 0 finished ({condition(st, 'Succeeded').get('reason')})")
            check(pod_uids(ns, name).get(f"{name}-node-1") in (None, node1),
                  "node 1's pod was not recreated for a group that was finishing without it")
            by_reason = st.get("restartsByReason", {})
            check(by_reason.get("pod_failure", 0) == 0,
                  f"no pod failure counted for a lost node ({by_reason})")
            print(f"FIGURES powerloss: workers restarted {restarted - fault:.1f} s after the fault, training resumed "
                  f"(first epoch at world size 2) {resumed - fault:.1f} s, job Succeeded {done - fault:.1f} s; "
                  f"restartsByReason {by_reason}; the operator's leader was on "
                  f"{'the lost node' if leader == lost else 'the other node'}", flush=True)
        eventually(120, "the operator's 2 replicas available again", lambda: kget(
            "-n", OPERATOR_NS, "deployment", RELEASE)["status"].get("availableReplicas") == 2, 2)


def scenario_powerloss_rigid():
    epochs = 60
    with namespace("powerrigid") as ns:
        name = apply_example(ns, "--epochs", str(epochs))
        lost = lost_node_of(ns, name)
        node1 = pod_uids(ns, name)[f"{name}-node-1"]
        with power_lost(lost) as fault:
            log(f"injected: {lost} (node 1's pod) lost its power")
            # The node goes NotReady (the controller-manager's 60 s), its pod is deleted without force after the
            # operator's node-lost grace (60 s): nothing confirms it, so no replacement may share its hostname.
            eventually(240, "node 1's pod being deleted", lambda: kget("-n", ns, "pod", f"{name}-node-1")
                       ["metadata"].get("deletionTimestamp"), 2)
            st = kget("-n", ns, "tj", name)["status"]
            check(st.get("phase") == "Restarting" and pod_uids(ns, name).get(f"{name}-node-1") == node1,
                  f"the rigid job waits, {st.get('phase')}, its lost pod deleted without force and not replaced")
            back = time.time()
        replaced = eventually(300, "node 1's pod replaced", lambda: pod_uids(ns, name).get(f"{name}-node-1")
                              not in (None, node1), 2)
        restarted = eventually(300, "the group re-formed at world size 4", lambda: stamped_lines(
            ns, f"{name}-node-0", r"^start: RANK=0 .*WORLD_SIZE=4 .*restart=[1-9]", fault), 2)[0][0]
        st = wait_phase(ns, name, "Succeeded", 900)
        by_reason = st.get("restartsByReason", {})
        # The launchers report the loss at once (15 s), the operator sees the pod lost minutes later: one loss.
        check(replaced and by_reason.get("node_lost", 0) == 1 and by_reason.get("pod_failure", 0) == 0,
              f"the one loss is counted once, as node_lost ({by_reason})")
        print(f"FIGURES powerloss_rigid: node 1's pod deleted (not forced) and waited for while the node was down; "
              f"the node back {back - fault:.0f} s after the fault (the test's choice); the group re-formed at world "
              f"size 4 {restarted - fault:.1f} s after the fault ({restarted - back:.1f} s after the node's restart "
              f"began); restartsByReason {st.get('restartsByReason')}", flush=True)


def scenario_powerloss_spare():
    epochs = 60
    nodes = kget("nodes")["items"]  # real nodes only in the real cluster
    check(len(nodes) >= 3, f"three real nodes for two pods and a spare, one per node ({len(nodes)}: bring the "
                           f"cluster up with KUBEDIST_REAL_NODES=3)")
    with namespace("powerspare") as ns:
        name = apply_example(ns, "--epochs", str(epochs),
                             spec={"replicas": 2, "spares": 1, "placement": {"onePodPerNode": "Required"}})
        lost = lost_node_of(ns, name)
        eventually(300, "the spare waiting in the rendezvous", lambda: kget("-n", ns, "tj", name)["status"]
                   .get("sparesReady") == 1, 1)
        placed = {p["metadata"]["name"]: p["spec"]["nodeName"]
                  for p in kget("-n", ns, "pods", "-l", f"kubedist.io/job-name={name}")["items"]}
        check(len(set(placed.values())) == 3, f"the two pods and the spare on three nodes ({placed})")
        pod0, spare = f"{name}-node-0", f"{name}-spare-0"
        with power_lost(lost) as fault:
            log(f"injected: {lost} (node 1's pod) lost its power; the spare is on {placed[spare]}")
            noticed = eventually(120, "node 0's rendezvous re-forming the group", lambda: stamped_lines(
                ns, pod0, r"rendezvous: the group re-forms \(restart [1-9]", fault), 1)[0][0]
            restarted = eventually(120, "the group re-formed at world size 4", lambda: stamped_lines(
                ns, pod0, r"^start: RANK=0 .*WORLD_SIZE=4 .*restart=[1-9]", fault), 1)[0][0]
            stood = eventually(60, "the spare's workers at ranks 2 and 3", lambda: stamped_lines(
                ns, spare, r"^start: RANK=[23] .*WORLD_SIZE=4 ", fault), 1)
            resumed = eventually(120, "an epoch trained at world size 4", lambda: stamped_lines(
                ns, pod0, r"^epoch \d+/", restarted), 1)[0][0]
            st = kget("-n", ns, "tj", name)["status"]
            check(st.get("standIns") == [{"nodeRank": 1, "podNodeRank": 10000}],
                  f"status.standIns names the spare in node rank 1's place ({st.get('standIns')})")
            check(events(ns, name, "SpareStoodIn"), "Event SpareStoodIn")
            eventually(120, "a new spare made", lambda: f"{name}-spare-1" in pod_uids(ns, name), 1)
            back = time.time()
        st = wait_phase(ns, name, "Succeeded", 900)
        by_reason = st.get("restartsByReason", {})
        check(by_reason.get("node_lost", 0) == 1 and by_reason.get("pod_failure", 0) == 0,
              f"the one loss is counted once, as node_lost ({by_reason})")
        print(f"FIGURES powerloss_spare: node 0's launchers noticed the loss {noticed - fault:.1f} s after the fault; "
              f"the group re-formed at world size 4 on the spare {restarted - noticed:.1f} s after that "
              f"({stood[0][0] - noticed:.1f} s to the spare's workers), training resumed {resumed - noticed:.1f} s "
              f"after it; the node was down {back - fault:.0f} s (the test's choice); restartsByReason "
              f"{by_reason}", flush=True)


def drained(ns, name, spares):
    """kubectl drain of node 1's node under a rigid job of 2 nodes (spares 1 or 0, one pod per node required, three
    real nodes), evicting the job's pods only (--pod-selector: the cluster's own pods stay): with the spare, node 0's
    rendezvous gives node 1's place to it, by the operator's notice of the cordon or by node 1's launcher leaving on
    SIGTERM, whichever comes first; without, the evicted pod is made again on the third node. Returns the times."""
    lost = lost_node_of(ns, name)
    if spares:
        eventually(300, "the spare waiting in the rendezvous", lambda: kget("-n", ns, "tj", name)["status"]
                   .get("sparesReady") == 1, 1)
    pod0 = f"{name}-node-0"
    t = time.time()
    try:
        kubectl("drain", lost, "--pod-selector", f"kubedist.io/job-name={name}", "--delete-emptydir-data",
                "--timeout=300s")
        log(f"injected: kubectl drain of {lost} (node 1's pod) returned after {time.time() - t:.1f} s")
        restarted = eventually(300, "the group re-formed at world size 4", lambda: stamped_lines(
            ns, pod0, r"^start: RANK=0 .*WORLD_SIZE=4 .*restart=[1-9]", t), 1)[0][0]
        resumed = eventually(120, "an epoch trained at world size 4", lambda: stamped_lines(
            ns, pod0, r"^epoch \d+/", restarted), 1)[0][0]
        pods = {p["metadata"]["name"]: p["spec"].get("nodeName")
                for p in kget("-n", ns, "pods", "-l", f"kubedist.io/job-name={name}")["items"]}
        if spares:
            st = kget("-n", ns, "tj", name)["status"]
            check(st.get("standIns") == [{"nodeRank": 1, "podNodeRank": 10000}],
                  f"status.standIns names the spare in node rank 1's place ({st.get('standIns')})")
            eventually(60, "the spare's workers at ranks 2 and 3", lambda: stamped_lines(
                ns, f"{name}-spare-0", r"^start: RANK=[23] .*WORLD_SIZE=4 ", t), 1)
            check(f"{name}-node-1" not in pods, f"node 1's pod is not made again ({sorted(pods)})")
            eventually(120, "a new spare made", lambda: f"{name}-spare-1" in pod_uids(ns, name), 1)
        else:
            check(pods.get(f"{name}-node-1") not in (None, lost), f"node 1's pod made again elsewhere ({pods})")
        how = "the operator's notice of the cordon" if events(ns, name, "NodeGoingAway") else "node 1's SIGTERM"
    finally:
        kubectl("uncordon", lost)
    return t, restarted, resumed, how


def scenario_drain_spare():
    with namespace("drainspare") as ns:
        name = apply_example(ns, "--epochs", "60",
                             spec={"replicas": 2, "spares": 1, "placement": {"onePodPerNode": "Required"}})
        t, restarted, resumed, how = drained(ns, name, spares=1)
        st = wait_phase(ns, name, "Succeeded", 900)
        by_reason = st.get("restartsByReason", {})
        check(by_reason.get("node_lost", 0) == 1 and by_reason.get("scale", 0) == 0 and
              by_reason.get("pod_failure", 0) == 0, f"the drain is counted once, as node_lost ({by_reason})")
        print(f"FIGURES drain_spare: the group re-formed at world size 4 on the spare {restarted - t:.1f} s after "
              f"kubectl drain began (by {how}), training resumed {resumed - t:.1f} s after it; restartsByReason "
              f"{by_reason}", flush=True)


def scenario_drain_rigid():
    with namespace("drainrigid") as ns:
        name = apply_example(ns, "--epochs", "60", spec={"replicas": 2, "placement": {"onePodPerNode": "Required"}})
        t, restarted, resumed, _ = drained(ns, name, spares=0)
        st = wait_phase(ns, name, "Succeeded", 900)
        print(f"FIGURES drain_rigid: the group re-formed at world size 4 {restarted - t:.1f} s after kubectl drain "
              f"began (node 1's pod made again on the third node), training resumed {resumed - t:.1f} s after it; "
              f"restartsByReason {st.get('restartsByReason', {})}", flush=True)


def scenario_netcut():
    cut_s = 20
    with namespace("netcut") as ns:
        name = apply_example(ns, "--epochs", "60")
        lost = lost_node_of(ns, name)
        index = str(int(lost.rsplit("-", 1)[1]))
        before = pod_uids(ns, name)
        pod0 = f"{name}-node-0"
        cut = time.time()
        cluster_sh("node-link", index, "down")
        log(f"injected: {lost}'s link down for {cut_s} s")
        try:
            eventually(cut_s + 10, "the cut held", lambda: time.time() - cut >= cut_s, 1)
        finally:
            cluster_sh("node-link", index, "up")
        healed = time.time()
        resumed = eventually(300, "the group re-formed at world size 4", lambda: stamped_lines(
            ns, pod0, r"^start: RANK=0 .*WORLD_SIZE=4 .*restart=[1-9]", cut), 1)[0][0]
        st = wait_phase(ns, name, "Succeeded", 900)
        check(pod_uids(ns, name) == before, "no pod was recreated: the group re-formed in place")
        finished = stamped_lines(ns, pod0, r"^training finished: ")
        check(finished and "world size 4" in finished[-1][1], "node 0 finished the training at world size 4")
        print(f"FIGURES netcut: {lost}'s link down {healed - cut:.0f} s; training resumed at world size 4 "
              f"{resumed - healed:.1f} s after the link came back ({resumed - cut:.1f} s after the cut); "
              f"restartsByReason {st.get('restartsByReason')}; Succeeded", flush=True)


def retag(image, tag):
    """The same image under another tag in the cluster's registry (the distribution API: its manifest put again)."""
    registry = cluster_sh("registry").stdout.strip()
    repo = image.split("/", 1)[1].rsplit(":", 1)[0]
    old_tag = image.rsplit(":", 1)[1]
    accept = ("application/vnd.oci.image.manifest.v1+json,application/vnd.oci.image.index.v1+json,"
              "application/vnd.docker.distribution.manifest.v2+json")
    with tempfile.NamedTemporaryFile() as manifest:
        got = run("curl", "-fsS", "-D", "-", "-o", manifest.name, "-H", f"Accept: {accept}",
                  f"http://{registry}/v2/{repo}/manifests/{old_tag}").stdout
        kind = re.search(r"^content-type:\s*(\S+)", got, re.M | re.I).group(1)
        run("curl", "-fsS", "-X", "PUT", "-H", f"Content-Type: {kind}", "--data-binary", f"@{manifest.name}",
            f"http://{registry}/v2/{repo}/manifests/{tag}")
    return image.rsplit(":", 1)[0] + ":" + tag


def scenario_upgrade():
    refs = images()
    with namespace("upgrade") as ns:
        name = apply_example(ns, "--epochs", "400")  # a minute or more: the upgrade lands while it trains
        eventually(300, "rank 0 has trained an epoch", lambda: "epoch 1/" in logs(ns, f"{name}-node-0"), 1)
        before_pods = pod_uids(ns, name)
        before_ops = {p["metadata"]["name"] for p in kget("-n", OPERATOR_NS, "pods", "-l",
                                                              "app.kubernetes.io/component=operator")["items"]}
        before = eventually(60, "status.progress", lambda: (lambda st: st if st.get("progress") else None)(
            kget("-n", ns, "tj", name)["status"]), 1)
        keyring = f"{RELEASE}-keyring"
        def keyring_entries():
            return set((kget("-n", OPERATOR_NS, "secret", keyring).get("data") or {}).keys())
        kept = keyring_entries()
        check(any(e.startswith(ns + ".") for e in kept), f"the operator keeps {ns}'s key in {keyring} ({kept})")
        # A tag of its own per image: a node keeps an image it pulled under a tag (IfNotPresent), so a fixed tag
        # would run an earlier run's operator.
        current = refs["KUBEDIST_OPERATOR_IMAGE"]
        new_image = retag(current, "upgrade-" + current.rsplit(":", 1)[1])
        repo, tag = new_image.rsplit(":", 1)
        t = time.time()
        # reuse-values keeps what real.chart installed; the image tag and a value change.
        run("helm", "upgrade", RELEASE, "--namespace", OPERATOR_NS, "--reuse-values", "--wait", "--timeout", "240s",
            os.path.join(SOURCE, "helm/kubedist"), "--set", f"image.repository={repo}", "--set", f"image.tag={tag}",
            "--set", "launcherPollInterval=3s", "--set", "logLevel=debug")
        upgraded = time.time()
        def replaced():  # the old pods may still be terminating when the rollout is done
            pods = [p for p in kget("-n", OPERATOR_NS, "pods", "-l", "app.kubernetes.io/component=operator")["items"]
                    if not p["metadata"].get("deletionTimestamp")]
            return pods if len(pods) == 2 and all(p["spec"]["containers"][0]["image"] == new_image for p in pods) \
                and not before_ops & {p["metadata"]["name"] for p in pods} else None
        ops = eventually(60, f"the operator's pods replaced with {new_image}", replaced, 1)
        phase = kget("-n", ns, "tj", name)["status"].get("phase")
        check(phase == "Running", f"the job still trains once the new operator runs ({phase})")
        log(f"helm upgrade replaced the operator's pods with {new_image} (--wait returned in {upgraded - t:.1f} s)")
        args = ops[0]["spec"]["containers"][0]["args"]
        check("--launcher-poll-interval=3s" in args and "--log-level=debug" in args, f"the new values reached it ({args})")
        check(kept <= keyring_entries(), f"helm upgrade left the keys the operator kept in {keyring}")
        st = wait_phase(ns, name, "Succeeded", 600)
        check(pod_uids(ns, name) == before_pods, "the training pods are the same pods (no recreation)")
        restarts = [cs.get("restartCount", 0) for p in kget("-n", ns, "pods", "-l", f"kubedist.io/job-name={name}")
                    ["items"] for cs in p["status"].get("containerStatuses", [])]
        check(restarts and all(r == 0 for r in restarts), f"no container restarted ({restarts})")
        check(st.get("restarts", 0) == 0 and not st.get("restartsByReason"),
              f"no restart counted ({st.get('restartsByReason')})")
        check((st.get("progress") or {}).get("step", 0) > before["progress"].get("step", 0) and
              st.get("startTime") == before.get("startTime"),
              f"the status carried on past the upgrade (the same startTime, step {before['progress'].get('step')} -> "
              f"{st.get('progress', {}).get('step')})")
        print(f"FIGURES upgrade: helm upgrade --wait took {upgraded - t:.1f} s while the job trained; 0 pod "
              f"recreations, 0 container restarts, 0 restarts counted; Succeeded", flush=True)


if __name__ == "__main__":
    scenario = sys.argv[1] if len(sys.argv) > 1 else ""
    fn = globals().get(f"scenario_{scenario}")
    if not fn:
        sys.exit(f"usage: real_test.py nodes|chart|train|crash|podloss|fail|progress|restricted|powerloss|"
                 f"powerloss_rigid|powerloss_spare|drain_spare|drain_rigid|netcut|upgrade (got {scenario!r})")
    try:
        fn()
    except (Failure, RuntimeError) as e:
        print(f"FAIL: {e}", flush=True)
        sys.exit(1)
    log(f"scenario {scenario} passed")
