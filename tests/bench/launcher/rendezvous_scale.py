#!/usr/bin/env python3
"""Benchmark (never run by ctest): how the rendezvous scales with the number of nodes.

Starts N launchers on this machine, one per "node" (node rank i, one worker each, all on 127.0.0.1), and measures
  1. formation: from the last launcher's start to every worker running (each worker writes its start time), and
  2. re-formation: from one worker's crash (it writes the time, then exits 1) to every node's fresh worker running;
and, for kubedist, the rendezvous (each launcher's --rdzv-trace: when it asks to join and when it holds its place,
before starting its worker; the other nodes' worker starts share the CPUs in that window, so with N processes on one
machine this is far above the rendezvous alone, which rendezvous_alone.py measures):
  3. rendezvous: from the last node's JOIN to every node holding its assignment, and
  4. the same after the crash (every node joins again);
for N = 16, 64, 256, 1024 with kubedist-launcher (`--no-python` shell workers), and with Debian's torchrun and its
c10d rendezvous for the N it can run here (each torchrun agent is a Python process of about 60 MB; they run in a
network namespace of their own, as their store listens on every address; needs root). Prints the
median of RUNS trials per N, the time per node, and torchrun/kubedist ratios.

  rendezvous_scale.py --launcher build/all/launcher-sidecar/kubedist-launcher [--nodes 16,64,256,1024]
                      [--torchrun-nodes 16,64] [--runs 3]
Targets: 1,024 nodes formed in under 1 s, and time growing at most linearly with N.
"""
import argparse
import glob
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}

# The worker: every start appends its time to starts.GROUP_RANK. The first rank-0 worker waits for the crash trigger
# file, records the crash and exits 1; every later worker just runs. (A worker's TORCHELASTIC_RESTART_COUNT cannot
# tell a re-formation: torchrun counts restarts per agent, and only the failed node's agent counts this one.)
WORKER = """#!/bin/sh
d="$BENCH_DIR"
date +%s.%N >> "$d/starts.$GROUP_RANK"
if [ "$RANK" = 0 ] && [ ! -e "$d/crashed" ]; then
  while [ ! -e "$d/crash-now" ]; do sleep 0.05; done
  date +%s.%N > "$d/crashed.tmp" && mv "$d/crashed.tmp" "$d/crashed"
  exit 1
fi
exec sleep 600
"""


