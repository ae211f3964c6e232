"""run() and kubectl() for the Python tests, spelled once (kube.sh is the shell scenarios' counterpart).

A failed command raises CommandFailed, a RuntimeError that names the command, its exit status and the end of its
stderr; check=False returns it whatever its status. Each returns the subprocess.CompletedProcess (text)."""
import subprocess

STDERR_TAIL = 2000  # the characters of a failed command's stderr that its error carries


class CommandFailed(RuntimeError):
    def __init__(self, args, returncode, stderr):
        super().__init__(f"{' '.join(args)} exited {returncode}: {stderr.strip()[-STDERR_TAIL:]}")
        self.returncode = returncode
        self.stderr = stderr


def run(*args, input=None, check=True, timeout=None, env=None):
    p = subprocess.run(args, input=input, capture_output=True, text=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise CommandFailed(args, p.returncode, p.stderr)
    return p


def kubectl(*args, **kw):
    return run("kubectl", *args, **kw)
