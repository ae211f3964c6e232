"""kubectl-kubedist on real nodes: the command lines people already have, run as they are on the cluster with
`kubectl kubedist run -- ...`, the working directory shipped without an image build, the ranks' logs followed to
the job's end and the job's result as the exit code. The operator is the chart's (real.chart), the trainer image
the CPU example's (the plugin's default), the namespace the kubeconfig context's, as a user's would be.

usage: plugin_test.py PLUGIN SCENARIO   (environment as for real_test.py)
scenarios:
  legacy    python -m torch.distributed.launch --nproc_per_node=2 --use_env train.py: Succeeded, exit 0, ranks 0-1
  localrank python -m torch.distributed.launch --nproc_per_node=2 legacy_train.py (no --use_env), the script a torch
            1.x one that declares only --local_rank: the launcher's --local-rank-style=auto reads the image's torch
            (Debian's 1.13) and passes --local_rank=N; Succeeded, exit 0, ranks 0-1
  torchrun  torchrun --nnodes=2 --nproc_per_node=2 train.py: Succeeded, exit 0, ranks 0-3 from both pods; then
            status and list show it
  elastic   torchrun --nnodes=1:2 --nproc_per_node=2 train.py: Succeeded, exit 0
  fail      a script whose rank 1 raises: run exits non-zero and prints rank 1's error and the job's last failure
  dryrun    --dry-run -o yaml piped to kubectl apply -f -: the job runs to Succeeded, and logs -f follows it
  pip       --pip from a package index served in the cluster (a wheel built here, python -m http.server in a pod):
            the package is installed before the launcher starts and the script imports it
  detach    Ctrl-C while following detaches (exit 130, says how to reattach) and the job goes on; logs -f reattaches
  torch2    on the torch 2.15 example image (--image, deploy/local/images.sh's kubedist/example-torch2): torchrun
            --nnodes=2 --nproc_per_node=2 train.py trains on torch 2.15 (rank 0's last line names it), and 2.15's
            deprecated python -m torch.distributed.launch, with a script that declares only --local-rank (as 2.x
            scripts do), gets --local-rank=N from the launcher's --local-rank-style=auto, which read torch 2.15
  libraries on the same image, 2 nodes x 2 processes each: PyTorch Lightning's Trainer (strategy="ddp"), Hugging
            Face Accelerate, and a @record main whose rank 3 raises: what each library reports (world size, ranks,
            node rank, cluster environment, a gathered tensor) is what torchrun would give, and @record's
            exception is the root cause in status.lastFailure and in what run prints
torch2 and libraries hold their pods to one real node with --node-selector (real_test.torch2_node): that node alone
keeps the image's 5 GB unpacked.
"""
import base64
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_test as rt  # noqa: E402
from expect import Failure, check, eventually, log  # noqa: E402

TRAIN = os.path.join(rt.SOURCE, "crd/examples/cpu/train.py")
WORKERS = os.path.join(rt.SOURCE, "tests/integration/launcher/workers")

FAIL_PY = '''import os
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank} of {dist.get_world_size()} up", flush=True)
dist.barrier()
if rank == 1:
    raise ValueError("boom on rank 1")
dist.barrier()
'''

def local_rank_script(flag):
    """A torch.distributed.launch script as users wrote them: argparse knows only FLAG (--local_rank in torch 1.x
    scripts, --local-rank in 2.x ones; the other spelling would be exit code 2), checked against LOCAL_RANK; then
    the CPU example trains with the remaining arguments."""
    return f'''import argparse
import os
import runpy
import sys

parser = argparse.ArgumentParser()
parser.add_argument("{flag}", type=int, required=True)
args, rest = parser.parse_known_args()
assert args.local_rank == int(os.environ["LOCAL_RANK"]), (args.local_rank, os.environ["LOCAL_RANK"])
print(f"{flag}={{args.local_rank}} given", flush=True)
sys.argv = ["train.py"] + rest
runpy.run_path("train.py", run_name="__main__")
'''


