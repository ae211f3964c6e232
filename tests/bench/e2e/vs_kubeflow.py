"""kubedist beside Kubeflow's Training Operator on real nodes, end to end (not a test; never run by ctest).

On the local cluster with real nodes (kubelets and containerd; tests/bench/e2e/vs_kubeflow.sh brings it up), the
CPU example image (crd/examples/cpu: 2 nodes x 2 worker processes, DDP over gloo) is run TRIALS times each way,
alternating:
  kubedist  the example TrainingJob, kubedist's operator installed by its Helm chart from the cluster's registry
  Kubeflow  a PyTorchJob (1 Master + 1 Worker, nprocPerNode 2, restartPolicy OnFailure) running the same script
            under torchrun (Debian's python3-torch 1.13, in the same image; static rendezvous from Kubeflow's
            PET_* environment), Kubeflow's Training Operator v1 deployed from its own manifests
            (manifests/overlays/standalone)
in three scenarios:
  clean    from `kubectl apply` to rank 0's first training step, and to Succeeded
  crash    global rank 1 exits at step 3 (train.py --crash-once-at-step 3): from that exit to training resumed
           (rank 0's first step of the next attempt), to Succeeded, and whether the job got there on its own
  podloss  the pod of node 1 (kubedist's J-node-1, Kubeflow's J-worker-0) is deleted once rank 0 has logged step 3:
           from the delete to training resumed, to Succeeded, and whether the job got there on its own
Times come from the pods' logs (the kubelet's own log files on the local nodes, stamped by containerd with the
same machine's clock as this script's: stamped() below) and from polling the job's status every 0.25 s. Both run train.py with --log-steps (rank 0 prints
`step N`) and --step-time 0.5 (steps long enough to delete a pod at step 3), and a /tmp emptyDir, so that a container
restarted by the kubelet, as Kubeflow's recovery does, keeps the marker that makes the crash happen once.

Kubeflow's deployment differs from its manifests in three things this offline cluster needs: its image is its
binary (built by `deploy/local/tools.sh bench`) on the Debian base the cluster's images use; its worker pods'
init container (which waits until the master's name resolves) runs the example image with `getent hosts` in place of
alpine's `nslookup` (--pytorch-init-container-image and -template-file, the operator's own flags); and its
ValidatingWebhookConfiguration lists no webhook (the API server of this cluster cannot reach a Service).

Prints every trial and one table of medians with the ratios Kubeflow/kubedist.

usage: vs_kubeflow.py    (KUBECONFIG, KUBEDIST_SOURCE_DIR, KUBEDIST_CACHE, KUBEDIST_CLUSTER_DIR set: vs_kubeflow.sh)
env: TRIALS (5), SCENARIOS ("clean crash podloss"), DEADLINE (300 s a trial)
"""
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

import yaml

SOURCE = os.environ["KUBEDIST_SOURCE_DIR"]
sys.path.insert(0, os.path.join(SOURCE, "tests/e2e"))
sys.path.insert(0, os.path.join(SOURCE, "tests/e2e/real"))
import real_test as rt  # noqa: E402  (the real-node tests' helpers: kubectl, images, the chart's install)
from expect import Failure, eventually, log  # noqa: E402

log.tag = "vs-kubeflow"
TRIALS = int(os.environ.get("TRIALS", "5"))
SCENARIOS = os.environ.get("SCENARIOS", "clean crash podloss").split()
DEADLINE = float(os.environ.get("DEADLINE", "300"))
TRAIN_ARGS = ["--epochs", "1", "--log-steps", "--step-time", "0.5"]
KUBEFLOW_NS = "kubeflow"
TEED = r"(?:\[default\d+\]:)?"  # the prefix torchrun's --tee puts before a worker's lines


def kubeflow_version():
    """The Training Operator's version tools.sh builds (deploy/local/versions.sh)."""
    with open(os.path.join(SOURCE, "deploy/local/versions.sh")) as f:
        return re.search(r"^KUBEFLOW_TRAINING_OPERATOR_VERSION=(\S+)$", f.read(), re.M).group(1)


