#!/usr/bin/env python3
"""Benchmark: kubedist-launcher against Debian's torchrun, side by side in one run (never run by ctest).

Measures, for both launchers with the same flags (--standalone --nproc_per_node 2 --redirects 1 --tee 1; torchrun 1.13 knows only the underscore spellings):
  1. wall time of a trivial 2-process Python job, and the overhead over running the 2 workers directly;
  2. the launcher process's own peak RSS (VmHWM of the launcher, not of its workers);
  3. recovery: from a worker's crash (timestamp written just before it exits) to its replacement starting
     (timestamp written by the restarted worker's first command).
Prints medians and the ratios torchrun/kubedist, and our targets: overhead < 50 ms, RSS < 5 MiB, recovery < 100 ms.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"
ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}
COMMON = ["--standalone", "--nproc_per_node", "2", "--redirects", "1", "--tee", "1"]

# A shell worker, so that its start time is not hidden behind an interpreter's: on the first attempt rank 1
# records the time and exits 1 while rank 0 waits; on the second attempt each worker records when it started.
RECOVERY_WORKER = """#!/bin/sh
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
  if [ "$RANK" = 1 ]; then date +%s.%N > "$BENCH_DIR/crash"; exit 1; fi
  exec sleep 60
fi
date +%s.%N >> "$BENCH_DIR/restart"
"""


def peak_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def run(cmd, env, log_dir):
    """Runs cmd to completion; returns (wall seconds, peak RSS KiB of the launcher process itself)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=log_dir)
    rss = 0
    while proc.poll() is None:  # sample the high-water mark until the process is gone
        value = peak_rss_kib(proc.pid)
        if value:
            rss = max(rss, value)
        time.sleep(0.002)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"benchmark run failed ({proc.returncode}): {' '.join(cmd)}")
    return wall, rss


def bare(script, env):
    start = time.monotonic()
    procs = [subprocess.Popen([PYTHON, "-u", script], env=env, stdout=subprocess.DEVNULL) for _ in range(2)]
    for p in procs:
        p.wait()
    return time.monotonic() - start


def median(values):
    return statistics.median(values) if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--torchrun", default="/usr/bin/torchrun")
    parser.add_argument("--repeat", type=int, default=10, help="runs of kubedist-launcher per measure")
    parser.add_argument("--torchrun-repeat", type=int, default=3, help="runs of torchrun per measure (slow)")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="kubedist-bench-")
    try:
        trivial = os.path.join(work, "trivial.py")
        with open(trivial, "w") as f:
            f.write("pass\n")
        worker = os.path.join(work, "worker.sh")
        with open(worker, "w") as f:
            f.write(RECOVERY_WORKER)
        os.chmod(worker, 0o755)
        launchers = {
            "kubedist": ([args.launcher], args.repeat),
            "torchrun": ([args.torchrun], args.torchrun_repeat),
        }
        bare_times = [bare(trivial, ENV) for _ in range(args.repeat)]
        results = {}
        for name, (cmd, n) in launchers.items():
            walls, rss, recoveries = [], [], []
            for i in range(n):
                logs = tempfile.mkdtemp(dir=work)
                wall, peak = run(cmd + COMMON + ["--log_dir", logs, trivial], ENV, logs)
                walls.append(wall)
                rss.append(peak)
                bench_dir = tempfile.mkdtemp(dir=work)
                env = dict(ENV, BENCH_DIR=bench_dir)
                run(cmd + COMMON + ["--log_dir", logs, "--max_restarts", "1", "--no_python", worker], env, logs)
                with open(os.path.join(bench_dir, "crash")) as f:
                    crash = float(f.read())
                with open(os.path.join(bench_dir, "restart")) as f:
                    first_restart = min(float(line) for line in f if line.strip())
                recoveries.append(first_restart - crash)
            results[name] = (median(walls), median(rss), median(recoveries))

        b = median(bare_times)
        k, t = results["kubedist"], results["torchrun"]
        rows = [
            ("wall time, trivial 2-process job (s)", k[0], t[0]),
            ("overhead over the bare workers (s)", k[0] - b, t[0] - b),
            ("launcher peak RSS (MiB)", k[1] / 1024, t[1] / 1024),
            ("crash -> replacement started (s)", k[2], t[2]),
        ]
        print(f"medians: kubedist-launcher x{args.repeat}, torchrun x{args.torchrun_repeat}; "
              f"bare 2 workers {b:.3f} s (x{args.repeat}); {os.cpu_count()} CPUs")
        print(f"{'measure':40} {'kubedist':>10} {'torchrun':>10} {'torchrun/kubedist':>18}")
        for label, ours, theirs in rows:
            ratio = theirs / ours if ours > 0 else float("inf")
            print(f"{label:40} {ours:10.4f} {theirs:10.4f} {ratio:17.1f}x")
        targets = [("overhead < 50 ms", k[0] - b < 0.050), ("peak RSS < 5 MiB", k[1] / 1024 < 5),
                   ("recovery < 100 ms", k[2] < 0.100)]
        print("targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in targets))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
