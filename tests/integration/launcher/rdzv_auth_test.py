"""The rendezvous port against anyone who can reach it: a per-job secret signs every line (forged JOIN, LEAVE and
STATUS are refused and change nothing), and bounds on line length, connections and idle time hold without one."""
import hashlib
import hmac
import os
import socket
import threading
import unittest

from harness import LauncherTest, free_port, wait_until

SECRET = b"\x00\x01 this job's secret, 32 bytes\n"


class RdzvConnection:
    """A client of node 0's rendezvous port speaking the wire format of launcher-sidecar/src/rendezvous/auth.h."""

    def __init__(self, port, secret=None, host="127.0.0.1", timeout=10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf, self.secret, self.sent, self.received = b"", secret, 0, 0
        self.challenge = None
        if secret is not None:
            hello = self.line()
            self.assert_(hello is not None and hello.startswith("HELLO "), hello)
            self.challenge = hello.split()[1]

    @staticmethod
    def assert_(cond, what):
        if not cond:
            raise AssertionError(what)

    def mac(self, direction, n, line, secret=None):
        text = f"kubedist-rdzv-1 {direction} {self.challenge} {n} {line}".encode()
        return hmac.new(secret or self.secret, text, hashlib.sha256).hexdigest()

    def send(self, line, secret=None, plain=False):
        """Sends one line: sealed with the secret (or another one, a forger's), or plain."""
        if not plain and self.challenge is not None:
            self.sent += 1
            line = f"MAC {self.sent} {self.mac('req', self.sent, line, secret)} {line}"
        self.sock.sendall(line.encode() + b"\n")

    def line(self):
        """The next line, None when node 0 closed the connection."""
        while b"\n" not in self.buf:
            try:
                chunk = self.sock.recv(4096)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def reply(self):
        """The next line from node 0, its MAC checked when there is a secret."""
        line = self.line()
        if line is None or self.challenge is None:
            return line
        _, n, mac, plain = line.split(" ", 3)
        self.received += 1
        self.assert_(n == str(self.received) and hmac.compare_digest(mac, self.mac("rep", self.received, plain)), line)
        return plain

    def close(self):
        self.sock.close()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


class RdzvAuth(LauncherTest):
    def setUp(self):
        super().setUp()
        self.master_port, self.rdzv_port = free_port(), free_port()
        self.secret_file = self.path("secret")
        with open(self.secret_file, "wb") as f:
            f.write(SECRET)

    def node(self, node_rank, nnodes, script, *flags, secret=True):
        args = [f"--nnodes={nnodes}", f"--node-rank={node_rank}", "--master-addr=127.0.0.1",
                f"--master-port={self.master_port}", f"--rdzv-endpoint=127.0.0.1:{self.rdzv_port}", "--rdzv-id=job",
                "--rdzv-conf=last_call_timeout=0.2,join_timeout=60", "--max-restarts=3", "--stop-timeout=5", *flags,
                "--no-python", "--", "sh", "-c", script]
        return self.launch(args, {"KUBEDIST_RDZV_SECRET_FILE": self.secret_file} if secret else {})

    def status(self, secret=SECRET):
        c = RdzvConnection(self.rdzv_port, secret)
        try:
            c.send("STATUS")
            answer = c.reply()
        finally:
            c.close()
        self.assertTrue(answer and answer.startswith("STATUS "), answer)
        return dict(f.split("=", 1) for f in answer.split()[1:])

    def status_or_none(self, secret=SECRET):
        try:
            return self.status(secret)
        except (OSError, AssertionError):
            return None

    def refused(self, line, secret=None, plain=False):
        """Sends a line as a stranger and expects node 0 to say REFUSED and close the connection."""
        c = RdzvConnection(self.rdzv_port, SECRET)
        try:
            c.send(line, secret=secret, plain=plain)
            answer = c.reply()  # signed by node 0, after its HELLO
            self.assertTrue(answer is None or answer.startswith("REFUSED "), f"node 0 answered {line!r}: {answer!r}")
            self.assertIsNone(c.line(), f"node 0 kept the connection open after {line!r}")
        finally:
            c.close()

    def lines(self, name):
        try:
            return self.read(name).splitlines()
        except FileNotFoundError:
            return []

    def test_forged_join_leave_release_and_status_are_refused_and_the_group_is_unchanged(self):
        log, go = self.path("log"), self.path("go")
        script = f'echo "$GROUP_RANK $GROUP_WORLD_SIZE $TORCHELASTIC_RESTART_COUNT" >> {log}; ' \
                 f'while [ ! -e {go} ]; do sleep 0.05; done'
        # MIN 2: the first round has both nodes; a third (forged) one would join the running group as a scale restart.
        n0 = self.node(0, "2:3", script)
        n1 = self.node(1, "2:3", script)
        wait_until(lambda: (self.status_or_none() or {}).get("nodes") == "2", what="two nodes running")
        for line in ("JOIN job 2 1", "LEAVE", "RELEASE 1 cordoned"):
            self.refused(line, plain=True)
            self.refused(line, secret=b"a forger's guess at the secret")
        self.refused("STATUS", plain=True)
        for reason in ("no MAC", "wrong MAC"):
            wait_until(lambda: f": {reason}" in n0.stderr(), what=f"'{reason}' logged")
        # A message signed with the secret but sent before node 0's HELLO is read cannot be valid either: a line
        # recorded from one connection (its challenge) fails on any other.
        recorded = RdzvConnection(self.rdzv_port, SECRET)
        recorded.send("STATUS")
        sealed = f"MAC 1 {recorded.mac('req', 1, 'STATUS')} STATUS"
        recorded.close()
        self.refused(sealed, plain=True)
        st = self.status()
        self.assertEqual((st["nodes"], st["restarts"], st["scale"], st["phase"]), ("2", "0", "0", "running"), st)
        open(go, "w").close()
        self.assertEqual(n0.wait(), 0, n0.stderr())
        self.assertEqual(n1.wait(), 0, n1.stderr())
        self.assertEqual(sorted(self.lines("log")), ["0 2 0", "1 2 0"])

    def test_a_node_without_the_secret_or_with_another_one_is_told_so_and_stops(self):
        n0 = self.node(0, "1:2", "exec sleep 300")
        wait_until(lambda: (self.status_or_none() or {}).get("nodes") == "1", what="node 0 running alone")
        n1 = self.node(1, "1:2", "exec sleep 300", secret=False)
        self.assertEqual(n1.wait(), 1, n1.stderr())
        self.assertIn("node 0 asks for a rendezvous secret: give every node the same --rdzv-secret-file", n1.stderr())
        with open(self.path("other"), "wb") as f:
            f.write(b"another job's secret, 32 bytes..")
        # Node 0 signs its refusal; this node cannot verify it (another secret), so it does not stop at once, as a
        # forged refusal must not stop it either: it retries until join_timeout, then gives up with the reason.
        n1 = self.launch([f"--nnodes=1:2", "--node-rank=1", "--master-addr=127.0.0.1",
                          f"--master-port={self.master_port}", f"--rdzv-endpoint=127.0.0.1:{self.rdzv_port}",
                          "--rdzv-id=job", f"--rdzv-secret-file={self.path('other')}", "--rdzv-conf=join_timeout=2",
                          "--no-python", "--", "true"])
        self.assertEqual(n1.wait(), 1, n1.stderr())
        self.assertIn("node 0 refused this node (wrong MAC (not signed with this job's rendezvous secret)), and the "
                      "refusal does not verify with this node's secret", n1.stderr())
        self.assertEqual(self.status()["nodes"], "1")
        self.assertIsNone(self.status_or_none(secret=b"not the secret, still 16+ bytes"))
        n0.kill()

    def test_node_0_signs_its_refusals_and_a_member_ignores_an_unsigned_one(self):
        n0 = self.node(0, "1:2", "exec sleep 300")
        wait_until(lambda: (self.status_or_none() or {}).get("nodes") == "1", what="node 0 running alone")
        c = RdzvConnection(self.rdzv_port, SECRET)
        try:
            c.send("JOIN job 1 1", secret=b"a forger's secret, 16+ bytes")
            self.assertEqual(c.reply(), "REFUSED wrong MAC (not signed with this job's rendezvous secret)")
        finally:
            c.close()
        # A listener that says HELLO, then REFUSED unsigned (a forger at node 0's address): the node keeps trying.
        fake = socket.socket()
        fake.bind(("127.0.0.1", 0))
        fake.listen(16)
        fake_port = fake.getsockname()[1]
        stop = threading.Event()

        def forge():
            fake.settimeout(0.2)
            while not stop.is_set():
                try:
                    s, _ = fake.accept()
                except OSError:
                    continue
                s.sendall(b"HELLO " + b"0" * 32 + b"\nREFUSED go away\n")
                s.close()
        t = threading.Thread(target=forge, daemon=True)
        t.start()
        try:
            n1 = self.launch(["--nnodes=1:2", "--node-rank=1", "--master-addr=127.0.0.1",
                              f"--master-port={self.master_port}", f"--rdzv-endpoint=127.0.0.1:{fake_port}",
                              "--rdzv-id=job", f"--rdzv-secret-file={self.secret_file}",
                              "--rdzv-conf=join_timeout=2", "--no-python", "--", "true"])
            self.assertEqual(n1.wait(), 1, n1.stderr())
            self.assertIn("an unsigned refusal (go away), not node 0's; reconnecting", n1.stderr())
            self.assertGreater(n1.stderr().count("an unsigned refusal"), 1, "it stopped at the first forged refusal")
        finally:
            stop.set()
            t.join()
            fake.close()
        n0.kill()

    def replayer(self, recorded, close_on_nonce=False):
        """A listener at a stand-in for node 0's address that replays node 0's recorded lines to whoever connects
        (or closes on a member's NONCE, as a launcher that does not know it would); the first line of each
        connection that is not a STATUS question (a member asks node 0's STATUS before its JOIN) is kept.
        Returns (port, first lines, stop)."""
        fake = socket.socket()
        fake.bind(("127.0.0.1", 0))
        fake.listen(16)
        fake.settimeout(0.2)
        firsts, stop = [], threading.Event()

        def serve():
            while not stop.is_set():
                try:
                    s, _ = fake.accept()
                except OSError:
                    continue
                s.settimeout(2)
                try:
                    s.sendall(recorded[0])
                    with s.makefile("rb") as lines:  # closed, or it would keep the connection open
                        first = lines.readline().decode()
                        for _ in range(3):
                            if not first.endswith(" STATUS\n"):
                                break
                            first = lines.readline().decode()
                    firsts.append(first)
                    if not (close_on_nonce and " NONCE " in first):
                        s.sendall(b"".join(recorded[1:]))
                        s.recv(4096)
                except OSError:
                    pass
                s.close()
            fake.close()
        t = threading.Thread(target=serve, daemon=True)
        t.start()

        def stopped():
            stop.set()
            t.join()
        return fake.getsockname()[1], firsts, stopped

    def test_node_0s_lines_recorded_from_another_connection_do_not_pass_for_a_members(self):
        n0 = self.node(0, "1:2", "exec sleep 300")
        wait_until(lambda: (self.status_or_none() or {}).get("nodes") == "1", what="node 0 running alone")
        # A recording of node 0 giving a joiner (without a nonce of its own) its place in a round.
        c = RdzvConnection(self.rdzv_port, SECRET)
        hello = f"HELLO {c.challenge}\n".encode()
        c.send("JOIN job 1 1")
        round_line = c.line()
        c.close()
        self.assertTrue(round_line.split(" ", 3)[3].startswith("ROUND "), round_line)
        port, firsts, stop = self.replayer([hello, round_line.encode() + b"\n"])
        started = self.path("started")
        try:
            n1 = self.launch(["--nnodes=1:2", "--node-rank=1", "--master-addr=127.0.0.1",
                              f"--master-port={self.master_port}", f"--rdzv-endpoint=127.0.0.1:{port}",
                              "--rdzv-id=job", f"--rdzv-secret-file={self.secret_file}", "--no-python", "--",
                              "touch", started])
            wait_until(lambda: n1.stderr().count("refused a message from node 0: wrong MAC") >= 2,
                       what="the replayed ROUND refused twice")
            self.assertFalse(os.path.exists(started), "a replayed ROUND started this node's workers")
            self.assertTrue(firsts and all(" NONCE " in f for f in firsts), firsts)
            n1.kill()
        finally:
            stop()
        n0.kill()

    def test_a_member_joins_a_node_0_that_closes_on_its_nonce_without_one(self):
        # An earlier launcher as node 0 closes on a NONCE it does not know; the member joins without one after.
        port, firsts, stop = self.replayer([f"HELLO {'0' * 32}\n".encode()], close_on_nonce=True)
        try:
            n1 = self.launch(["--nnodes=1:2", "--node-rank=1", "--master-addr=127.0.0.1",
                              f"--master-port={self.master_port}", f"--rdzv-endpoint=127.0.0.1:{port}",
                              "--rdzv-id=job", f"--rdzv-secret-file={self.secret_file}", "--no-python", "--", "true"])
            wait_until(lambda: len(firsts) >= 2, what="a second connection")
            n1.kill()
            self.assertIn("node 0 took no member nonce (an earlier launcher?): joining without one", n1.stderr())
            self.assertIn(" NONCE ", firsts[0])
            self.assertTrue(all(" JOIN " in f for f in firsts[1:]), firsts)
        finally:
            stop()

    def test_a_node_with_a_secret_gives_up_on_a_node_0_without_one_after_join_timeout(self):
        n0 = self.node(0, "1:2", "exec sleep 300", secret=False)
        wait_until(lambda: (self.status_or_none(None) or {}).get("nodes") == "1", what="node 0 running alone")
        n1 = self.node(1, "1:2", "exec sleep 300", "--rdzv-conf=join_timeout=2")
        self.assertEqual(n1.wait(), 1, n1.stderr())
        self.assertIn("no HELLO from node 0 (does it have the same --rdzv-secret-file?)", n1.stderr())
        self.assertEqual(self.status(None)["nodes"], "1")
        n0.kill()

    def test_a_10mb_line_closes_the_connection_without_being_buffered(self):
        n0 = self.node(0, "1:2", "exec sleep 300", secret=False)  # the bounds hold without a secret too
        wait_until(lambda: (self.status_or_none(None) or {}).get("phase") == "running", what="node 0 running")
        before = rss_kib(n0.proc.pid)
        for ending in (b"", b"\n"):
            with socket.create_connection(("127.0.0.1", self.rdzv_port), timeout=10) as s:
                try:
                    s.sendall(b"JOIN " + b"x" * (10 << 20) + ending)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # closed by node 0 while we were still sending: what we want
                answer = b""
                try:
                    while chunk := s.recv(4096):  # node 0's reason, then the end (a timeout if it stays open)
                        answer += chunk
                except ConnectionResetError:
                    pass
                self.assertIn(answer, (b"", b"REFUSED a line longer than 65536 bytes\n"))
        wait_until(lambda: "a line longer than 65536 bytes" in n0.stderr(), what="the refusal logged")
        self.assertLess(rss_kib(n0.proc.pid) - before, 2048, "node 0 grew by more than 2 MiB")
        self.assertEqual(self.status(None)["phase"], "running")
        n0.kill()

    def test_500_idle_connections_neither_keep_members_out_nor_stay_open(self):
        go = self.path("go")
        script = f"while [ ! -e {go} ]; do sleep 0.05; done"
        n0 = self.node(0, "2", script, "--rdzv-conf=idle_timeout=3")
        wait_until(lambda: self.status_or_none() is not None, what="node 0 listening")
        idle = []
        try:
            for _ in range(500):
                idle.append(socket.create_connection(("127.0.0.1", self.rdzv_port), timeout=10))
            self.status()  # answered once node 0 has accepted (and pushed out) every connection before it
            fds = len(os.listdir(f"/proc/{n0.proc.pid}/fd"))
            self.assertLess(fds, 64 + 32, "node 0 holds a file descriptor per idle connection")
            n1 = self.node(1, "2", script)
            wait_until(lambda: (self.status_or_none() or {}).get("nodes") == "2", what="node 1 joined")
            # A STATUS asker is answered but is no member: it is closed after the idle timeout too (3 s here).
            asker = RdzvConnection(self.rdzv_port, SECRET)
            try:
                asker.send("STATUS")
                self.assertTrue(asker.reply().startswith("STATUS "))
                self.assertIsNone(asker.line())  # socket timeout (10 s) if node 0 keeps it open
            finally:
                asker.close()
            # The connections that were not pushed out are closed after the idle timeout.
            for s in idle[-10:]:
                s.settimeout(10)  # the deadline: recv raises socket.timeout if node 0 keeps it open
                try:
                    while s.recv(4096):  # its HELLO, then the end
                        pass
                except ConnectionResetError:
                    pass
        finally:
            for s in idle:
                s.close()
        open(go, "w").close()
        self.assertEqual(n0.wait(), 0, n0.stderr())
        self.assertEqual(n1.wait(), 0, n1.stderr())

    def test_a_missing_or_short_secret_file_is_a_clear_one_line_error(self):
        missing = self.launch(["--rdzv-secret-file", self.path("none"), "--no-python", "--", "true"])
        self.assertEqual(missing.wait(), 2)
        self.assertEqual(missing.stderr(), f"kubedist-launcher: --rdzv-secret-file {self.path('none')}: "
                                           "No such file or directory\n")
        with open(self.secret_file, "wb") as f:
            f.write(b"short")
        short = self.launch(["--no-python", "--", "true"], {"PET_RDZV_SECRET_FILE": self.secret_file})
        self.assertEqual(short.wait(), 2)
        self.assertIn("a secret must have 16 to 4096 bytes (this one has 5)", short.stderr())
        self.assertEqual(short.stderr().count("\n"), 1, short.stderr())

    def test_a_secret_file_of_another_fingerprint_than_the_operator_wrote_is_refused(self):
        """A Secret J-rdzv written by someone before the operator could: the pod's KUBEDIST_RDZV_SECRET_FINGERPRINT
        names the secret the operator wrote, and the launcher signs with no other."""
        def fingerprint(secret):
            return hmac.new(secret, b"kubedist-rdzv-job-fingerprint-1", hashlib.sha256).hexdigest()[:16]
        env = {"KUBEDIST_RDZV_SECRET_FILE": self.secret_file, "KUBEDIST_TERMINATION_LOG": self.path("termination")}
        written = fingerprint(b"the secret the operator wrote, 32 bytes")
        theirs = self.launch(["--no-python", "--", "true"], {**env, "KUBEDIST_RDZV_SECRET_FINGERPRINT": written})
        self.assertEqual(theirs.wait(), 2)
        self.assertEqual(theirs.stderr(), f"kubedist-launcher: --rdzv-secret-file {self.secret_file}: a rendezvous "
                         f"secret of fingerprint {fingerprint(SECRET)}, not the {written} the operator wrote for this "
                         "job (someone else wrote its Secret J-rdzv first): delete that Secret and this pod, and the "
                         "operator writes it again\n")
        with open(self.path("termination")) as f:
            self.assertIn("someone else wrote its Secret J-rdzv first", f.read())
        ours = self.launch(["--no-python", "--", "true"], {**env, "KUBEDIST_RDZV_SECRET_FINGERPRINT": fingerprint(SECRET)})
        self.assertEqual(ours.wait(), 0, ours.stderr())


if __name__ == "__main__":
    unittest.main()