def kubeflow_source(version):
    """The Training Operator's module source (manifests included), where `go` put it when tools.sh built it."""
    gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip()
    found = glob.glob(os.path.join(gomodcache or "/root/go/pkg/mod", "github.com/kubeflow",
                                   f"training-operator@{version}"))
    if not found:
        raise Failure(f"no github.com/kubeflow/training-operator@{version} in the Go module cache: run "
                      "deploy/local/tools.sh bench")
    return found[0]


# ---- Kubeflow's Training Operator -------------------------------------------------------------------------------
def kubeflow_image(version):
    """Its binary on the cluster images' Debian base, pushed to the cluster's registry; the nodes' reference."""
    binary = os.path.realpath(os.path.join(os.environ["KUBEDIST_CACHE"], "bin", "training-operator"))
    name = f"kubedist/bench-kubeflow-training-operator:{version}"
    ctr = rt.run("buildah", "from", "localhost/kubedist/debian:bookworm").stdout.strip()
    try:
        rt.run("buildah", "copy", "--chmod", "0755", ctr, binary, "/manager")
        rt.run("buildah", "config", "--entrypoint", '["/manager"]', "--user", "65532:65532", ctr)
        rt.run("buildah", "commit", "--quiet", ctr, f"localhost/{name}")
    finally:
        rt.run("buildah", "rm", ctr, ok=False)
    registry = rt.cluster_sh("registry").stdout.strip()
    rt.run("buildah", "push", "--quiet", "--tls-verify=false", f"localhost/{name}", f"docker://{registry}/{name}")
    return f"{rt.REGISTRY}/{name}"


INIT_TEMPLATE = """- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: IfNotPresent
  resources:
    limits: {cpu: 100m, memory: 20Mi}
    requests: {cpu: 50m, memory: 10Mi}
  command: ['sh', '-c', 'err=1;for i in $(seq {{.MaxTries}}); do if getent hosts {{.MasterAddr}}; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err']
"""


def install_kubeflow(version, example_image):
    image = kubeflow_image(version)
    source = kubeflow_source(version)
    docs = [d for d in yaml.safe_load_all(rt.kubectl("kustomize", os.path.join(source, "manifests/overlays/standalone"))
                                          .stdout) if d]
    for d in docs:
        if d["kind"] == "Deployment" and d["metadata"]["name"] == "training-operator":
            spec = d["spec"]["template"]["spec"]
            c = spec["containers"][0]
            c["image"] = image
            c.setdefault("args", []).extend([f"--pytorch-init-container-image={example_image}",
                                             "--pytorch-init-container-template-file=/etc/bench/init-container.yaml"])
            c["volumeMounts"].append({"name": "bench-init", "mountPath": "/etc/bench", "readOnly": True})
            spec["volumes"].append({"name": "bench-init", "configMap": {"name": "bench-init-container"}})
        if d["kind"] == "ValidatingWebhookConfiguration":
            d.pop("webhooks", None)
    docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "bench-init-container", "namespace": KUBEFLOW_NS},
                 "data": {"init-container.yaml": INIT_TEMPLATE}})
    rt.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump_all(docs))
    eventually(300, "Kubeflow's training-operator available", lambda: rt.kget(
        "-n", KUBEFLOW_NS, "deployment", "training-operator").get("status", {}).get("availableReplicas") == 1,
        interval=1)
    log(f"Kubeflow's Training Operator {version} runs from {image}")


# ---- the jobs ----------------------------------------------------------------------------------------------------
def example():
    with open(rt.EXAMPLE) as f:
        return yaml.safe_load(f)


def with_tmp(template):
    """The pod template with an emptyDir at /tmp for the trainer (the crash marker outlives a container restart)."""
    spec = template["spec"]
    spec.setdefault("volumes", []).append({"name": "tmp", "emptyDir": {}})
    spec["containers"][0].setdefault("volumeMounts", []).append({"name": "tmp", "mountPath": "/tmp"})
    return template


class System:
    """One way of running the example: its namespace, its job kind and how its pods are named."""
    label = ns = resource = container = rank0 = node1 = ""

    def rank0_pod(self, name):
        return self.rank0.format(name), self.container

    def node1_pod(self, name):
        return self.node1.format(name)

    def delete(self, name):
        """The job and its pods, gone before the next trial starts."""
        rt.kubectl("-n", self.ns, "delete", self.resource, name, "--wait=true", "--timeout=120s", ok=False)
        eventually(120, f"{name}'s pods gone", lambda: not rt.kubectl(
            "-n", self.ns, "get", "pods", "-o", "name", ok=False).stdout.strip(), interval=0.5)


