"""Node 0 under a flood from the pod network (issue 23 item 4), with real launchers on loopback: 5,000 idle sockets
held to its metrics port and a connect/close storm on its rendezvous port, while the other node's launcher is killed
and restarted. That node rejoins within 60 s, node 0's /metrics keeps answering, and node 0 holds a bounded number of
file descriptors. The flood comes from addresses of its own (127.0.0.98 and .99), as another pod's would."""
import os
import resource
import signal
import socket
import struct
import threading
import time
import unittest

from harness import LauncherTest, free_port, wait_until
from rdzv_auth_test import SECRET, RdzvConnection

NODE0 = "127.0.0.2"
IDLE_SOCKETS = 5000
REJOIN_DEADLINE = 60


def metrics(port, timeout=5):
    """node 0's /metrics body, asked from 127.0.0.1; raises when it does not answer within timeout."""
    with socket.create_connection((NODE0, port), timeout=timeout) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.0 200"):
        raise AssertionError(f"/metrics answered {head[:80]!r}")
    return body.decode()


class Flood(LauncherTest):
    def setUp(self):
        super().setUp()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < IDLE_SOCKETS + 1000:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, IDLE_SOCKETS + 2000), hard))
        self.stop = threading.Event()
        self.threads = []
        self.held = []
        self.storm_count = [0]

    def tearDown(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)
        for s in self.held:
            s.close()
        super().tearDown()

    def node(self, rank, ports, go, prefix=None):
        rdzv_port, master_port, metrics_port = ports
        script = f"echo $TORCHELASTIC_RESTART_COUNT >> {self.tmp}/started-{rank}; while [ ! -e {go} ]; do sleep 0.05; done"
        args = ["--nnodes=2", f"--node-rank={rank}", f"--master-addr={NODE0}", f"--master-port={master_port}",
                f"--rdzv-endpoint={NODE0}:{rdzv_port}", "--rdzv-id=flood", "--max-restarts=3", "--stop-timeout=5",
                "--rdzv-conf=join_timeout=120,last_call_timeout=0.2"]
        if rank == 0:
            args += [f"--metrics-port={metrics_port}", f"--metrics-addr={NODE0}"]
        return self.launch(args + ["--no-python", "--", "sh", "-c", script],
                           {"KUBEDIST_RDZV_SECRET_FILE": self.secret_file}, prefix=prefix)

    def status(self, rdzv_port):
        try:
            c = RdzvConnection(rdzv_port, SECRET, host=NODE0, timeout=5)
            try:
                c.send("STATUS")
                answer = c.reply()
            finally:
                c.close()
            return dict(f.split("=", 1) for f in answer.split()[1:])
        except (OSError, AssertionError, AttributeError, ValueError):
            return None

    def hold_idle_sockets(self, port):
        for _ in range(IDLE_SOCKETS):
            if self.stop.is_set():
                return
            s = socket.socket()
            s.bind(("127.0.0.99", 0))
            s.settimeout(5)
            try:
                s.connect((NODE0, port))
            except OSError:
                s.close()
                continue
            self.held.append(s)

    def storm(self, port, seconds):
        end = time.monotonic() + seconds
        while not self.stop.is_set() and time.monotonic() < end:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST: no TIME_WAIT pile-up
            s.bind(("127.0.0.98", 0))
            s.settimeout(2)
            try:
                s.connect((NODE0, port))
                self.storm_count[0] += 1
            except OSError:
                pass
            s.close()

    def background(self, fn, *args):
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self.threads.append(t)

    def test_a_killed_node_rejoins_within_60_s_while_node_0_is_flooded_and_its_metrics_keep_answering(self):
        self.secret_file = self.path("secret")
        with open(self.secret_file, "wb") as f:
            f.write(SECRET)
        ports = (free_port(), free_port(), free_port())
        rdzv_port, _, metrics_port = ports
        go = self.path("go")
        # node 0 starts with a low soft descriptor limit; it raises it to the hard one itself.
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        n0 = self.node(0, ports, go, prefix=["prlimit", f"--nofile=256:{hard}"])
        n1 = self.node(1, ports, go)
        wait_until(lambda: (self.status(rdzv_port) or {}).get("nodes") == "2", what="both nodes in the group")
        with open(f"/proc/{n0.proc.pid}/limits") as f:
            nofile = next(line.split()[3:5] for line in f if line.startswith("Max open files"))
        self.assertEqual(nofile, [str(hard), str(hard)], "node 0 did not raise its soft descriptor limit")

        self.background(self.hold_idle_sockets, metrics_port)
        self.background(self.storm, rdzv_port, 120)
        wait_until(lambda: len(self.held) >= IDLE_SOCKETS * 0.9 or not self.threads[0].is_alive(), 120,
                   "the idle sockets connected")
        self.assertGreaterEqual(len(self.held), IDLE_SOCKETS * 0.9, "the flood could not connect its sockets")
        self.assertIn("kubedist_launcher", metrics(metrics_port))

        round_before = int(self.status(rdzv_port)["round"])
        n1.proc.send_signal(signal.SIGKILL)
        n1.proc.wait()
        wait_until(lambda: (self.status(rdzv_port) or {}).get("phase") == "gathering", 30, "node 0 seeing node 1 gone")
        killed_at = time.monotonic()
        n1 = self.node(1, ports, go)

        def rejoined():
            s = self.status(rdzv_port)
            return s if s and s["phase"] == "running" and s["nodes"] == "2" and int(s["round"]) > round_before else None
        answered = []
        while time.monotonic() - killed_at < REJOIN_DEADLINE and not rejoined():
            answered.append(bool(metrics(metrics_port)))  # raises if node 0 stops answering
            time.sleep(0.5)
        rejoin_s = time.monotonic() - killed_at
        self.assertTrue(rejoined(), f"node 1 did not rejoin within {REJOIN_DEADLINE} s:\n{n1.stderr()}")
        self.assertGreater(self.storm_count[0], 100, "the storm never reached node 0")
        body = metrics(metrics_port)
        self.assertIn("kubedist_launcher", body)
        # The supervisor (the guard's child) holds node 0's sockets.
        with open(f"/proc/{n0.proc.pid}/task/{n0.proc.pid}/children") as f:
            supervisor = int(f.read().split()[0])
        fds = len(os.listdir(f"/proc/{supervisor}/fd"))
        self.assertLess(fds, 64 + 64 + 32 + 64, "node 0 holds a descriptor per flood connection")
        print(f"rejoined in {rejoin_s:.1f} s with {len(self.held)} idle sockets held and {self.storm_count[0]} "
              f"storm connections; node 0 holds {fds} descriptors; /metrics answered {len(answered) + 2} times")
        self.stop.set()
        with open(go, "w"):
            pass
        self.assertEqual(n0.wait(), 0, n0.stderr())
        self.assertEqual(n1.wait(), 0, n1.stderr())

    def test_a_burst_of_300_joiners_from_one_address_all_join_though_only_64_may_wait_unjoined(self):
        # A job's pods starting together: more joiners connect than node 0 keeps strangers before it has read their
        # JOINs. Node 0 reads the strangers' input before pushing one out, so every JOIN waiting in a socket counts.
        n = 301
        rdzv_port, master_port = free_port(), free_port()
        n0 = self.launch([f"--nnodes={n}", "--node-rank=0", "--master-addr=127.0.0.1", f"--master-port={master_port}",
                          f"--rdzv-endpoint=127.0.0.1:{rdzv_port}", "--rdzv-id=burst", "--rdzv-conf=join_timeout=120",
                          "--no-python", "--", "true"])
        wait_until(lambda: self._listening(rdzv_port), what="node 0 listening")
        joiners = []
        for rank in range(1, n):
            s = socket.create_connection(("127.0.0.1", rdzv_port), timeout=30)
            s.sendall(f"JOIN burst {rank} 1\n".encode())
            joiners.append(s)
        rounds = 0
        for s in joiners:
            line = s.makefile("rb").readline().decode()
            rounds += line.startswith("ROUND ")
        for s in joiners:
            s.close()
        n0.kill()
        self.assertEqual(rounds, n - 1, n0.stderr())
        self.assertNotIn("(not a member) for one from", n0.stderr())

    @staticmethod
    def _listening(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False


if __name__ == "__main__":
    unittest.main()