# Runs a test worker of tests/integration/launcher/workers (OUT in its arguments: a results directory in the pod),
# then prints the result files of its own rank, one line each, so that they reach the test through the logs.
REPORT_PY = '''import os
import runpy
import sys

out = "/tmp/kubedist-results"
os.makedirs(out, exist_ok=True)
script = sys.argv[1]
sys.argv = [script] + [out if a == "OUT" else a for a in sys.argv[2:]]
runpy.run_path(script, run_name="__main__")
suffix = f"rank{os.environ['RANK']}.json"
for name in sorted(os.listdir(out)):
    if name.endswith(suffix):
        with open(os.path.join(out, name)) as f:
            sys.stdout.write(f"result {name} {f.read().strip()}\\n")
sys.stdout.flush()
'''

USEPKG_PY = '''import kdtestpkg
print("using", kdtestpkg.MAGIC, "from", kdtestpkg.__file__, flush=True)
'''


@contextlib.contextmanager
def user(prefix, plugin):
    """A namespace, a project directory with train.py, and a kubeconfig whose context names the namespace, so that
    `kubectl kubedist run -- ...` is typed exactly as a user would; `kubectl kubedist` finds the plugin on PATH."""
    with rt.namespace(prefix) as ns:
        home = tempfile.mkdtemp(prefix="kubedist-plugin-")
        try:
            os.makedirs(os.path.join(home, "bin"))
            os.symlink(plugin, os.path.join(home, "bin", "kubectl-kubedist"))
            project = os.path.join(home, "project")
            os.makedirs(project)
            shutil.copy(TRAIN, project)
            kubeconfig = os.path.join(home, "kubeconfig")
            shutil.copy(os.environ["KUBECONFIG"], kubeconfig)
            rt.run("kubectl", "--kubeconfig", kubeconfig, "config", "set-context", "--current", f"--namespace={ns}")
            env = dict(os.environ, KUBECONFIG=kubeconfig, PATH=f"{home}/bin:{os.environ['PATH']}")
            yield ns, project, env
        finally:
            shutil.rmtree(home, ignore_errors=True)


def kubedist(env, cwd, command, timeout=600, input=None):
    """Runs a shell command line as typed (`kubectl kubedist run -- ...`), returning (exit code, stdout+stderr)."""
    log(f"$ {command}")
    p = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                       input=input)
    out = p.stdout + p.stderr
    print(out[-6000:], flush=True)
    return p.returncode, out


def job_name(out):
    m = re.search(r"trainingjob\.kubedist\.io/(\S+) created", out)
    if not m:
        raise Failure(f"run did not say which job it created: {out[-2000:]}")
    return m.group(1)


def ranks_started(out):
    return sorted({int(r) for r in re.findall(r"^\[rank (\d+)\]: start: RANK=\1 ", out, re.M)})


def succeeded(code, out, ranks):
    check(code == 0, f"exit code 0 (got {code})")
    check(re.search(r"^tj/\S+ Succeeded", out, re.M) is not None, "the final phase Succeeded is printed")
    check(ranks_started(out) == ranks, f"the ranks' lines with their [rank N] prefixes: {ranks_started(out)}")
    check(re.search(r"^\[rank 0\]: training finished: ", out, re.M) is not None, "rank 0's last line")


def scenario_legacy(plugin):
    with user("plg-legacy", plugin) as (ns, project, env):
        code, out = kubedist(env, project, "kubectl kubedist run -- python -m torch.distributed.launch "
                                           "--nproc_per_node=2 --use_env train.py")
        succeeded(code, out, [0, 1])
        name = job_name(out)
        pod = rt.kget("-n", ns, "pod", f"{name}-node-0")
        env_names = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        check(env_names.get("PET_LEGACY_LAUNCH") == "1" and env_names.get("PET_USE_ENV") == "1",
              "the legacy form reached the launcher as PET_LEGACY_LAUNCH=1 and PET_USE_ENV=1")


