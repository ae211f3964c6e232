#!/usr/bin/env python3
"""The operator's folders include only the folders below them: the layers docs/architecture.md draws and
operator/CMakeLists.txt links. A change that makes a pure folder include an I/O one, or the core include an
integration, fails here with the file and the include.

usage: layers_test.py OPERATOR_SRC_DIR
"""
import pathlib
import re
import sys

API = {"common", "contract", "trainingjob/api"}
RENDER = API | {"trainingjob/render"}
DECIDE = RENDER | {"trainingjob/decide"}
# Which folders each folder may include (its own included).
ALLOWED = {
    "common": {"common"},
    "trainingjob/api": API,
    "trainingjob/render": RENDER,
    "trainingjob/decide": DECIDE,  # the core: no integration, no I/O
    "trainingjob/gang": DECIDE | {"trainingjob/gang"},
    "trainingjob/kueue": DECIDE | {"trainingjob/kueue"},
    "kube": {"common", "kube"},
    "controller": {"common", "kube", "controller"},
    "metrics": {"common", "metrics"},
    "rendezvous": {"common", "contract", "rendezvous"},
    "trainingjob/act": DECIDE | {"trainingjob/gang", "trainingjob/kueue", "kube", "controller", "metrics",
                                 "rendezvous", "trainingjob/act"},
}
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def folder_of(path: str) -> str:
    parts = path.split("/")
    return "/".join(parts[:2]) if parts[0] == "trainingjob" else parts[0]


def main() -> int:
    src = pathlib.Path(sys.argv[1])
    wrong = []
    files = sorted(p for p in src.rglob("*") if p.suffix in (".h", ".cc"))
    for f in files:
        folder = folder_of(str(f.relative_to(src)))
        if folder not in ALLOWED:
            wrong.append(f"{f}: folder {folder} is in no layer (add it to layers_test.py and docs/architecture.md)")
            continue
        for inc in INCLUDE.findall(f.read_text()):
            if folder_of(inc) not in ALLOWED[folder]:
                wrong.append(f"{f}: {folder} may not include {inc}")
    for w in wrong:
        print(w)
    print(f"{len(files)} files, {len(wrong)} includes across layers")
    return 1 if wrong or not files else 0


if __name__ == "__main__":
    sys.exit(main())
