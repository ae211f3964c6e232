#!/usr/bin/python3
"""Docs that cannot rot: what the README and docs/ show is checked against the code and a real API server.

usage: docs_test.py links                  every relative link and #anchor in the repository's Markdown resolves
       docs_test.py reference              every env var the operator and the launcher set, every metric, and every
                                           Event and condition reason the operator writes is documented, and
                                           nothing documented there is gone from the code
       docs_test.py blocks BUILD_DIR       (KUBECONFIG of the test cluster) every YAML block of the README and docs/
                                           is accepted by `kubectl apply --dry-run=server` (or as marked), and every
                                           shell block marked to run runs

How a fenced block in the README or docs/ is checked, by the HTML comment on the line before it:
    (none), yaml                        kubectl apply --dry-run=server in a fresh namespace
    <!-- check: trainingjob-fragment -->  merged into a minimal TrainingJob, then the same
    <!-- check: helm-values -->           helm template helm/kubedist -f BLOCK (the chart's values schema applies)
    <!-- check: fragment (WHY) -->        YAML or JSON that must parse, no more (say why it cannot be applied)
    <!-- check: run -->                   a shell block, run with bash in the repository root against the test
                                          cluster, KUBECONFIG pointing at a fresh namespace (the blocks of one
                                          file run in order in the same namespace); it must exit 0
    <!-- check: skip (WHY) -->            a shell block that is not run (say why: it starts clusters, changes
                                          your cluster, builds images...)
A shell block (sh, bash, shell, console) without a mark fails the test: each must say whether it runs. Blocks
without a language, and text, are output and are not checked.
"""
import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def rel(path):
    return os.path.relpath(path, ROOT)


def tracked_markdown():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "*.md"],
                         capture_output=True, text=True)
    files = [os.path.join(ROOT, f) for f in out.stdout.split()] if out.returncode == 0 else \
        glob.glob(os.path.join(ROOT, "**", "*.md"), recursive=True)
    return sorted(f for f in files if os.path.exists(f) and "/build/" not in f and "/.cache/" not in f)


def docs_markdown():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                recursive=True))


# --- links ------------------------------------------------------------------------------------------------------

FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.S | re.M)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, counts = set(), {}
    with open(path) as f:
        text = FENCE.sub("", f.read())
    for m in re.finditer(r"^#{1,6} (.+?)\s*#*$", text, re.M):
        s = slug(m.group(1))
        n = counts.get(s, 0)
        counts[s] = n + 1
        found.add(s if n == 0 else f"{s}-{n}")
    found.update(re.findall(r'<a (?:name|id)="([^"]+)"', text))
    return found


def links():
    files = tracked_markdown()
    checked = 0
    for path in files:
        with open(path) as f:
            text = FENCE.sub("", f.read())
        text = re.sub(r"`[^`\n]*`", "", text)
        for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
                continue  # http:, https:, mailto:: not ours to check offline
            checked += 1
            where, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), where)) if where else path
            if not os.path.exists(dest):
                check(False, f"{rel(path)}: link {target}: {rel(dest)} does not exist")
                continue
            if frag and dest.endswith(".md") and frag not in anchors(dest):
                check(False, f"{rel(path)}: link {target}: no heading #{frag} in {rel(dest)}")
    check(checked > 0, f"{checked} relative links in {len(files)} Markdown files checked")


# --- reference: env vars, metrics, reasons ------------------------------------------------------------------

def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def section(text, heading):
    """The text under a heading, up to the next heading of the same or a higher level."""
    m = re.search(r"^(#+) " + re.escape(heading) + r"\s*$", text, re.M)
    if not m:
        return ""
    level = len(m.group(1))
    end = re.compile(r"^#{1,%d} " % level, re.M).search(text, m.end())
    return text[m.end():end.start() if end else len(text)]


def first_column_names(text):
    names = set()
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            first = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", first))
    return names


