"""Recovery benchmark (not a test; never run by ctest): how long a real 3 x 2 gloo DDP job on the kwok cluster,
its pods made real by the e2e PodRunner, takes to recover from

  worker crash, in place   one worker is SIGKILLed; the launchers restart the whole group in their pods
  pod loss                 node 1's pod dies with its processes and is deleted; the operator recreates it and
                           the launchers on the other nodes re-form the group with it
  pod loss, elastic        the job is elastic (2:3) and every node is cordoned: node 2's pod is lost and cannot be
                           placed again, so the launchers go on with 2 nodes (the operator gives the pod up)
  pod recreation           the same worker crash with maxRestarts 0, so every launcher exits, every pod fails
                           and the operator recreates all three (the path of operators without in-place restart)

Each figure is measured from the event to (a) all worker processes of the new group running (fresh pids; 6, or
4 after the elastic shrink) and (b) training resumed: rank 0 completed step 0 of a new attempt, which needs every
rank in an allreduce.
Median, min and max of TRIALS (5) per path, and the ratios to the pod-recreation path.

env: TRIALS (5), PATHS ("inplace podloss shrink recreate"), DEBUG=1 prints the fresh workers' command lines
usage: recovery.py OPERATOR LAUNCHER    (KUBECONFIG and KUBEDIST_SOURCE_DIR set; tests/bench/e2e/recovery.sh does it)
"""
import os
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.environ["KUBEDIST_SOURCE_DIR"], "tests/e2e"))
from e2e_test import Env, Failure, eventually, log  # noqa: E402

TRIALS = int(os.environ.get("TRIALS", "5"))
WORKERS = 6


def worker_pids(env):
    """Pids of the worker processes: the children of every pod's launcher."""
    pids = set()
    for p in env.runner.running().values():
        try:
            with open(f"/proc/{p.proc.pid}/task/{p.proc.pid}/children") as f:
                pids.update(int(x) for x in f.read().split())
        except OSError:
            pass
    return pids


def steps_seen(env):
    return len(env.progress())


def measure(env, before_pids, lines_before, act, workers=WORKERS):
    """Runs act() and returns (seconds until `workers` fresh workers run, seconds until a new attempt's step 0)."""
    t0 = time.monotonic()
    act()
    workers_at = None
    deadline = t0 + 300
    while time.monotonic() < deadline:
        now = time.monotonic()
        if workers_at is None:
            pids = worker_pids(env)
            if len(pids) == workers and not pids & before_pids:
                workers_at = now
                if os.environ.get("DEBUG"):
                    for pid in pids:
                        try:
                            with open(f"/proc/{pid}/cmdline") as f:
                                log(f"{pid}: {f.read().replace(chr(0), ' ')[:150]}")
                        except OSError as e:
                            log(f"{pid}: {e}")
        if any(step == 0 for (_, _, step) in env.progress()[lines_before:]):
            return (workers_at or now) - t0, now - t0
        time.sleep(0.01)
    raise Failure("training did not resume within 300 s")


def steady(env, name):
    """Waits until the group trains on all 3 nodes past step 2 and returns its workers' pids."""
    def ready():
        pids = worker_pids(env)
        prog = env.progress()
        return pids if len(pids) == WORKERS and prog and prog[-1][0] == WORKERS and prog[-1][2] >= 2 else None
    return eventually(240, f"{name} training on 6 workers", ready, 0.1)


def kill_one_worker(env, pod):
    launcher = env.runner.running()[pod].proc.pid
    with open(f"/proc/{launcher}/task/{launcher}/children") as f:
        victim = int(f.read().split()[0])
    os.kill(victim, signal.SIGKILL)


def run_shrink(operator, launcher):
    """One job per trial: the shrink cannot be undone without letting the job grow back first."""
    figures = []
    for trial in range(TRIALS):
        with Env(operator, launcher, "bench-shrink") as env:
            env.create_job("rec", 3, env.train_command(1_000_000, "--step-sleep", "0.05"), min_replicas=2,
                           max_replicas=3, max_restarts=1000)
            pids = steady(env, "rec")
            lines = steps_seen(env)
            env.cordon_all()
            workers_s, resumed_s = measure(env, pids, lines, lambda: env.lose_pod("rec-node-2"), workers=4)
            log(f"shrink trial {trial + 1}: workers running again after {workers_s:.2f}s, "
                f"training resumed after {resumed_s:.2f}s")
            figures.append((workers_s, resumed_s))
    return figures


def run_path(operator, launcher, path):
    if path == "shrink":
        return run_shrink(operator, launcher)
    figures = []
    with Env(operator, launcher, f"bench-{path}") as env:
        train = env.train_command(1_000_000, "--step-sleep", "0.05")
        if path == "recreate":
            env.create_job("rec", 3, train, max_restarts=0, backoff_limit=1000)
        else:
            env.create_job("rec", 3, train, max_restarts=1000)
        for trial in range(TRIALS):
            pids = steady(env, "rec")
            lines = steps_seen(env)
            if path == "podloss":
                act = lambda: env.lose_pod("rec-node-1")  # noqa: E731
            else:
                act = lambda: kill_one_worker(env, "rec-node-1")  # noqa: E731
            workers_s, resumed_s = measure(env, pids, lines, act)
            log(f"{path} trial {trial + 1}: workers running again after {workers_s:.2f}s, "
                f"training resumed after {resumed_s:.2f}s")
            figures.append((workers_s, resumed_s))
    return figures


def summary(values):
    return f"median {statistics.median(values):6.2f} s  (min {min(values):5.2f}, max {max(values):5.2f})"


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    operator, launcher = sys.argv[1:]
    results = {}
    try:
        for path in os.environ.get("PATHS", "inplace podloss shrink recreate").split():
            results[path] = run_path(operator, launcher, path)
    except Failure as e:
        print(f"recovery.py: {e}", file=sys.stderr)
        return 1
    titles = {"inplace": "worker crash, in-place group restart",
              "podloss": "pod loss, one pod recreated, group re-formed",
              "shrink": "pod loss, no capacity: the elastic group goes on with 2 nodes",
              "recreate": "worker crash, all pods recreated (maxRestarts 0)"}
    print(f"\nrecovery of a 3 nodes x 2 processes gloo DDP job, {TRIALS} trials each")
    for path, figs in results.items():
        print(f"  {titles[path]}")
        print(f"    workers running again  {summary([w for w, _ in figs])}")
        print(f"    training resumed       {summary([r for _, r in figs])}")
    if "recreate" not in results:
        return 0
    base = statistics.median(r for _, r in results["recreate"])
    for path in [p for p in ("inplace", "podloss", "shrink") if p in results]:
        ratio = statistics.median(r for _, r in results[path]) / base
        print(f"  training resumed, {path} / pod recreation: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