def scenario_localrank(plugin):
    with user("plg-localrank", plugin) as (ns, project, env):
        with open(os.path.join(project, "legacy_train.py"), "w") as f:
            f.write(local_rank_script("--local_rank"))
        code, out = kubedist(env, project, "kubectl kubedist run -- python -m torch.distributed.launch "
                                           "--nproc_per_node=2 legacy_train.py --epochs 2")
        check(re.search(r"kubedist-launcher: --local-rank-style=auto: torch 1\.\S+ \(\S+/torch/version\.py\): "
                        r"passing --local_rank=N", out) is not None,
              "the launcher chose torch 1.x's --local_rank from the image's torch, and said so")
        check(sorted(int(r) for r in re.findall(r"^\[rank (\d+)\]: --local_rank=\1 given$", out, re.M)) == [0, 1],
              "each worker got --local_rank=N with its own LOCAL_RANK")
        succeeded(code, out, [0, 1])
        pod = rt.kget("-n", ns, "pod", f"{job_name(out)}-node-0")
        env_names = {e["name"] for e in pod["spec"]["containers"][0]["env"]}
        check("PET_LEGACY_LAUNCH" in env_names and not env_names & {"PET_USE_ENV", "PET_LOCAL_RANK_STYLE",
                                                                     "KUBEDIST_LOCAL_RANK_STYLE"},
              "the plugin asked for the legacy form and left the spelling to the launcher's default (auto)")


def scenario_torchrun(plugin):
    with user("plg-torchrun", plugin) as (ns, project, env):
        code, out = kubedist(env, project, "kubectl kubedist run -- torchrun --nnodes=2 --nproc_per_node=2 train.py")
        succeeded(code, out, [0, 1, 2, 3])
        name = job_name(out)
        check(re.search(r"^\[node 1\] kubedist-launcher: joined the rendezvous", out, re.M) is not None,
              "node 1's launcher line is there, marked with its node")
        code, status = kubedist(env, project, f"kubectl kubedist status {name}")
        check(code == 0 and f"TrainingJob {name} in {ns}: Succeeded" in status, "status: Succeeded")
        check(re.search(rf"^{name}-node-1 +1 +Succeeded +worker-\d ", status, re.M) is not None,
              "status has a row per pod with its node")
        code, listing = kubedist(env, project, "kubectl kubedist list")
        check(code == 0 and re.search(rf"^{name} +Succeeded ", listing, re.M) is not None, "list shows it")


def scenario_elastic(plugin):
    with user("plg-elastic", plugin) as (ns, project, env):
        code, out = kubedist(env, project, "kubectl kubedist run -- torchrun --nnodes=1:2 --nproc_per_node=2 train.py")
        check(code == 0, f"exit code 0 (got {code})")
        name = job_name(out)
        job = rt.kget("-n", ns, "tj", name)
        check(job["spec"].get("minReplicas") == 1 and job["spec"].get("maxReplicas") == 2,
              "the job is elastic, 1 to 2 nodes")
        ranks = ranks_started(out)
        check(ranks in ([0, 1], [0, 1, 2, 3]), f"ranks of 1 or 2 nodes started ({ranks})")
        check(re.search(r"^tj/\S+ Succeeded", out, re.M) is not None, "Succeeded")


def scenario_fail(plugin):
    with user("plg-fail", plugin) as (ns, project, env):
        with open(os.path.join(project, "fail.py"), "w") as f:
            f.write(FAIL_PY)
        code, out = kubedist(env, project, "kubectl kubedist run -- torchrun --nproc_per_node=2 fail.py")
        check(code != 0, f"a non-zero exit code ({code})")
        check(re.search(r"^\[rank 1\]: ValueError: boom on rank 1", out, re.M) is not None,
              "rank 1's error is printed with its rank")
        check(re.search(r"^tj/\S+ Failed", out, re.M) is not None, "the final phase Failed is printed")
        check(re.search(r"^last failure: pod \S+-node-0 .*exited with code 1", out, re.M) is not None,
              "the job's last failure (the launcher's summary) is printed")


