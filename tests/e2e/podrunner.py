"""The e2e harness that makes kwok's pods real: a kubelet stand-in for the trainer container only.

kwok schedules nothing itself and runs no process: it marks a scheduled pod Running and gives it an IP from
127.100.0.0/16 (deploy/local/cluster.sh). PodRunner watches the pods of one namespace through the real API
server and, for each pod that kwok has made Running, runs its trainer container's command (the launcher
command the operator wrote, with the launcher path mapped to the binary we built) with the pod's env as a
local process:

- in its own mount and UTS namespaces, with /etc/hosts bind-mounted from a file that maps every pod's
  hostname.subdomain.namespace.svc (the headless Service's DNS names) to that pod's 127.100.x.y IP, and the
  pod's hostname set, so that MASTER_ADDR resolves as it would in a cluster;
- after the operator's launcher init container (kubedist-launcher --install, which derives the job's rendezvous
  secret from the namespace's Secret), run the same way; the Secret volumes are materialised from the real Secrets
  and emptyDir volumes are directories of the pod's own, each in a directory of the workdir that stands for its
  mountPath: arguments and env values under a mountPath are mapped to it, as the launcher path is mapped to the
  binary;
- in its own process group, stopped (SIGTERM, then SIGKILL) when the pod is deleted, like a kubelet;
- and when the process exits, its exit is mirrored into the pod's status (phase Succeeded or Failed, and a
  terminated trainer containerStatus with the exit code) through the status subresource.

Nothing of the API server is faked: the operator under test sees real pods, real watches and real status.
"""
import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kube import kubectl  # noqa: E402,F401 - e2e_test.py reads it from here too

PYTHON = "/usr/bin/python3"


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class PodProcess:
    """One pod's trainer process."""

    def __init__(self, pod, proc, log_path):
        self.name = pod["metadata"]["name"]
        self.uid = pod["metadata"]["uid"]
        self.proc = proc
        self.log_path = log_path
        self.started = time.monotonic()
        self.exit_code = None
        self.stopping = False


