"""Checkpoints kubedist knows of: where to resume from, and saving on kubedist's schedule.

    from kubedist import checkpoint

    def save(path, step):          # write this rank's state into the directory path (the same one for every rank)
        torch.save({"model": model.state_dict(), "optim": optim.state_dict()},
                   os.path.join(path, f"rank-{dist.get_rank()}.pt"))

    def load(path, step):          # read it back, on every rank
        state = torch.load(os.path.join(path, f"rank-{dist.get_rank()}.pt"))
        model.load_state_dict(state["model"])
        optim.load_state_dict(state["optim"])

    start = checkpoint.resume(save=save, load=load)  # the last complete checkpoint loaded: its step, or 0
    for i in range(start, n):
        ...                        # one training step
        checkpoint.step(i + 1)     # saves when due (every spec.checkpoint.everySteps steps)

Call resume() once the default process group is initialized (torch.distributed.init_process_group), on every rank.
Where: KUBEDIST_CHECKPOINT_DIR, which the operator sets to where it mounts spec.checkpoint's volume (a PVC that
outlives the pods); resume(..., directory=D) anywhere else. Without either, resume() returns 0 and nothing is ever
saved: a script runs as it would without kubedist.

A checkpoint is a directory D/step-<step, 10 digits>, holding what every rank's save wrote, and the file COMPLETE,
which rank 0 writes only once every rank's save returned within the budget (KUBEDIST_CHECKPOINT_TIMEOUT seconds,
spec.checkpoint.saveTimeoutSeconds; the ranks agree through the default process group). A save that raises, that
outlives the budget or that some rank did not make is no checkpoint: resume() never loads it, the step goes on,
and one line on standard error says why. Rank 0 keeps the newest KUBEDIST_CHECKPOINT_KEEP complete checkpoints
(spec.checkpoint.keep, default 2) and removes older ones and incomplete ones older than the newest complete one.

Just in time: when the pod is about to stop (SIGTERM: evicted, drained, preempted, suspended, scaled down, deleted),
the launcher asks its workers for a checkpoint before it stops them (KUBEDIST_CHECKPOINT_REQUEST names the file it
writes then). step() looks for that request about once a second (every K steps, K agreed by the ranks from their
step time, in one small all_reduce that also says whether any rank's launcher asks), so every rank sees it at the
same step: the step just done, which no rank has gone past. Every rank then saves it (save_now, reason
"termination" or what the launcher names), tells its launcher the outcome, and waits to be stopped (at most 60 s,
then training goes on): 0 steps lost. A script that never calls resume() is stopped at once, as before.
"""
import calendar
import json
import os
import shutil
import sys
import time

__all__ = ["resume", "step", "save_now", "directory", "last_step"]

_PREFIX = "step-"
_COMPLETE = "COMPLETE"

_dir = None          # where checkpoints live; None: checkpoints are off
_save = None
_load = None
_every = 0           # save every this many steps (0: only when save_now() is called)
_timeout = 0.0       # seconds a save may take (0: no bound)
_keep = 2
_last = 0            # the step of the newest complete checkpoint (loaded or saved)

# Requests from the launcher (just in time). A request file holds one reason word; the ranks agree on one through
# the all_reduce as its index here (an unknown word is "requested").
_REASONS = ("requested", "termination", "preemption", "drain", "suspend", "scale_down", "deletion",
            "termination_notice")
_CHECK_SECONDS = 1.0   # how often, in time, step() looks for a request
_MAX_CHECK_STEPS = 10000
_HOLD_SECONDS = 60.0   # after a requested save, how long a worker waits to be stopped before it goes on
_request = None        # the launcher's request file (KUBEDIST_CHECKPOINT_REQUEST); None: no launcher asks
_next_check = 0        # the step at which step() looks next
_check_mark = (0, 0.0)  # the step and time of the last look


def _int_env(name, default, low):
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value >= low else default


def _float_env(name, default):
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value >= 0 and value == value else default


def _say(text):
    sys.stderr.write("kubedist: checkpoint: %s\n" % text)
    sys.stderr.flush()


def _dist():
    """torch.distributed when a default process group is initialized, else None (one process alone)."""
    try:
        import torch.distributed as dist
    except Exception:
        return None
    try:
        return dist if dist.is_available() and dist.is_initialized() else None
    except Exception:
        return None


def _rank():
    d = _dist()
    return d.get_rank() if d else 0


