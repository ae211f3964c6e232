"""What the fault scenarios share (stdlib only): a cluster of their own (deploy/local/cluster.sh, audit log on), an
API client that outlives API server and etcd restarts, the operator as a process to kill, and the audit log read
back. Every process and cluster a scenario starts is stopped by Scenario.close(), also on SIGINT/SIGTERM/SIGHUP."""
import base64
import http.client
import json
import os
import random
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import kube  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
CLUSTER_SH = os.path.join(REPO, "deploy/local/cluster.sh")
CRD = os.path.join(REPO, "crd/kubedist.io_trainingjobs.yaml")
OPERATOR_AGENT = "kubedist-operator"


class ScenarioFailed(Exception):
    """A check that did not hold: the scenario ends with its message (exit 1)."""


def say(msg):
    print(f"[faults {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Api:
    """The cluster's API as its admin (the cluster's client certificate), one keep-alive connection per thread.
    call() retries what a restarting API server or etcd answers (no connection, 5xx, 429) until its deadline."""

    def __init__(self, cluster_dir, cert="admin"):
        with open(os.path.join(cluster_dir, "kubeconfig")) as f:
            m = re.search(r"server: https://([0-9.]+):([0-9]+)", f.read())
        self.host, self.port = m.group(1), int(m.group(2))
        pki = os.path.join(cluster_dir, "pki")
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, f"{cert}.crt"), os.path.join(pki, f"{cert}.key"))
        self.local = threading.local()

    def _conn(self, timeout):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)
            self.local.conn = c
        c.timeout = timeout
        if c.sock is not None:
            c.sock.settimeout(timeout)
        return c

    def once(self, method, path, body=None, ctype="application/json", timeout=15, agent="kubedist-faults"):
        """(status, decoded body or None); raises OSError/HTTPException on a broken connection."""
        c = self._conn(timeout)
        data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
        headers = {"Accept": "application/json", "User-Agent": agent}
        if data is not None:
            headers["Content-Type"] = ctype
        try:
            c.request(method, path, body=data, headers=headers)
            r = c.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException):
            c.close()
            self.local.conn = None
            raise
        try:
            return r.status, json.loads(raw) if raw else None
        except ValueError:
            return r.status, None

    def call(self, method, path, body=None, ctype="application/json", deadline_s=120, agent="kubedist-faults"):
        """The answer once it is not a transient one; fails the scenario after deadline_s."""
        end = time.monotonic() + deadline_s
        last = None
        while True:
            try:
                status, doc = self.once(method, path, body, ctype, agent=agent)
                if status not in (429, 500, 502, 503, 504):
                    return status, doc
                last = f"{status} {doc.get('message', '') if isinstance(doc, dict) else ''}"
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
            if time.monotonic() >= end:
                raise ScenarioFailed(f"{method} {path}: no answer within {deadline_s}s (last: {last})")
            time.sleep(0.3)

    def get(self, path, deadline_s=120):
        status, doc = self.call("GET", path, deadline_s=deadline_s)
        if status != 200:
            raise ScenarioFailed(f"GET {path}: {status} {doc}")
        return doc