def env_set_by_code():
    """The variables the operator puts on a trainer, the launcher on each worker, and the ones in the contract the
    launcher reads that the operator leaves to the user (the pod's env), read from their sources."""
    pod_env = read("launcher-sidecar/contract/contract/pod_env.h")
    env_cc = read("operator/src/trainingjob/render/env.cc")
    used = set(re.findall(r"contract::(k\w+)", env_cc))
    names, user_names = set(), set()
    for const, name in re.findall(r'constexpr const char\* (k\w+) = "([A-Z][A-Z0-9_]*)";', pod_env):
        (names if const in used else user_names).add(name)
    flags = re.findall(r'constexpr const char\* kFlag\w+ = "([a-z-]+)";', pod_env)
    for const in re.findall(r"pet_name\(contract::(kFlag\w+)\)", env_cc):
        flag = re.search(r"constexpr const char\* " + const + r' = "([a-z-]+)";', pod_env)
        if flag:
            names.add("PET_" + flag.group(1).upper().replace("-", "_"))
    check(len(flags) > 0, f"pod_env.h names {len(flags)} launcher flags the operator sets as PET_*")
    operator_names = names
    launcher_names = set()
    for path in glob.glob(os.path.join(ROOT, "launcher-sidecar", "src", "**", "*.cc"), recursive=True):
        with open(path) as f:
            launcher_names.update(re.findall(r'\bset\("([A-Z][A-Z0-9_]*)"', f.read()))
    return operator_names, launcher_names, user_names


def metric_names_in_code():
    names = set()
    for top in ("operator/src", "launcher-sidecar/src"):
        for path in glob.glob(os.path.join(ROOT, top, "**", "*.cc"), recursive=True):
            with open(path) as f:
                names.update(re.findall(r'"(kubedist_[a-z0-9_]+)"', f.read()))
    return names


# CamelCase string literals in the operator's decisions that are not reasons it writes on a TrainingJob.
NOT_REASONS = {
    # Kubernetes' words the code reads or writes elsewhere: kinds, field values, Event types, condition statuses
    "All", "Background", "DeleteOptions", "ExitCode", "Never", "None", "OnFailure", "Opaque", "Pod", "PodGroup",
    "Secret", "Service", "TCP", "TrainingJob", "TrainingJobs", "Workload", "WorkloadPriorityClass", "True", "False",
    "Unknown", "Normal", "Warning", "Ready", "PodScheduled", "PodGroupScheduled", "PodGroupInitiallyScheduled",
    "RuntimeDefault", "NotIn", "Node", "NoSchedule", "NetworkPolicy", "Ingress",
    # a taint key the operator reads as a termination notice (decide/spares.h)
    "ToBeDeletedByClusterAutoscaler",
    # spec.placement.onePodPerNode's values (the CRD's reference has them)
    "Preferred", "Required",
    # pod and container reasons the operator reads to tell a lost pod from a failed one (lost_pods.cc), and the
    # kubelet's admission refusals from a failed one (failures.cc)
    "NodeAffinity", "OutOfpods", "NodeShutdown", "Shutdown", "Terminated", "NodeName", "NodePorts", "OutOf",
    "PodOSNotSupported", "PodOSSelectorNodeLabelDoesNotMatch", "SysctlForbidden", "TaintToleration",
    "TopologyAffinityError", "UnexpectedAdmissionError", "UnexpectedPredicateFailureType", "UnknownReason",
    # the phases, documented with the phase in the reference (also condition types there)
    "Pending", "Running", "Succeeded", "Failed",
    # conditions the operator writes on Kueue's Workload, and Kueue's reasons it passes through (kueue.cc)
    "QuotaReserved", "Finished", "Requeued", "NoReservation", "Preempted", "NodeFailures",
    # values of status.elastic.reason, described in the CRD
    "Unschedulable", "Growing",
}


def reasons_in_code():
    """Every CamelCase literal in the operator's decide and act layers: the reasons and condition types it writes,
    less the words of Kubernetes' it only reads (NOT_REASONS)."""
    found = {}
    for path in glob.glob(os.path.join(ROOT, "operator", "src", "trainingjob", "**", "*.cc"), recursive=True) + \
            glob.glob(os.path.join(ROOT, "operator", "src", "trainingjob", "**", "*.h"), recursive=True):
        with open(path) as f:
            for word in re.findall(r'"([A-Z][a-z]+(?:[A-Z][a-z]*)*|TTLExpired)"', f.read()):
                found.setdefault(word, rel(path))
    return {w: p for w, p in found.items() if w not in NOT_REASONS}


def same_names(in_code, documented, missing, gone):
    """Fails for each name the code has and the docs lack (missing) and each the docs have and the code lost (gone)."""
    for name in sorted(in_code - documented):
        check(False, missing.format(name))
    for name in sorted(documented - in_code):
        check(False, gone.format(name))