class Kubedist(System):
    label, ns, resource, container = "kubedist", "bench-kubedist", "tj", "trainer"
    rank0, node1 = "{}-node-0", "{}-node-1"

    def apply(self, name, args):
        job = example()
        job["metadata"]["name"] = name
        c = job["spec"]["template"]["spec"]["containers"][0]
        c["command"] += args
        with_tmp(job["spec"]["template"])
        rt.kubectl("-n", self.ns, "apply", "-f", "-", input=json.dumps(job))

    def phase(self, name):
        return rt.kget("-n", self.ns, "tj", name).get("status", {}).get("phase", "")


class Kubeflow(System):
    label, ns, resource, container = "Kubeflow", "bench-kubeflow", "pytorchjob", "pytorch"
    rank0, node1 = "{}-master-0", "{}-worker-0"

    def apply(self, name, args):
        template = example()["spec"]["template"]
        c = template["spec"]["containers"][0]
        c["name"] = "pytorch"  # the container Kubeflow gives its environment to
        # python3 train.py ... -> torchrun train.py ...; --redirects 1 --tee 1 because Debian's torch 1.13 under
        # Python 3.11 cannot read these flags' default, 0 (its Std.from_str finds no member for it): each worker's
        # stdout is then teed with torchrun's "[defaultN]:" in front of every line.
        c["command"] = ["torchrun", "--redirects", "1", "--tee", "1"] + c["command"][1:] + args
        c["ports"] = [{"name": "pytorchjob-port", "containerPort": 23456}]
        with_tmp(template)
        replica = {"replicas": 1, "restartPolicy": "OnFailure", "template": template}
        job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
               "spec": {"nprocPerNode": "2", "runPolicy": {"cleanPodPolicy": "None"},
                        "pytorchReplicaSpecs": {"Master": replica, "Worker": json.loads(json.dumps(replica))}}}
        rt.kubectl("-n", self.ns, "apply", "-f", "-", input=json.dumps(job))

    def phase(self, name):
        conds = rt.kget("-n", self.ns, "pytorchjob", name).get("status", {}).get("conditions", [])
        for kind in ("Succeeded", "Failed"):
            if any(c.get("type") == kind and c.get("status") == "True" for c in conds):
                return kind
        return "Running"


def stamped(system, pod, container, pattern):
    """(time, line) of the pod's log lines matching pattern, of every container the kubelet ran for it (a restarted
    one's included), oldest first. Read from the kubelet's own log files on the local cluster's nodes
    (pod-logs/NS_POD_UID/CONTAINER/N.log, the CRI format: time, stream, P for a partial line or F, text), which keep
    what `kubectl logs --previous` cannot always give here once the runtime dropped the old container."""
    found = []
    for path in sorted(glob.glob(os.path.join(os.environ["KUBEDIST_CLUSTER_DIR"], "nodes", "*", "pod-logs",
                                              f"{system.ns}_{pod}_*", container, "*.log"))):
        partial = {}
        try:
            with open(path, errors="replace") as f:
                for entry in f:
                    stamp, stream, tag, text = (entry.rstrip("\n").split(" ", 3) + ["", "", ""])[:4]
                    if tag == "P":
                        partial.setdefault(stream, [stamp, ""])[1] += text
                        continue
                    first, head = partial.pop(stream, [stamp, ""])
                    line = head + text
                    if re.search(pattern, line):
                        found.append((rt.rfc3339(first), line))
        except OSError:
            continue
    return sorted(found)


def step_times(lines, step):
    return [t for t, line in lines if re.fullmatch(rf"{TEED}step {step}", line)]


