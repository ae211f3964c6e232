#!/usr/bin/env python3
"""Each folder includes only the folders below it: the layers docs/architecture.md draws and the CMakeLists link.
A change that makes a pure folder include an I/O one, the operator's core include an integration, or a layer of
the launcher include one above it, fails here naming the file and the include.

usage: layers_test.py operator|kubectl|launcher SRC_DIR
  operator  SRC_DIR = operator/src
  kubectl   SRC_DIR = operator/kubectl (its includes are spelled kubectl/..., beside the operator's folders)
  launcher  SRC_DIR = launcher-sidecar/src
"""
import pathlib
import re
import sys

# The operator (operator/src).
API = {"common", "contract", "trainingjob/api"}
RENDER = API | {"trainingjob/render"}
DECIDE = RENDER | {"trainingjob/decide"}
OPERATOR = {
    "common": {"common"},
    "trainingjob/api": API,
    "trainingjob/render": RENDER,
    "trainingjob/decide": DECIDE,  # the core: no integration, no I/O
    "trainingjob/gang": DECIDE | {"trainingjob/gang"},
    "trainingjob/kueue": DECIDE | {"trainingjob/kueue"},
    "trainingjob/netpol": DECIDE | {"trainingjob/netpol"},
    "kube": {"common", "kube"},
    "controller": {"common", "kube", "controller"},
    "metrics": {"common", "metrics"},
    "rendezvous": {"common", "contract", "rendezvous"},
    "trainingjob/act": DECIDE | {"trainingjob/gang", "trainingjob/kueue", "trainingjob/netpol", "kube", "controller",
                                 "metrics", "rendezvous", "trainingjob/act"},
}

# The kubectl plugin (operator/kubectl): cli/ and render/ are pure and see the operator's api/ and the shared
# contract only; act/ talks to the cluster through the operator's kube/.
KUBECTL_CLI = {"common", "contract", "trainingjob/api", "kubectl/cli"}
KUBECTL_RENDER = KUBECTL_CLI | {"kubectl/render"}
KUBECTL_ACT = KUBECTL_RENDER | {"kube", "kubectl/act"}
KUBECTL = {
    "kubectl/cli": KUBECTL_CLI,
    "kubectl/render": KUBECTL_RENDER,
    "kubectl/act": KUBECTL_ACT,
    "kubectl": KUBECTL_ACT,  # main.cc
}

# The launcher (launcher-sidecar/src); "" is the top: main.cc, the agent and --install, which may include all.
L_UTIL = {"util"}
L_CLI = L_UTIL | {"contract", "cli"}
L_IO = L_UTIL | {"io"}
L_PROCESS = L_CLI | {"process"}
L_WORKERS = L_PROCESS | L_IO | {"workers"}
L_PROGRESS = L_CLI | L_IO | {"progress"}
L_RENDEZVOUS = L_WORKERS | L_PROGRESS | {"rendezvous"}
LAUNCHER = {
    "util": L_UTIL,
    "cli": L_CLI,
    "io": L_IO,
    "process": L_PROCESS,
    "workers": L_WORKERS,
    "progress": L_PROGRESS,
    "rendezvous": L_RENDEZVOUS,
    "": L_RENDEZVOUS | {""},
}

TREES = {"operator": OPERATOR, "kubectl": KUBECTL, "launcher": LAUNCHER}
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def folder_of(path: str) -> str:
    """The layer a file or an include belongs to: trainingjob/X and kubectl/X by two parts, the rest by one."""
    parts = path.split("/")
    if len(parts) == 1:
        return ""
    if parts[0] in ("trainingjob", "kubectl"):
        return "/".join(parts[:2]) if len(parts) > 2 else parts[0]
    return parts[0]


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in TREES:
        print(__doc__, file=sys.stderr)
        return 2
    allowed, src = TREES[sys.argv[1]], pathlib.Path(sys.argv[2])
    prefix = "kubectl/" if sys.argv[1] == "kubectl" else ""
    wrong = []
    files = sorted(p for p in src.rglob("*") if p.suffix in (".h", ".cc"))
    for f in files:
        folder = folder_of(prefix + str(f.relative_to(src)))
        if folder not in allowed:
            wrong.append(f"{f}: folder '{folder}' is in no layer (add it to layers_test.py and docs/architecture.md)")
            continue
        for inc in INCLUDE.findall(f.read_text()):
            if folder_of(inc) not in allowed[folder]:
                wrong.append(f"{f}: {folder or 'the top'} may not include {inc}")
    for w in wrong:
        print(w)
    print(f"{sys.argv[1]}: {len(files)} files, {len(wrong)} includes across layers")
    return 1 if wrong or not files else 0


if __name__ == "__main__":
    sys.exit(main())