def reference():
    ref = read("docs/reference/trainingjob.md")
    env = section(ref, "The trainer's environment")
    operator_names, launcher_names, user_names = env_set_by_code()
    for who, heading, in_code, whom in (
            ("the operator", "Set on the trainer container by the operator", operator_names, "the trainer"),
            ("the launcher", "Set for each worker process by the launcher", launcher_names, "its workers")):
        listed = first_column_names(section(env, heading))
        check(in_code and listed, f"{who} sets {len(in_code)} variables on {whom}")
        same_names(in_code, listed, f"{who} sets {{}} on {whom}, and docs/reference/trainingjob.md does not list it",
                   f"docs/reference/trainingjob.md lists {{}} as set by {who}, and it no longer is")
    # The contract's variables the operator does not set are the user's to set; the launcher reads them.
    listed = first_column_names(section(env, "Read by the launcher when you set them"))
    for name in sorted(user_names - listed):
        check(False, f"the launcher reads {name} from the pod's env, and docs/reference/trainingjob.md's "
                     "'Read by the launcher when you set them' does not list it")

    in_code = metric_names_in_code()
    check(len(in_code) > 10, f"{len(in_code)} metric names in the code")
    same_names(in_code, set(re.findall(r"`(kubedist_[a-z0-9_]+)`", read("docs/metrics.md"))),
               "metric {} is served and docs/metrics.md does not describe it",
               "docs/metrics.md describes {}, which no code serves")

    guide = read("docs/guides/troubleshooting.md")
    named = set(re.findall(r"`([A-Za-z]+)`", guide))
    reasons = reasons_in_code()
    check(len(reasons) > 20, f"{len(reasons)} reasons and condition types in the operator's code")
    for word, where in sorted(reasons.items()):
        if word not in named:
            check(False, f"{where} writes {word}, and docs/guides/troubleshooting.md does not say what it means "
                         "(or, if it is no reason the operator writes, add it to NOT_REASONS in this test)")
    if not failures:
        print("ok: every variable, metric and reason in the code is documented, and nothing documented is gone")


# --- blocks ---------------------------------------------------------------------------------------------------