class Cluster:
    """A kwok cluster of the scenario's own, brought up fresh (audit log from empty, every write audited) and down."""

    def __init__(self, name, kwok_nodes, env=None):
        self.name = name
        self.kwok_nodes = kwok_nodes
        self.env = env or {}
        self.started = False
        self.dir = None

    def sh(self, *args, env=None, check=True):
        r = subprocess.run([CLUSTER_SH, *args, self.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env)
        if check and r.returncode != 0:
            raise ScenarioFailed(f"cluster.sh {args[0]} {self.name} failed ({r.returncode}): {r.stderr[-2000:]}")
        return r.stdout

    def up(self):
        self.sh("down", check=False)
        self.started = True
        env = dict(os.environ, KUBEDIST_AUDIT="1", KUBEDIST_NODES=str(self.kwok_nodes), **self.env)
        t0 = time.monotonic()
        kubeconfig = self.sh("up", env=env).strip().splitlines()[-1]
        self.dir = os.path.dirname(kubeconfig)
        os.environ["KUBECONFIG"] = kubeconfig
        os.environ["PATH"] = os.path.join(self.dir, "bin") + os.pathsep + os.environ["PATH"]
        say(f"cluster {self.name} up in {time.monotonic() - t0:.0f}s ({self.kwok_nodes} kwok nodes)")
        return kubeconfig

    def down(self):
        if self.started:
            self.sh("down", check=False)
            self.started = False

    @property
    def audit_log(self):
        return os.path.join(self.dir, "logs/audit.log")

    def pid_of(self, what):
        try:
            with open(os.path.join(self.dir, "run", f"{what}.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def sign(self, cert, subject):
        """A client certificate of the cluster's CA (pki/CERT.{crt,key}), e.g. one identity per operator replica."""
        pki = os.path.join(self.dir, "pki")
        subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{pki}/{cert}.key", "-out",
                        f"{pki}/{cert}.csr", "-subj", subject], check=True, capture_output=True)
        with open(f"{pki}/{cert}.ext", "w") as f:
            f.write("extendedKeyUsage=clientAuth\n")
        subprocess.run(["openssl", "x509", "-req", "-in", f"{pki}/{cert}.csr", "-CA", f"{pki}/ca.crt", "-CAkey",
                        f"{pki}/ca.key", "-CAcreateserial", "-out", f"{pki}/{cert}.crt", "-days", "2", "-extfile",
                        f"{pki}/{cert}.ext"], check=True, capture_output=True)

    def kubeconfig_for(self, cert, server, path):
        """A kubeconfig for client certificate CERT against SERVER (https://HOST:PORT)."""
        pki = os.path.join(self.dir, "pki")

        def b64(name):
            with open(os.path.join(pki, name), "rb") as f:
                return base64.b64encode(f.read()).decode()
        with open(path, "w") as f:
            f.write(f"apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n"
                    f"    certificate-authority-data: {b64('ca.crt')}\nusers:\n- name: u\n  user:\n"
                    f"    client-certificate-data: {b64(cert + '.crt')}\n    client-key-data: {b64(cert + '.key')}\n"
                    "contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n")


def kubectl(*args, input=None, check=True):
    """kubectl's stdout; a failure is the scenario's."""
    try:
        return kube.kubectl(*args, input=input, check=check).stdout
    except kube.CommandFailed as e:
        raise ScenarioFailed(str(e)) from None


def apply_crd():
    kubectl("apply", "--server-side", "--force-conflicts", "-f", CRD)
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/trainingjobs.kubedist.io")


class Operator:
    """kubedist-operator as a local process (log appended to one file across restarts); kill() is SIGKILL."""

    def __init__(self, binary, args, log_path, prefix=(), kubeconfig=None):
        self.binary, self.args, self.log_path, self.prefix = binary, list(args), log_path, list(prefix)
        self.kubeconfig = kubeconfig
        self.proc = None
        self.starts = 0

    def start(self):
        kc = ["--kubeconfig", self.kubeconfig] if self.kubeconfig else []
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen([*self.prefix, self.binary, *kc, "--probe-address", "127.0.0.1:0",
                                          "--log-level", "info", *self.args],
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.starts += 1

    def kill(self, sig=signal.SIGKILL):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait()
        self.proc = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


def audit_events(path, pred=None):
    """The audit log's events (ResponseComplete), in order, those pred() takes."""
    out = []
    with open(path, "rb") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("stage") != "ResponseComplete":
                continue
            if pred is None or pred(e):
                out.append(e)
    return out


def rfc3339_to_unix(ts):
    """'2026-12-05T11:52:01.123456Z' as Unix seconds (float)."""
    m = re.match(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)(\.\d+)?Z", ts)
    import calendar
    secs = calendar.timegm(tuple(int(m.group(i)) for i in range(1, 7)) + (0, 0, 0))
    return secs + float(m.group(7) or 0)


class Scenario:
    """What every scenario does around its body: parse nothing, print the injected and measured, clean up always."""

    def __init__(self, name):
        self.name = name
        self.cleanups = []
        self.work = tempfile.mkdtemp(prefix=f"kubedist-faults-{name}-")
        self.seed = int(os.environ.get("FAULTS_SEED", str(int(time.time()))))
        self.rng = random.Random(self.seed)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, self._on_signal)

    def _on_signal(self, signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def on_close(self, fn):
        self.cleanups.append(fn)

    def close(self):
        while self.cleanups:
            fn = self.cleanups.pop()
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - cleanup goes on whatever one step did
                print(f"cleanup: {e!r}", file=sys.stderr)

    def run(self, body):
        rc = 0
        try:
            body(self)
            say(f"{self.name}: PASS")
        except ScenarioFailed as e:
            print(f"FAIL: {self.name}: {e}", file=sys.stderr, flush=True)
            rc = 1
        except KeyboardInterrupt as e:
            print(f"{self.name}: interrupted ({e})", file=sys.stderr)
            rc = 130
        finally:
            self.close()
        return rc
