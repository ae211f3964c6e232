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
"""
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


def _all_ok(ok):
    """Whether every rank says ok (one small all_reduce when there are several ranks)."""
    d = _dist()
    if d is None:
        return ok
    import torch
    backend = d.get_backend()
    device = "cpu"
    if backend == "nccl" and torch.cuda.is_available():
        device = "cuda"
    flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=device)
    d.all_reduce(flag, op=d.ReduceOp.MIN)
    return bool(flag.item())


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
    global _dir, _save, _load, _every, _timeout, _keep, _last
    _dir = directory or os.environ.get("KUBEDIST_CHECKPOINT_DIR") or None
    _save, _load = save, load
    _every = every_steps if every_steps is not None else _int_env("KUBEDIST_CHECKPOINT_EVERY_STEPS", 0, 0)
    _timeout = _float_env("KUBEDIST_CHECKPOINT_TIMEOUT", 0.0)
    _keep = _int_env("KUBEDIST_CHECKPOINT_KEEP", 2, 1)
    _last = 0
    if _dir is None:
        return 0
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
    if newest == 0:
        return 0
    load(_path(newest), newest)
    _last = newest
    _say("resumed from step %d (%s)" % (newest, _path(newest)))
    return newest


def step(n):
    """Call after each training step, with the number of steps done: saves when due. Returns True when it saved."""
    if _dir is None or _every <= 0 or n <= _last or n % _every != 0:
        return False
    return save_now(n, "periodic")


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
        from kubedist import progress  # the launcher's status.checkpoint
        progress._checkpoint_done(n, reason, record["ranks"])
    d = _dist()
    if d is not None:
        d.barrier()  # COMPLETE written before any rank goes on (and may be stopped)
    _last = n
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