BLOCK = re.compile(r"(?:^<!-- check: ([a-z-]+)(?: \(([^)]*)\))? -->\n)?^```([a-z]*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
SHELLS = {"sh", "bash", "shell", "console"}
BASE_JOB = {
    "apiVersion": "kubedist.io/v1alpha1", "kind": "TrainingJob", "metadata": {"name": "fragment"},
    "spec": {"template": {"spec": {"containers": [{"name": "trainer", "image": "busybox", "command": ["true"]}]}}},
}


def merge(base, extra):
    out = copy.deepcopy(base)
    for k, v in extra.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def blocks_of(path):
    with open(path) as f:
        text = f.read()
    for m in BLOCK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        yield line, m.group(1), m.group(2), m.group(3), m.group(4)


def run(*args, input=None, env=None, timeout=120, cwd=None):
    return subprocess.run(args, input=input, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)


class Namespace:
    """A fresh namespace, and a kubeconfig whose context defaults to it; deleted on exit."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        run("kubectl", "delete", "namespace", self.name, "--ignore-not-found", "--wait=true", timeout=120)
        p = run("kubectl", "create", "namespace", self.name)
        if p.returncode != 0:
            sys.exit(f"FAIL: kubectl create namespace {self.name}: {p.stderr.strip()}")
        self.dir = tempfile.mkdtemp(prefix="docs-test-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        shutil.copy(os.environ["KUBECONFIG"], self.kubeconfig)
        env = dict(os.environ, KUBECONFIG=self.kubeconfig)
        run("kubectl", "config", "set-context", "--current", "--namespace", self.name, env=env)
        return self

    def __exit__(self, *exc):
        run("kubectl", "delete", "namespace", self.name, "--ignore-not-found", "--wait=false")
        shutil.rmtree(self.dir, ignore_errors=True)


def dry_run(docs, ns, where):
    p = run("kubectl", "apply", "--dry-run=server", "-n", ns, "-f", "-",
            input="\n---\n".join(yaml.safe_dump(d) for d in docs))
    check(p.returncode == 0, f"{where}: kubectl apply --dry-run=server accepts it" +
          ("" if p.returncode == 0 else ": " + (p.stderr.strip() or p.stdout.strip())))


def blocks(build):
    crd = os.path.join(ROOT, "crd", "kubedist.io_trainingjobs.yaml")
    p = run("kubectl", "apply", "--server-side", "--force-conflicts", "-f", crd)
    if p.returncode != 0:
        sys.exit(f"FAIL: cannot install the CRD: {p.stderr.strip()}")
    run("kubectl", "wait", "--for=condition=Established", "--timeout=60s", "crd/trainingjobs.kubedist.io")
    # Kueue's objects in the guides are checked against Kueue's own CRDs (no manager: nothing admits).
    cluster = os.path.basename(os.path.dirname(os.environ["KUBECONFIG"]))
    p = run(os.path.join(ROOT, "deploy", "local", "cluster.sh"), "kueue-crds", cluster, timeout=300)
    if p.returncode != 0:
        sys.exit(f"FAIL: cannot install Kueue's CRDs: {p.stderr.strip()}")
    path_env = os.pathsep.join([os.path.join(build, "operator"), os.path.join(build, "launcher-sidecar"),
                                os.environ.get("PATH", "")])
    counts = {"applied": 0, "run": 0, "skipped": 0, "fragments": 0}
    for i, path in enumerate(docs_markdown()):
        with Namespace(f"docs-{i}-" + re.sub(r"[^a-z0-9]", "", os.path.basename(path).lower())[:30]) as ns:
            for line, mark, why, lang, body in blocks_of(path):
                where = f"{rel(path)}:{line}"
                if mark in ("fragment", "skip") and not (why or "").strip():
                    check(False, f"{where}: <!-- check: {mark} --> needs a reason in parentheses")
                if lang in ("yaml", "yml"):
                    try:
                        docs = [d for d in yaml.safe_load_all(body) if d is not None]
                    except yaml.YAMLError as e:
                        check(False, f"{where}: not YAML: {e}")
                        continue
                    if mark == "fragment":
                        counts["fragments"] += 1
                        continue
                    if mark == "helm-values":
                        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
                            f.write(body)
                            f.flush()
                            p = run("helm", "template", "kd", os.path.join(ROOT, "helm", "kubedist"), "-f", f.name)
                        check(p.returncode == 0, f"{where}: helm template accepts these values" +
                              ("" if p.returncode == 0 else ": " + p.stderr.strip()))
                        counts["applied"] += 1
                        continue
                    if mark == "trainingjob-fragment":
                        docs = [merge(BASE_JOB, d) for d in docs]
                    elif mark is not None:
                        check(False, f"{where}: unknown mark '{mark}' on a YAML block")
                        continue
                    dry_run(docs, ns.name, where)
                    counts["applied"] += 1
                elif lang == "json":
                    try:
                        json.loads(body)
                    except ValueError as e:
                        check(False, f"{where}: not JSON: {e}")
                elif lang in SHELLS:
                    if mark == "skip":
                        counts["skipped"] += 1
                    elif mark == "run":
                        env = dict(os.environ, KUBECONFIG=ns.kubeconfig, PATH=path_env)
                        try:
                            p = run("bash", "-euo", "pipefail", "-c", body, env=env, timeout=180, cwd=ROOT)
                            ok, out = p.returncode == 0, (p.stdout + p.stderr).strip()[-1500:]
                        except subprocess.TimeoutExpired:
                            ok, out = False, "timed out after 180 s"
                        check(ok, f"{where}: the commands run" + ("" if ok else ":\n" + out))
                        counts["run"] += 1
                    else:
                        check(False, f"{where}: a {lang} block without <!-- check: run --> or "
                                     "<!-- check: skip (why) --> on the line before it")
    print(f"blocks: {counts['applied']} applied or rendered, {counts['fragments']} fragments parsed, "
          f"{counts['run']} shell blocks run, {counts['skipped']} skipped")
    check(counts["applied"] > 0 and counts["run"] > 0, "some blocks were applied and some run")


def main(argv):
    if not argv:
        sys.exit(__doc__)
    if argv[0] == "links":
        links()
    elif argv[0] == "reference":
        reference()
    elif argv[0] == "blocks" and len(argv) == 2:
        blocks(argv[1])
    else:
        sys.exit(__doc__)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
