#!/usr/bin/env python3
"""Benchmark: what reporting progress costs a training loop (never run by ctest).

Under the real launcher (--standalone, one worker, Debian's PyTorch), one worker times 10,000 training steps of a
small model (forward, backward, SGD on a 64x64 linear layer) without and with `progress.step(i + 1, total=n,
loss=...)` after each step, alternating the two loops ROUNDS times in the same process so that both see the same
machine; then 10,000 bare progress.step() calls, reporting (under the launcher) and not (KUBEDIST_PROGRESS unset).
Prints the medians, their ratio and the cost per step; the goal: no measurable difference (ratio within the
rounds' own spread).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
HELPER = os.path.join(HERE, "..", "..", "..", "launcher-sidecar", "python")

WORKER = r'''
import json, os, sys, time
import torch
from kubedist import progress
steps, rounds, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.001)
x = torch.randn(8, 64)

def loop(report):
    start = time.perf_counter()
    for i in range(steps):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        value = loss.item()
        if report:
            progress.step(i + 1, total=steps, loss=value)
    return time.perf_counter() - start

def bare(n):
    start = time.perf_counter()
    for i in range(n):
        progress.step(i + 1, total=n + 1, loss=0.5)
    return time.perf_counter() - start

loop(False)  # warm up
result = {"enabled": progress.enabled(), "without": [], "with": []}
for r in range(rounds):
    for report in ((False, True) if r % 2 == 0 else (True, False)):
        result["with" if report else "without"].append(loop(report))
result["bare"] = [bare(steps) for _ in range(rounds)]
with open(out, "w") as f:
    json.dump(result, f)
'''


def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])}... failed ({p.returncode}):\n{p.stderr[-2000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--python", default=PYTHON, help="the workers' interpreter, with torch (default %(default)s)")
    args = ap.parse_args()
    python = args.python
    env = {"PATH": os.path.dirname(python) + ":/usr/bin:/bin", "PYTHON_EXEC": python, "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryDirectory(prefix="kubedist-progress-bench-") as tmp:
        worker = os.path.join(tmp, "worker.py")
        with open(worker, "w") as f:
            f.write(WORKER)
        under = os.path.join(tmp, "under.json")
        run([args.launcher, "--standalone", "--nproc-per-node=1", worker, str(args.steps), str(args.rounds), under],
            dict(env, TMPDIR=tmp))
        outside = os.path.join(tmp, "outside.json")
        run([python, worker, str(args.steps), str(args.rounds), outside], dict(env, PYTHONPATH=HELPER))
        with open(under) as f:
            r = json.load(f)
        with open(outside) as f:
            o = json.load(f)
    if not r["enabled"] or o["enabled"]:
        sys.exit("the helper was not enabled under the launcher, or was outside it")
    med = statistics.median
    without, with_ = med(r["without"]), med(r["with"])
    spread = (max(r["without"]) - min(r["without"])) / without
    print(f"{args.steps} training steps, {args.rounds} rounds each, alternating (the machine may be shared: "
          f"read medians and ratios)")
    print(f"  without reporting: median {without:.3f} s ({without / args.steps * 1e6:.1f} us/step); "
          f"rounds {min(r['without']):.3f}-{max(r['without']):.3f} s (spread {spread * 100:.1f}%)")
    print(f"  with progress.step each step: median {with_:.3f} s ({with_ / args.steps * 1e6:.1f} us/step); "
          f"rounds {min(r['with']):.3f}-{max(r['with']):.3f} s")
    # Each round ran both loops back to back: their ratio sees the same machine load.
    paired = med([w / wo for w, wo in zip(r["with"], r["without"])])
    print(f"  ratio with/without: medians {with_ / without:.4f} ({(with_ - without) / args.steps * 1e6:+.2f} us/step); "
          f"median of the rounds' own ratios {paired:.4f}")
    print(f"  bare progress.step(), reporting under the launcher: {med(r['bare']) / args.steps * 1e6:.2f} us/call "
          f"(at most 10 reports a second are sent; the rest is a clock read)")
    print(f"  bare progress.step(), outside a launcher (no-op): {med(o['bare']) / args.steps * 1e6:.2f} us/call")


if __name__ == "__main__":
    main()
