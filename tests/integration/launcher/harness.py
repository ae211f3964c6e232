"""Helpers for the launcher's integration tests: run the real launcher binary, pick free ports, wait with deadlines."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

LAUNCHER = os.environ.get("KUBEDIST_LAUNCHER", "kubedist-launcher")
# The interpreter whose torch the workers import: Debian's /usr/bin/python3 (torch 1.13), or the torch 2.x virtual
# environment's (deploy/local/torch2.sh) when ctest runs a test's torch2 variant. Its directory comes first on the
# workers' PATH, so that the launcher's `python3 -u SCRIPT` is that interpreter, as in a user's image.
PYTHON = os.environ.get("KUBEDIST_TEST_TORCH_PYTHON") or "/usr/bin/python3"
DEADLINE = float(os.environ.get("KUBEDIST_TEST_DEADLINE", "60"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_pair():
    """A port P such that P and P+1 were both free (MASTER_PORT and the default rendezvous port)."""
    for _ in range(100):
        port = free_port()
        with socket.socket() as a, socket.socket() as b:
            try:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue
    raise AssertionError("no two adjacent free ports")


def wait_until(condition, timeout=DEADLINE, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def pid_alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def proc_state(pid):
    """A process's state, parent and command line as /proc says ("S ppid 12 python3 x.py"), for a failure's message."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        return f"{fields[0]} ppid {fields[1]} {cmdline}"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return "gone"


def torch_version(python=PYTHON):
    """The version of the torch `python` imports ("2.15.0"), read from its metadata without importing torch."""
    out = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(f"{python} has no torch: {out.stderr.strip()[-300:]} (deploy/local/setup.sh installs it)")
    return out.stdout.strip().split("+")[0]


def torch_major(python=PYTHON):
    return int(torch_version(python).split(".")[0])


def worker_path():
    """The workers' PATH: the test interpreter's directory first."""
    first = os.path.dirname(PYTHON)
    return "/usr/bin:/bin" if first in ("/usr/bin", "/bin") else f"{first}:/usr/bin:/bin"


def worker_env(extra=None):
    env = {"PATH": worker_path(), "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    env.update(extra or {})
    return env


class Launcher:
    """One launcher process; output goes to files so that a test can read it while it runs."""

    def __init__(self, args, env=None, cwd=None, prefix=None, tmp=None):
        self.dir = tempfile.mkdtemp(prefix="launcher-", dir=tmp)
        self.out_path = os.path.join(self.dir, "stdout")
        self.err_path = os.path.join(self.dir, "stderr")
        cmd = (prefix or []) + [LAUNCHER] + list(args)
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=worker_env(env), cwd=cwd or self.dir)

    def wait(self, timeout=DEADLINE):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"launcher still running after {timeout:.0f} s\nstderr:\n{self.stderr()}")

    def stdout(self):
        with open(self.out_path, errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class LauncherTest(unittest.TestCase):
    """Base: every launcher a test starts is killed at the end of that test, pass or fail."""

    def setUp(self):
        self.launchers = []
        self.tmp = tempfile.mkdtemp(prefix="kubedist-test-")

    def tearDown(self):
        for launcher in self.launchers:
            launcher.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def launch(self, args, env=None, **kw):
        # The launcher's own temporary directories (kept when it tees without --log-dir) go under self.tmp too.
        launcher = Launcher(args, dict(env or {}, TMPDIR=self.tmp), tmp=self.tmp, **kw)
        self.launchers.append(launcher)
        return launcher

    def launch_nodes(self, nnodes, nproc, command, env=None, extra=(), run_id="job", node_env=None, rdzv=None):
        """One launcher per node on 127.0.0.1, as a TrainingJob's pods run them, node 1 and up first (they retry until
        node 0 hosts the rendezvous); the launchers in node-rank order. node_env(NODE_RANK): more env of one node;
        rdzv: the rendezvous port (node 0 answers STATUS there), else a free one."""
        master, rdzv = free_port(), rdzv or free_port()
        nodes = {}
        for node_rank in list(range(1, nnodes)) + [0]:
            args = [f"--nnodes={nnodes}", f"--node-rank={node_rank}", f"--nproc-per-node={nproc}",
                    "--master-addr=127.0.0.1", f"--master-port={master}", f"--rdzv-endpoint=127.0.0.1:{rdzv}",
                    f"--rdzv-id={run_id}", "--rdzv-conf=join_timeout=120", "--stop-timeout=5", *extra, *command]
            nodes[node_rank] = self.launch(args, dict(env or {}, **(node_env(node_rank) if node_env else {})))
        return [nodes[n] for n in range(nnodes)]

    def path(self, name):
        return os.path.join(self.tmp, name)

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()


def terminate(pid, sig=signal.SIGTERM):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