def _all_max(values):
    """The element-wise maximum of values (small ints) over every rank (one small all_reduce with several ranks)."""
    d = _dist()
    if d is None:
        return list(values)
    import torch
    device = "cuda" if d.get_backend() == "nccl" and torch.cuda.is_available() else "cpu"
    t = torch.tensor(list(values), dtype=torch.int64, device=device)
    d.all_reduce(t, op=d.ReduceOp.MAX)
    return [int(v) for v in t.tolist()]


def _all_ok(ok):
    """Whether every rank says ok."""
    return _all_max([0 if ok else 1])[0] == 0


def _path(step):
    return os.path.join(_dir, "%s%010d" % (_PREFIX, step))


def _complete_steps(directory):
    """The steps of the complete checkpoints in directory, newest first."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    steps = []
    for name in names:
        if not name.startswith(_PREFIX) or not name[len(_PREFIX):].isdigit():
            continue
        if os.path.isfile(os.path.join(directory, name, _COMPLETE)):
            steps.append(int(name[len(_PREFIX):]))
    return sorted(steps, reverse=True)


def directory():
    """Where checkpoints live, or None when they are off."""
    return _dir


def last_step():
    """The step of the newest complete checkpoint this process loaded or saved (0: none)."""
    return _last


def resume(save, load, directory=None, every_steps=None):
    """Sets how to save and load this process' state and loads the newest complete checkpoint, if there is one.

    save(path, step) and load(path, step) are called on every rank with the checkpoint's directory. Returns the step
    to go on from: the loaded checkpoint's, or 0. directory and every_steps default to what kubedist sets
    (KUBEDIST_CHECKPOINT_DIR, KUBEDIST_CHECKPOINT_EVERY_STEPS)."""
    global _dir, _save, _load, _every, _timeout, _keep, _last, _request, _next_check, _check_mark
    _dir = directory or os.environ.get("KUBEDIST_CHECKPOINT_DIR") or None
    _save, _load = save, load
    _every = every_steps if every_steps is not None else _int_env("KUBEDIST_CHECKPOINT_EVERY_STEPS", 0, 0)
    _timeout = _float_env("KUBEDIST_CHECKPOINT_TIMEOUT", 0.0)
    _keep = _int_env("KUBEDIST_CHECKPOINT_KEEP", 2, 1)
    _last = 0
    _request = None
    if _dir is None:
        return 0
    _request = os.environ.get("KUBEDIST_CHECKPOINT_REQUEST") or None
    if _rank() == 0:
        os.makedirs(_dir, exist_ok=True)
    # Every rank loads the same checkpoint: rank 0's view of the directory decides (a file system shared by the
    # nodes may show a new COMPLETE to some ranks first).
    steps = _complete_steps(_dir)
    newest = steps[0] if steps else 0
    d = _dist()
    if d is not None:
        chosen = [newest]
        d.broadcast_object_list(chosen, src=0)
        newest = int(chosen[0])
    if newest > 0:
        load(_path(newest), newest)
        _last = newest
        _say("resumed from step %d (%s)" % (newest, _path(newest)))
        if _rank() == 0:
            _report_loaded(newest)
    _next_check, _check_mark = newest + 1, (newest, time.monotonic())
    if _request is not None:
        from kubedist import progress  # this worker answers the launcher's requests from now on
        progress._checkpoint_report({"ckpt_armed": 1})
    return newest


def _report_loaded(n):
    """Rank 0 tells its launcher of the checkpoint it resumed from, with its age, so that status.checkpoint names it
    from the start of this run on (a new node 0 would otherwise know none until the next save)."""
    try:
        with open(os.path.join(_path(n), _COMPLETE)) as f:
            record = json.load(f)
        saved = calendar.timegm(time.strptime(record["time"], "%Y-%m-%dT%H:%M:%SZ"))
        report = {"ckpt_step": int(n), "ckpt_reason": str(record["reason"]), "ckpt_ranks": int(record["ranks"]),
                  "ckpt_age_ms": max(0, int((time.time() - saved) * 1000))}
    except Exception:
        return  # a record of another shape: the status shows the next save
    from kubedist import progress
    progress._checkpoint_report(report)


def step(n):
    """Call after each training step, with the number of steps done: saves when due, or when the launcher asks
    (the pod is about to stop: then it does not return until the launcher stopped it). True when it saved."""
    if _dir is None:
        return False
    saved = False
    if _every > 0 and n > _last and n % _every == 0:
        saved = save_now(n, "periodic")
    if _request is not None and n >= _next_check:
        saved = _look_for_request(n) or saved
    return saved


def _requested():
    """The index in _REASONS of what this rank's launcher asks for, or -1 when it asks nothing."""
    try:
        with open(_request) as f:
            word = f.read(64).strip()
    except OSError:
        return -1
    return _REASONS.index(word) if word in _REASONS else 0