def scenario_dryrun(plugin):
    with user("plg-dryrun", plugin) as (ns, project, env):
        code, out = kubedist(env, project, "kubectl kubedist run --dry-run -o yaml --name gitops -- "
                                           "torchrun --nnodes=2 --nproc_per_node=2 train.py | kubectl apply -f -")
        check(code == 0 and "trainingjob.kubedist.io/gitops created" in out and "configmap/gitops-workdir-0 created"
              in out, "kubectl apply took the TrainingJob and its ConfigMap")
        code, out = kubedist(env, project, "kubectl kubedist logs gitops -f")
        succeeded(code, out, [0, 1, 2, 3])
        code, out = kubedist(env, project, "kubectl kubedist logs gitops --node 1")
        check(code == 0 and ranks_started(out) == [2, 3], "logs --node 1 shows node 1's ranks only")
        code, out = kubedist(env, project, "kubectl kubedist delete gitops")
        check(code == 0, "delete")
        eventually(60, "the applied ConfigMap deleted", lambda: rt.kubectl("-n", ns, "get", "configmap",
                                                                             "gitops-workdir-0", check=False).returncode != 0)


def wheel():
    """A pure-Python wheel of package kdtestpkg 0.1, built here."""
    files = {"kdtestpkg/__init__.py": 'MAGIC = "kdtestpkg 0.1 from the test index"\n',
             "kdtestpkg-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: kdtestpkg\nVersion: 0.1\n",
             "kdtestpkg-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: kubedist-test\nRoot-Is-Purelib: true\n"
                                              "Tag: py3-none-any\n"}
    record = ""
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(text.encode())}\n"
    files["kdtestpkg-0.1.dist-info/RECORD"] = record + "kdtestpkg-0.1.dist-info/RECORD,,\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return buf.getvalue()


def scenario_pip(plugin):
    with user("plg-pip", plugin) as (ns, project, env):
        image = rt.images()["KUBEDIST_EXAMPLE_CPU_IMAGE"]
        whl = "kdtestpkg-0.1-py3-none-any.whl"
        rt.kubectl("-n", ns, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "index"},
             "binaryData": {"wheel": base64.b64encode(wheel()).decode()}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pkgindex", "labels": {"app": "pkgindex"}},
             "spec": {"containers": [{
                 "name": "index", "image": image,
                 "command": ["python3", "-m", "http.server", "8000", "--directory", "/srv"],
                 "ports": [{"containerPort": 8000}],
                 "readinessProbe": {"tcpSocket": {"port": 8000}, "periodSeconds": 1},
                 "volumeMounts": [{"name": "index", "mountPath": "/srv"}]}],
                 "volumes": [{"name": "index", "configMap": {"name": "index", "items": [
                     {"key": "wheel", "path": f"simple/kdtestpkg/{whl}"}]}}]}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pkgindex"},
             "spec": {"selector": {"app": "pkgindex"}, "ports": [{"port": 8000}]}}]}))
        eventually(300, "the package index pod ready", lambda: any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in rt.kget("-n", ns, "pod", "pkgindex").get("status", {}).get("conditions", [])))
        with open(os.path.join(project, "usepkg.py"), "w") as f:
            f.write(USEPKG_PY)
        code, out = kubedist(env, project, f"kubectl kubedist run --pip kdtestpkg --pip-index-url "
                                           f"http://pkgindex.{ns}.svc:8000/simple -- usepkg.py")
        check(code == 0, f"exit code 0 (got {code})")
        check(re.search(r"^\[node 0 setup\] Successfully installed kdtestpkg-0\.1", out, re.M) is not None,
              "pip installed the package from the cluster's index in the setup container")
        check(re.search(r"^\[rank 0\]: using kdtestpkg 0\.1 from the test index from /kubedist-run/pip/kdtestpkg/",
                        out, re.M) is not None, "the script imported it from the pod's package volume")
        code, out = kubedist(env, project, "kubectl kubedist run --pip kdtest-no-such-package --pip-index-url "
                                           f"http://pkgindex.{ns}.svc:8000/simple --detach -- usepkg.py")
        check(code == 0, "a job whose package does not exist is created")
        name = job_name(out)
        eventually(120, "its setup container fails on the missing package", lambda: any(
            s.get("name") == "kubedist-setup" and s.get("state", {}).get("terminated", {}).get("exitCode", 0) != 0
            for p in rt.kget("-n", ns, "pods", "-l", f"kubedist.io/job-name={name}")["items"]
            for s in p.get("status", {}).get("initContainerStatuses", [])))
        code, out = kubedist(env, project, f"kubectl kubedist logs {name}")
        check("No matching distribution found for kdtest-no-such-package" in out,
              "logs shows pip's reason from the setup container")


