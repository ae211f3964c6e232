"""What the e2e scripts (e2e_test.py, real/real_test.py) assert with: a failed expectation, a check that logs what
held, and a poll for a condition that must come true in time."""
import time


class Failure(Exception):
    pass


class Log:
    def __init__(self, tag):
        self.tag = tag

    def __call__(self, msg):
        print(f"[{self.tag} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


log = Log("e2e")


def check(cond, msg):
    if not cond:
        raise Failure(msg)
    log(f"ok: {msg}")


def eventually(seconds, what, fn, interval=0.2):
    """fn's first truthy result within seconds; errors of a command or of reading its output count as not yet."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (RuntimeError, ValueError, KeyError, IndexError, OSError) as e:
            last = e
        time.sleep(interval)
    raise Failure(f"not within {seconds}s: {what} (last: {last!r})")