def trial(system, scenario, n):
    name = f"{scenario}-{n}"
    args = list(TRAIN_ARGS) + (["--crash-once-at-step", "3"] if scenario == "crash" else [])  # warmup: as clean
    pod, container = system.rank0_pod(name)
    applied = time.time()
    system.apply(name, args)
    event = None
    succeeded = None
    deadline = time.monotonic() + DEADLINE
    # Rank 0's step lines and rank 1's crash line, gathered as they come: the kubelet may collect a restarted
    # container's log file once a newer one has ended.
    lines = set()
    wanted = rf"^{TEED}(step \d+|rank 1: injected crash at step \d+.*)$"
    while time.monotonic() < deadline:
        lines.update(stamped(system, pod, container, wanted))
        if scenario == "podloss" and event is None and step_times(lines, 3):
            event = time.time()
            rt.kubectl("-n", system.ns, "delete", "pod", system.node1_pod(name), "--wait=false")
        phase = system.phase(name)
        if phase == "Succeeded":
            succeeded = time.time()
            break
        if phase == "Failed":
            break
        time.sleep(0.25)
    lines.update(stamped(system, pod, container, wanted))
    lines = sorted(lines)
    firsts = step_times(lines, 1)
    if scenario == "crash":
        crash = [t for t, line in lines if "injected crash" in line]
        event = crash[0] if crash else None
    resumed = next((t for t in firsts if event is not None and t > event), None)
    result = {
        "first step": firsts[0] - applied if firsts else None,
        "Succeeded": succeeded - applied if succeeded else None,
        "resumed": resumed - event if resumed is not None and event is not None else None,
        "finished": succeeded is not None,
    }
    log(f"{system.label} {scenario} #{n}: " + ", ".join(
        f"{k} {v:.2f} s" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))
    if succeeded is None:
        rt.dump(system.ns) if system.label == "kubedist" else print(
            rt.kubectl("-n", system.ns, "get", "pytorchjob,pods", "-o", "wide", ok=False).stdout)
    system.delete(name)
    return result


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    refs = rt.images()
    rt.scenario_chart()  # kubedist's operator, as the real-node tests install it
    install_kubeflow(kubeflow_version(), refs["KUBEDIST_EXAMPLE_CPU_IMAGE"])
    systems = [Kubedist(), Kubeflow()]
    for s in systems:
        rt.kubectl("create", "namespace", s.ns, ok=False)
        eventually(60, f"serviceaccount default in {s.ns}",
                   lambda s=s: rt.kubectl("-n", s.ns, "get", "sa", "default", ok=False).returncode == 0)
    # One clean run each, not counted: the nodes pull the images (the first pod of each would wait for it).
    for system in systems:
        trial(system, "warmup", 0)
    results = {}
    for scenario in SCENARIOS:
        for n in range(1, TRIALS + 1):
            for system in systems:
                results.setdefault((system.label, scenario), []).append(trial(system, scenario, n))
    rows = [("clean", "apply -> rank 0's first step", "first step"), ("clean", "apply -> Succeeded", "Succeeded"),
            ("crash", "worker exit -> training resumed", "resumed"), ("crash", "apply -> Succeeded", "Succeeded"),
            ("crash", "finished without a person", "finished"),
            ("podloss", "pod delete -> training resumed", "resumed"), ("podloss", "apply -> Succeeded", "Succeeded"),
            ("podloss", "finished without a person", "finished")]
    print(f"\nmedians of {TRIALS} trials each, alternating; CPU example, 2 nodes x 2 workers, real nodes")
    print("| scenario | measure | kubedist | Kubeflow (torchrun) | Kubeflow/kubedist |")
    print("| --- | --- | --- | --- | --- |")
    for scenario, measure, key in rows:
        if scenario not in SCENARIOS:
            continue
        kd, kf = (results[(label, scenario)] for label in ("kubedist", "Kubeflow"))
        if key == "finished":
            print(f"| {scenario} | {measure} | {sum(r[key] for r in kd)}/{len(kd)} | "
                  f"{sum(r[key] for r in kf)}/{len(kf)} | |")
            continue
        a, b = median([r[key] for r in kd]), median([r[key] for r in kf])
        fmt = lambda x: f"{x:.2f} s" if x is not None else "none"  # noqa: E731
        ratio = f"{b / a:.1f}x" if a and b else ""
        print(f"| {scenario} | {measure} | {fmt(a)} | {fmt(b)} | {ratio} |")


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print(f"vs_kubeflow.py: {e}", file=sys.stderr)
        sys.exit(1)