def _look_for_request(n):
    """Every rank at step n: whether any launcher asks for a checkpoint, and when to look next (about
    _CHECK_SECONDS from now, in steps: the fewest any rank asks for)."""
    global _next_check, _check_mark
    now = time.monotonic()
    done, since = n - _check_mark[0], now - _check_mark[1]
    steps = _MAX_CHECK_STEPS if since <= 0 or done <= 0 else int(_CHECK_SECONDS * done / since)
    steps = max(1, min(_MAX_CHECK_STEPS, steps))
    asked, fewest = _all_max([_requested(), -steps])
    _next_check, _check_mark = n + max(1, -fewest), (n, now)
    if asked < 0:
        return False
    reason = _REASONS[asked]
    ok = True if _last == n else save_now(n, reason)  # saved at this very step already (periodic): that one
    d = _dist()
    world = d.get_world_size() if d is not None else 1
    from kubedist import progress
    progress._checkpoint_report({"ckpt_request": "saved" if ok else "failed", "ckpt_step": int(n),
                                 "ckpt_reason": reason, "ckpt_ranks": world})
    _hold(n, ok)
    return ok


def _hold(n, ok):
    """After a requested save: wait to be stopped (the launcher stops the workers once each answered), so that no
    step is done that the checkpoint lacks; training goes on if no stop comes within _HOLD_SECONDS, or at once when
    this rank's launcher takes its request back."""
    _say("%s for the launcher's request at step %d: waiting to be stopped" %
         ("saved" if ok else "no checkpoint", n))
    asked_here = os.path.exists(_request)
    deadline = time.monotonic() + _HOLD_SECONDS
    while time.monotonic() < deadline:
        if asked_here and not os.path.exists(_request):
            return
        time.sleep(0.05)
    _say("not stopped within %d s of the checkpoint of step %d: training goes on" % (_HOLD_SECONDS, n))


def save_now(n, reason="requested"):
    """Saves a checkpoint of step n now, on every rank (each must call it with the same n). True when complete."""
    global _last
    if _dir is None or _save is None:
        return False
    path = _path(n)
    rank = _rank()
    started = time.monotonic()
    ok, why = True, ""
    try:
        os.makedirs(path, exist_ok=True)
        _save(path, n)
    except Exception as e:  # the step goes on; this is no checkpoint
        ok, why = False, "rank %d's save raised %s: %s" % (rank, type(e).__name__, e)
    spent = time.monotonic() - started
    if ok and _timeout > 0 and spent > _timeout:
        ok, why = False, "rank %d's save took %.1f s, over the %.1f s budget" % (rank, spent, _timeout)
    everyone = _all_ok(ok)
    if not everyone:
        _say("step %d is no checkpoint: %s" % (n, why or "another rank's save failed"))
        return False
    if rank == 0:
        record = {"step": n, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "reason": reason,
                  "ranks": (_dist().get_world_size() if _dist() else 1), "seconds": round(spent, 3)}
        tmp = os.path.join(path, _COMPLETE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(record, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(path, _COMPLETE))
        _prune(n)
    d = _dist()
    if d is not None:
        d.barrier()  # COMPLETE written before any rank goes on (and may be stopped)
    _last = n
    from kubedist import progress  # every launcher hears of it (node 0's makes status.checkpoint of it)
    progress._checkpoint_report({"ckpt_step": int(n), "ckpt_reason": reason,
                                 "ckpt_ranks": d.get_world_size() if d is not None else 1})
    return True


def _prune(newest):
    """Rank 0: the newest _keep complete checkpoints stay; older ones, and incomplete ones older than newest, go."""
    keep = set(_complete_steps(_dir)[:_keep])
    try:
        names = os.listdir(_dir)
    except OSError:
        return
    for name in names:
        if not name.startswith(_PREFIX) or not name[len(_PREFIX):].isdigit():
            continue
        s = int(name[len(_PREFIX):])
        if s in keep or s >= newest:
            continue
        shutil.rmtree(os.path.join(_dir, name), ignore_errors=True)