class PodRunner:
    def __init__(self, namespace, launcher, workdir, extra_env=None, grace_seconds=10):
        self.ns = namespace
        self.launcher = launcher
        self.workdir = workdir
        self.extra_env = extra_env or {}
        self.grace = grace_seconds
        self.hosts_path = os.path.join(workdir, "hosts")
        self.pods = {}          # name -> last seen pod object
        self.procs = {}         # pod uid -> PodProcess
        self.finished = []      # PodProcess of every process that ended, in order
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.watch = None
        self.thread = None
        os.makedirs(workdir, exist_ok=True)
        with open(self.hosts_path, "w") as f:
            f.write("127.0.0.1 localhost\n")

    # ---- lifecycle -------------------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self.thread = threading.Thread(target=self._watch_loop, daemon=True)
        self.thread.start()

    def stop(self):
        self.stop_event.set()
        if self.watch and self.watch.poll() is None:
            self.watch.terminate()
        with self.lock:
            procs = list(self.procs.values())
        for p in procs:
            self._kill(p)
        if self.thread:
            self.thread.join(timeout=10)

    # ---- queries for tests -----------------------------------------------------------------------------
    def running(self):
        with self.lock:
            return {p.name: p for p in self.procs.values() if p.proc.poll() is None}

    def exits(self):
        with self.lock:
            return [(p.name, p.exit_code) for p in self.finished]

    def started(self):
        """(pod name, pod uid) of every pod whose process was started, running or ended."""
        with self.lock:
            return sorted((p.name, p.uid) for p in self.finished + list(self.procs.values()))

    def log(self, pod_name):
        with self.lock:
            candidates = [p for p in list(self.procs.values()) + self.finished if p.name == pod_name]
        if not candidates:
            return ""
        with open(candidates[-1].log_path, errors="replace") as f:
            return f.read()

    def kill_pod_process(self, pod_name, sig=signal.SIGKILL):
        """What a node failure does to the pod's processes: they die, with no chance to clean up."""
        for p in self.running().values():
            if p.name == pod_name:
                p.stopping = True
                os.killpg(p.proc.pid, sig)
                return True
        return False

    # ---- the watch -------------------------------------------------------------------------------------
    def _watch_loop(self):
        backoff = 0.2
        while not self.stop_event.is_set():
            self.watch = subprocess.Popen(
                ["kubectl", "-n", self.ns, "get", "pods", "-l", "kubedist.io/job-name", "--watch",
                 "--output-watch-events", "-o", "json"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            decoder = json.JSONDecoder()
            buf = ""
            for line in self.watch.stdout:
                buf += line
                while True:
                    stripped = buf.lstrip()
                    if not stripped:
                        buf = ""
                        break
                    try:
                        event, end = decoder.raw_decode(stripped)
                    except json.JSONDecodeError:
                        buf = stripped
                        break
                    buf = stripped[end:]
                    self._on_event(event.get("type"), event.get("object", {}))
            self.watch.wait()
            if not self.stop_event.wait(backoff):
                backoff = min(backoff * 2, 2.0)

    def _on_event(self, kind, pod):
        name = pod.get("metadata", {}).get("name")
        if not name:
            return
        uid = pod["metadata"]["uid"]
        deleting = kind == "DELETED" or pod["metadata"].get("deletionTimestamp")
        with self.lock:
            if kind == "DELETED":
                if self.pods.get(name, {}).get("metadata", {}).get("uid") == uid:
                    del self.pods[name]
            else:
                self.pods[name] = pod
            self._write_hosts()
            proc = self.procs.get(uid)
        if deleting:
            if proc:
                threading.Thread(target=self._kill, args=(proc,), daemon=True).start()
            return
        status = pod.get("status", {})
        if proc is None and status.get("phase") == "Running" and status.get("podIP"):
            self._start(pod)

    def _write_hosts(self):
        lines = ["127.0.0.1 localhost"]
        for pod in self.pods.values():
            ip = pod.get("status", {}).get("podIP")
            spec = pod.get("spec", {})
            host, sub = spec.get("hostname"), spec.get("subdomain")
            if ip and host and sub and not pod["metadata"].get("deletionTimestamp"):
                fqdn = f"{host}.{sub}.{self.ns}.svc"
                lines.append(f"{ip} {fqdn} {fqdn}.cluster.local {host}")
        # Rewritten in place (same inode), so the bind mounts in the running pods see the change.
        with open(self.hosts_path, "r+") as f:
            f.truncate(0)
            f.write("\n".join(lines) + "\n")

    # ---- one pod's process -----------------------------------------------------------------------------
    def _start(self, pod):
        spec = pod["spec"]
        containers = spec["containers"]
        trainer = next((c for c in containers if c["name"] == "trainer"), containers[0])
        cmd = list(trainer.get("command", [])) + list(trainer.get("args", []))
        cmd = [self.launcher if a.endswith("/kubedist-launcher") else a for a in cmd]
        env = {"PATH": "/usr/bin:/bin", "HOME": self.workdir, "LANG": "C.UTF-8",
               "HOSTNAME": spec.get("hostname", pod["metadata"]["name"])}
        for e in trainer.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
            elif e.get("valueFrom", {}).get("fieldRef"):
                path = e["valueFrom"]["fieldRef"]["fieldPath"]
                env[e["name"]] = {"metadata.name": pod["metadata"]["name"],
                                  "metadata.namespace": self.ns,
                                  "status.podIP": pod["status"].get("podIP", "")}.get(path, "")
        log_path = os.path.join(self.workdir, f"{pod['metadata']['name']}-{pod['metadata']['uid'][:8]}.log")
        for init in spec.get("initContainers", []):
            if init["name"] != "kubedist-launcher":
                continue  # the user's own: this stand-in runs only what the operator put there
            mounts = self._volumes(pod, init)
            init_cmd = [self.launcher if a.endswith("/kubedist-launcher") else self._local(a, mounts)
                        for a in init.get("command", []) + init.get("args", [])]
            with open(log_path, "ab") as log:
                done = subprocess.run(init_cmd, stdout=log, stderr=subprocess.STDOUT, env={}, cwd=self.workdir)
            if done.returncode != 0:
                raise RuntimeError(f"pod {pod['metadata']['name']}: init container {init_cmd} exited "
                                   f"{done.returncode} (see {log_path})")
        mounts = self._volumes(pod, trainer)
        env = {k: self._local(v, mounts) for k, v in env.items()}
        env.update(self.extra_env)
        wrapper = ('mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"')
        with open(log_path, "ab") as log:  # after the init container's lines
            proc = subprocess.Popen(
                ["unshare", "--mount", "--uts", "--propagation", "private", "--", "sh", "-c", wrapper, "sh",
                 self.hosts_path, env["HOSTNAME"], *cmd],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir, start_new_session=True)
        p = PodProcess(pod, proc, log_path)
        with self.lock:
            self.procs[p.uid] = p
        threading.Thread(target=self._reap, args=(p,), daemon=True).start()

    @staticmethod
    def _local(value, mounts):
        """value with a leading mountPath replaced by the local directory that stands for it."""
        for mount_path, local in mounts.items():
            if value == mount_path or value.startswith(mount_path.rstrip("/") + "/"):
                return local + value[len(mount_path.rstrip("/")):]
        return value

    def _volumes(self, pod, container):
        """Materialises each Secret and emptyDir volume the container mounts in the workdir, as a kubelet would
        (an emptyDir is the pod's, shared by its containers), and returns {mountPath: local directory}. Like a
        kubelet, it waits for a Secret that does not exist yet."""
        volumes = {v["name"]: v for v in pod["spec"].get("volumes", []) if "secret" in v or "emptyDir" in v}
        out = {}
        for m in container.get("volumeMounts", []):
            vol = volumes.get(m["name"])
            if vol is None:
                continue
            local = os.path.join(self.workdir, "volumes", pod["metadata"]["uid"], m["name"])
            os.makedirs(local, exist_ok=True)
            out[m["mountPath"]] = local
            if "emptyDir" in vol:
                continue
            name = vol["secret"]["secretName"]
            deadline = time.monotonic() + 30
            while True:
                got = kubectl("-n", self.ns, "get", "secret", name, "-o", "json", check=False)
                if got.returncode == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if got.returncode != 0:
                raise RuntimeError(f"pod {pod['metadata']['name']}: secret {name}: {got.stderr.strip()}")
            for key, b64 in (json.loads(got.stdout).get("data") or {}).items():
                path = os.path.join(local, key)
                with open(path, "wb") as f:
                    f.write(base64.b64decode(b64))
                os.chmod(path, vol["secret"].get("defaultMode", 0o644))
        return out

    def _reap(self, p):
        code = p.proc.wait()
        p.exit_code = code if code >= 0 else 128 - code
        with self.lock:
            self.finished.append(p)
            self.procs.pop(p.uid, None)
        if p.stopping or self.stop_event.is_set():
            return  # the pod is going away (deleted, or its node lost): nothing to report into it
        self._report_exit(p)

    def _report_exit(self, p):
        code = p.exit_code
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                      "startedAt": now_rfc3339(), "finishedAt": now_rfc3339()}
        status = {"status": {
            "phase": "Succeeded" if code == 0 else "Failed",
            "containerStatuses": [{"name": "trainer", "image": "kubedist-e2e", "imageID": "", "ready": False,
                                   "restartCount": 0, "started": False,
                                   "state": {"terminated": terminated}}]}}
        # The pod may have been replaced meanwhile: only report into the pod this process belonged to.
        pod = self.pods.get(p.name)
        if not pod or pod["metadata"]["uid"] != p.uid:
            return
        kubectl("-n", self.ns, "patch", "pod", p.name, "--subresource=status", "--type=merge",
                "-p", json.dumps(status), check=False)

    def _kill(self, p):
        p.stopping = True
        if p.proc.poll() is not None:
            return
        try:
            os.killpg(p.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            p.proc.wait(timeout=self.grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.proc.wait()
