"""Tell the kubedist launcher how far training is: progress and ETA in `kubectl get tj`, hangs and stragglers.

    from kubedist import progress
    for i in range(n):
        ...
        progress.step(i + 1, total=n, loss=loss.item())

step is the number of steps done so far (the step just finished, counted from 1); total, epoch and samples are
optional; any other keyword with a number is a metric (at most 8 reach the job's status). Outside a kubedist
launcher (KUBEDIST_PROGRESS unset) every call does nothing. No call blocks or raises: a report the launcher cannot
take now is dropped, and reports are sent at most every 0.1 s (the last step of `total` at once), so a call costs
a clock read in between; a step held back by that interval is sent by a helper thread once the interval is over,
so the launcher hears of the last step even when the loop stops right after it (a hang, a long evaluation).

In a job whose ranks wait for each other every step (DDP), every rank's step takes as long as the slowest one's.
To let the launcher tell which rank holds the others back, time the part of the step that does not wait for the
other ranks (the forward pass and the loss, say):

        with progress.compute():
            loss = criterion(model(x), y)

Once a step was reported the launcher may ask for this process's Python stacks when the job stops advancing
(a hang, spec.hangTimeout): the helper arms Python's faulthandler on a real-time signal for that, unless the
program already handles that signal.

The wire format, for other languages: one JSON object per datagram, sent to the Unix datagram socket named by
KUBEDIST_PROGRESS (a leading '@' names Linux's abstract namespace: replace it by a NUL byte), at most 4096 bytes:
{"step": 120, "total_steps": 1000, "epoch": 1, "samples": 15360, "loss": 0.53}.
"""
import os
import time

__all__ = ["step", "compute", "enabled"]

_INTERVAL = 0.1  # seconds between two reports
_STACK_SIGNAL = 5  # SIGRTMIN + this: the signal the launcher sends for the stacks (faulthandler, _arm_stacks)
_MAX_METRICS = 8

_monotonic = time.monotonic
_address = os.environ.get("KUBEDIST_PROGRESS") or None
_socket = None
_last_send = -1e9
_last_step = None       # step of the last report, and when it was sent
_last_step_time = 0.0
_compute = 0.0          # seconds in compute() since the last report
_first = True
_stack_file = None      # faulthandler keeps only the fd: the file object must live
_held = None            # the newest report the interval held back: (step, total, epoch, samples, metrics, time)
_armed = False          # the flusher thread has been told of it
_lock = None            # one send at a time: the training loop's and the flusher's
_wake = None            # threading.Event the flusher waits on


def enabled():
    """True when a kubedist launcher takes the reports (KUBEDIST_PROGRESS is set)."""
    return _address is not None


def _open():
    global _socket, _address
    import socket
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        s.setblocking(False)
        _socket = s
    except Exception:
        _address = None


def _arm_stacks():
    """faulthandler on a real-time signal, writing every thread's stack to KUBEDIST_STACK_FILE; the signal number,
    or 0 when not armed (no file to write, or the program handles that signal itself)."""
    global _stack_file
    path = os.environ.get("KUBEDIST_STACK_FILE")
    if not path:
        return 0
    try:
        import faulthandler
        import signal
        sig = signal.SIGRTMIN + _STACK_SIGNAL
        if signal.getsignal(sig) not in (signal.SIG_DFL, None):
            return 0
        _stack_file = open(path, "w")
        faulthandler.register(sig, file=_stack_file, all_threads=True, chain=False)
        return int(sig)
    except Exception:
        return 0


def _number(v):
    try:
        f = float(v)
    except Exception:
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def _send(step, total, epoch, samples, metrics, now):
    global _last_send, _last_step, _last_step_time, _compute, _first
    report = {"step": int(step)}
    if total is not None:
        report["total_steps"] = int(total)
    if epoch is not None:
        report["epoch"] = int(epoch)
    if samples is not None:
        report["samples"] = int(samples)
    if _last_step is not None and step > _last_step:
        spent = _compute if _compute > 0 else now - _last_step_time
        report["step_time"] = spent / (step - _last_step)
    n = 0
    for name, value in metrics.items():
        if n == _MAX_METRICS or name in report:
            continue
        v = _number(value)
        if v is not None:
            report[name] = v
            n += 1
    if _first:
        _first = False
        report["pid"] = os.getpid()
        report["stack_signal"] = _arm_stacks()
    import json
    data = json.dumps(report, separators=(",", ":")).encode()
    address = "\0" + _address[1:] if _address.startswith("@") else _address
    _last_send = now
    if _last_step is None or step != _last_step:
        _last_step, _last_step_time, _compute = step, now, 0.0
    try:
        _socket.sendto(data, address)
    except OSError:
        pass  # the launcher is busy (its queue is full) or gone: this report is dropped


def _checkpoint_report(report):
    """kubedist.checkpoint's news, told to the launcher at once, with no step of progress in it (a job that only
    checkpoints is never judged hung): a complete checkpoint {"ckpt_step", "ckpt_reason", "ckpt_ranks"}, that this
    worker answers requests {"ckpt_armed": 1}, or its answer to one {"ckpt_request": "saved"|"failed", ...}."""
    if _address is None:
        return
    if _socket is None:
        _open()
        if _socket is None:
            return
    import json
    data = json.dumps(report, separators=(",", ":")).encode()
    address = "\0" + _address[1:] if _address.startswith("@") else _address
    try:
        _socket.sendto(data, address)
    except OSError:
        pass  # the launcher is busy or gone: the status shows the next checkpoint


def _start_flusher():
    global _lock, _wake
    import threading
    _lock, _wake = threading.Lock(), threading.Event()
    threading.Thread(target=_flush_held, name="kubedist-progress", daemon=True).start()
    import atexit
    atexit.register(_flush_now)


def _flush_held():
    global _armed
    try:
        # The stacks' signal goes to the training thread, so that faulthandler marks that one "Current thread".
        import signal
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN + _STACK_SIGNAL})
    except Exception:
        pass
    while True:
        _wake.wait()
        _wake.clear()
        delay = _last_send + _INTERVAL - _monotonic()
        if delay > 0:
            time.sleep(delay)
        # Disarmed before the held report is read: a step held after this read arms the flusher again.
        _armed = False
        _flush_now()


def _flush_now():
    global _held
    try:
        with _lock:
            held, _held = _held, None
            if held is not None:
                _send(*held)
    except Exception:
        pass


def _after_fork_in_child():
    global _lock, _held, _armed
    _lock = _held = None  # the flusher thread did not come along: a child that reports starts its own
    _armed = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def step(step, total=None, epoch=None, samples=None, **metrics):
    """Report that `step` steps are done (of `total`); keywords with numbers are metrics (loss=0.5)."""
    global _held, _armed
    if _address is None:
        return
    try:
        now = _monotonic()
        if _socket is None:
            _open()
            if _socket is None:
                return
        if _lock is None:
            _start_flusher()
        if now - _last_send < _INTERVAL and not (total is not None and step >= total):
            _held = (step, total, epoch, samples, metrics, now)
            if not _armed:
                _armed = True
                _wake.set()
            return
        with _lock:
            _held = None
            _send(step, total, epoch, samples, metrics, now)
    except Exception:
        pass  # never into the training loop


class _Compute:
    __slots__ = ("start",)

    def __enter__(self):
        self.start = _monotonic()
        return self

    def __exit__(self, *exc):
        global _compute
        _compute += _monotonic() - self.start
        return False


_COMPUTE = _Compute()


def compute():
    """A context: the time spent in it is this rank's step time (see the module's doc)."""
    return _COMPUTE