def free_port():
    while True:
        port = random.randrange(20000, 60000, 2)
        ok = True
        for p in (port, port + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
        if ok:
            return port


def starts(d):
    """Each group rank's start times."""
    out = {}
    for path in glob.glob(os.path.join(d, "starts.*")):
        try:
            with open(path) as f:
                out[path] = [float(x) for x in f.read().split()]
        except (OSError, ValueError):
            pass
    return out


def wait_starts(d, n, after, seconds):
    """The latest of every group rank's first start after `after`, once n ranks have one; None on timeout."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        fresh = [min(t for t in ts if t > after) for ts in starts(d).values() if any(t > after for t in ts)]
        if len(fresh) >= n:
            return max(fresh)
        time.sleep(0.02)
    return None


def rendezvous_times(path, n):
    """From the launchers' shared --rdzv-trace: for each rendezvous (the first, then after the crash), the time from
    the last node's join to the last node holding its assignment; None where not every node has both."""
    joins, assigned = {}, {}
    try:
        with open(path) as f:
            for line in f:
                ns, node, event = line.split()[:3]
                (joins if event == "join" else assigned).setdefault(node, []).append(int(ns) / 1e9)
    except (OSError, ValueError):
        return None, None
    out = []
    for k in (0, 1):
        if len(joins) < n or len(assigned) < n or any(len(v) <= k for v in (*joins.values(), *assigned.values())):
            out.append(None)
        else:
            out.append(max(v[k] for v in assigned.values()) - max(v[k] for v in joins.values()))
    return tuple(out)


def commands(kind, launcher, n, port, worker, trace):
    cmds = []
    for i in range(n):
        if kind == "kubedist":
            cmds.append([launcher, f"--nnodes={n}", f"--node-rank={i}", "--nproc-per-node=1",
                         "--master-addr=127.0.0.1", f"--master-port={port}", "--max-restarts=1",
                         f"--rdzv-trace={trace}", "--no-python", worker])
        else:
            cmds.append(["/usr/bin/torchrun", f"--nnodes={n}", "--nproc_per_node=1", "--rdzv_backend=c10d",
                         f"--rdzv_endpoint=127.0.0.1:{port}", "--rdzv_id=bench", "--max_restarts=1",
                         "--no_python", "--redirects", "1", "--tee", "1", worker])
    return cmds


def trial(kind, launcher, n, timeout):
    """One formation and one re-formation of n nodes; returns (formation s, re-formation s, rendezvous s,
    rendezvous after the crash s; the last two None for torchrun) or None on failure."""
    d = tempfile.mkdtemp(prefix=f"kubedist-rdzv-{kind}-{n}-")
    worker = os.path.join(d, "worker.sh")
    with open(worker, "w") as f:
        f.write(WORKER)
    os.chmod(worker, 0o755)
    env = dict(ENV, BENCH_DIR=d)
    procs = []
    netns = None
    try:
        port = free_port()
        prefix = []
        if kind == "torchrun":
            # torchrun's c10d store listens on every address: its agents get a network namespace of their own.
            netns = f"kdrdzv-{os.getpid()}"
            subprocess.run(["ip", "netns", "add", netns], check=True)
            subprocess.run(["ip", "-n", netns, "link", "set", "lo", "up"], check=True)
            prefix = ["nsenter", f"--net=/run/netns/{netns}"]
        trace = os.path.join(d, "trace")
        for cmd in commands(kind, launcher, n, port, worker, trace):
            cmd = prefix + cmd
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          cwd=d, start_new_session=True))
        last_start = time.time()
        formed = wait_starts(d, n, 0, timeout)
        if formed is None:
            print(f"  {kind} N={n}: only {len(starts(d))} of {n} workers started within {timeout}s", file=sys.stderr)
            return None
        open(os.path.join(d, "crash-now"), "w").close()
        deadline = time.monotonic() + timeout
        while not os.path.exists(os.path.join(d, "crashed")) and time.monotonic() < deadline:
            time.sleep(0.02)
        with open(os.path.join(d, "crashed")) as f:
            crashed = float(f.read().strip())
        again = wait_starts(d, n, crashed, timeout)
        if again is None:
            print(f"  {kind} N={n}: the group did not re-form within {timeout}s", file=sys.stderr)
            return None
        # Every node's second assignment lands before its fresh worker writes its start.
        rdzv, rdzv_again = rendezvous_times(trace, n) if kind == "kubedist" else (None, None)
        return formed - last_start, again - crashed, rdzv, rdzv_again
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in procs:
            p.wait()
        subprocess.run(["pkill", "-KILL", "-f", worker], stderr=subprocess.DEVNULL)
        if netns:
            subprocess.run(["ip", "netns", "del", netns], stderr=subprocess.DEVNULL)
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--nodes", default="16,64,256,1024")
    ap.add_argument("--torchrun-nodes", default="16,64")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    a.launcher = os.path.abspath(a.launcher)
    rows = {}
    for kind, ns in (("kubedist", a.nodes), ("torchrun", a.torchrun_nodes)):
        for n in [int(x) for x in ns.split(",") if x]:
            results = [r for r in (trial(kind, a.launcher, n, a.timeout) for _ in range(a.runs)) if r]
            if results:
                med = [statistics.median(r[i] for r in results) if all(r[i] is not None for r in results) else None
                       for i in range(4)]
                rows[(kind, n)] = (*med, len(results))
                rdzv = "" if med[2] is None else f"; rendezvous {med[2] * 1000:.1f} ms, after the crash {med[3] * 1000:.1f} ms"
                print(f"[rdzv] {kind} N={n}: formed {med[0]:.3f}s, re-formed {med[1]:.3f}s{rdzv} (median of "
                      f"{len(results)}: {[tuple(None if x is None else round(x, 4) for x in r) for r in results]})",
                      file=sys.stderr)
    print(f"Rendezvous scale: N nodes on one machine ({os.cpu_count()} CPUs), one worker each; medians of {a.runs}")
    print("  (formed: from the last launcher's start, so it includes that launcher's own start-up: Python and torch"
          " for torchrun)")
    print("  (rendezvous: from the last node's JOIN to every node holding its assignment, before its own worker starts"
          " but beside the other nodes' starts; again: the same after the crash)")
    print(f"  {'':10} {'N':>5} {'formed':>9} {'per node':>10} {'re-formed':>10} {'per node':>10} {'rendezvous':>11}"
          f" {'again':>9}")
    for (kind, n), (f, r, z, z2, k) in sorted(rows.items()):
        zs = f"{z * 1000:9.1f}ms {z2 * 1000:7.1f}ms" if z is not None and z2 is not None else f"{'-':>11} {'-':>9}"
        print(f"  {kind:10} {n:5d} {f:8.3f}s {f / n * 1000:8.2f}ms {r:9.3f}s {r / n * 1000:8.2f}ms {zs}  ({k} runs)")
    for (kind, n), (f, r, _, _, _) in sorted(rows.items()):
        if kind == "torchrun" and ("kubedist", n) in rows:
            kf, kr = rows[("kubedist", n)][:2]
            print(f"  torchrun/kubedist at N={n}: formation {f / kf:.1f}x, re-formation {r / kr:.1f}x")


if __name__ == "__main__":
    main()