def scenario_detach(plugin):
    with user("plg-detach", plugin) as (ns, project, env):
        cmd = "kubectl kubedist run -- torchrun --nnodes=2 --nproc_per_node=2 train.py --epochs 30"
        log(f"$ {cmd}")
        p = subprocess.Popen(["bash", "-c", f"exec {cmd}"], cwd=project, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        lines = []
        deadline = time.time() + 300
        while time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("[rank 0]: epoch 1/"):
                break
        out = "".join(lines)
        check("[rank 0]: epoch 1/" in out, "following: rank 0's first epoch came")
        p.send_signal(signal.SIGINT)
        rest, _ = p.communicate(timeout=30)
        print(out + rest, flush=True)
        name = job_name(out)
        check(p.returncode == 130, f"Ctrl-C: exit code 130 ({p.returncode})")
        check(f"kubectl kubedist logs {name} -f -n {ns}" in rest and f"kubectl kubedist delete {name}" in rest,
              "it says how to reattach and how to delete")
        phase = rt.kget("-n", ns, "tj", name).get("status", {}).get("phase")
        check(phase in ("Running", "Pending", "Restarting"), f"the job goes on ({phase})")
        code, out = kubedist(env, project, f"kubectl kubedist logs {name} -f")
        succeeded(code, out, [0, 1, 2, 3])


def on_torch2_node():
    """The plugin's option that holds a job's pods to the one node that keeps the torch 2.15 image."""
    return f"--node-selector kubernetes.io/hostname={rt.torch2_node()}"


def scenario_torch2(plugin):
    image, version = rt.images()["KUBEDIST_EXAMPLE_TORCH2_IMAGE"], rt.torch2_pin()
    with user("plg-torch2", plugin) as (ns, project, env):
        code, out = kubedist(env, project, f"kubectl kubedist run --image {image} {on_torch2_node()} -- torchrun "
                                           "--nnodes=2 --nproc_per_node=2 train.py --epochs 2")
        succeeded(code, out, [0, 1, 2, 3])
        check(re.search(rf"^\[rank 0\]: training finished: .*world size 4, .*torch {re.escape(version)}$", out, re.M)
              is not None, f"the job trained on torch {version}")
        with open(os.path.join(project, "local_rank2.py"), "w") as f:
            f.write(local_rank_script("--local-rank"))
        code, out = kubedist(env, project, f"kubectl kubedist run --image {image} {on_torch2_node()} -- python -m "
                                           "torch.distributed.launch --nproc_per_node=2 local_rank2.py --epochs 2")
        check(re.search(rf"kubedist-launcher: --local-rank-style=auto: torch {re.escape(version)}\S* \(\S+/torch/"
                        r"version\.py\): passing --local-rank=N", out) is not None,
              f"the launcher chose torch 2.x's --local-rank from the image's torch {version}, and said so")
        check(sorted(int(r) for r in re.findall(r"^\[rank (\d+)\]: --local-rank=\1 given$", out, re.M)) == [0, 1],
              "each worker got --local-rank=N with its own LOCAL_RANK")
        succeeded(code, out, [0, 1])


def results(out, count):
    found = {}
    for rank, name, text in re.findall(r"^\[rank (\d+)\]: result (\S+) (\{.*\})$", out, re.M):
        found[int(rank)] = json.loads(text)
    check(sorted(found) == list(range(count)), f"a result line from each of {count} ranks ({sorted(found)})")
    return found


def scenario_libraries(plugin):
    image = rt.images()["KUBEDIST_EXAMPLE_TORCH2_IMAGE"]
    with user("plg-libraries", plugin) as (ns, project, env):
        for script in ("lightning_train.py", "accelerate_train.py", "record_main.py"):
            shutil.copy(os.path.join(WORKERS, script), project)
        with open(os.path.join(project, "report.py"), "w") as f:
            f.write(REPORT_PY)
        run = f"kubectl kubedist run --image {image} {on_torch2_node()} -- torchrun --nnodes=2 --nproc_per_node=2"
        code, out = kubedist(env, project, f"{run} report.py lightning_train.py OUT 2 2")
        check(code == 0, f"Lightning: exit code 0 (got {code})")
        for rank, r in results(out, 4).items():
            check(r["world_size"] == 4 and r["global_rank"] == rank and r["node_rank"] == rank // 2
                  and str(r["local_rank"]) == r["env"]["LOCAL_RANK"] and r["gathered"] == [0, 1, 2, 3]
                  and r["cluster_environment"] == "TorchElasticEnvironment" and r["global_step"] == 6,
                  f"Lightning on rank {rank}: world size 4, its global, local and node rank, TorchElasticEnvironment, "
                  f"gathered [0, 1, 2, 3], 6 steps ({ {k: v for k, v in r.items() if k != 'weights'} })")
        code, out = kubedist(env, project, f"{run} report.py accelerate_train.py OUT")
        check(code == 0, f"Accelerate: exit code 0 (got {code})")
        found = results(out, 4)
        for rank, r in found.items():
            check(r["num_processes"] == 4 and r["process_index"] == rank and r["is_main_process"] == (rank == 0)
                  and str(r["local_process_index"]) == r["env"]["LOCAL_RANK"] and r["backend"] == "gloo"
                  and r["distributed_type"] == "DistributedType.MULTI_CPU" and r["gathered"] == [0, 1, 2, 3]
                  and r["weights"] == found[0]["weights"],
                  f"Accelerate on rank {rank}: 4 processes, its index, MULTI_CPU over gloo, gathered [0, 1, 2, 3], "
                  f"rank 0's weights ({ {k: v for k, v in r.items() if k != 'weights'} })")
        code, out = kubedist(env, project, f"{run} record_main.py 3")
        check(code != 0, f"@record: a non-zero exit code ({code})")
        root = "ValueError: batch 7 of rank 3 has a NaN loss"
        # Whichever pod the operator reads first: node 1's own line, or node 0's, which says why node 1 stopped.
        check(re.search(rf"^last failure: pod \S+-node-[01] .*rank 3 .*exited with code 1.*: {root}", out, re.M)
              is not None, "run prints the job's last failure: rank 3's exception, which @record wrote")
        last = rt.kget("-n", ns, "tj", job_name(out))["status"].get("lastFailure", {})
        check(root in last.get("message", ""), f"status.lastFailure carries @record's root cause ({last})")


if __name__ == "__main__":
    plugin, scenario = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    fn = globals().get(f"scenario_{scenario}")
    if not fn:
        sys.exit("usage: plugin_test.py PLUGIN legacy|localrank|torchrun|elastic|fail|dryrun|pip|detach|torch2|libraries")
    try:
        fn(plugin)
    except (Failure, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"FAIL: {e}", flush=True)
        sys.exit(1)
    log(f"scenario plugin.{scenario} passed")
