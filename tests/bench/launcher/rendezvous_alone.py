#!/usr/bin/env python3
"""Benchmark (never run by ctest): the rendezvous alone at N nodes, without starting a worker per node.

Node 0 is a real kubedist-launcher (it hosts the rendezvous and runs one worker, `sleep`); the other N-1 nodes are
played by this script on the rendezvous wire (launcher-sidecar/src/rendezvous/wire.h and auth.h), one connection
each, so that no process per node and no worker start shares the machine's CPUs with the rendezvous. Measures
  1. formation: from the last node's JOIN to every node holding its assignment (its ROUND read; node 0's own from its
     --rdzv-trace), and
  2. the same after a crash: node 1 reports a failed worker (FAILED), node 0 stops every node (STOP), every node
     JOINs again at once (as a launcher does when its workers are gone; node 0 after its worker stopped): from the
     last of those JOINs to every node holding its new assignment; and from the FAILED to that, the whole path;
with and without a rendezvous secret (with one, every line is sealed, node 0's ROUNDs are read but, unlike a
launcher, not verified here). The N-1 members share one Python process: reading N-1 sockets one after the other
is part of the figure, so it is an upper bound of what N machines would see.

  rendezvous_alone.py --launcher build/all/launcher-sidecar/kubedist-launcher [--nodes 64,256,1024] [--runs 5]
Target: under 100 ms at 1,024 nodes, for both.
"""
import argparse
import hashlib
import hmac
import os
import resource
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from rendezvous_scale import free_port

SECRET = b"a rendezvous secret for this benchmark, 48 bytes."


class Member:
    """One node on the wire: JOIN, read ROUND/STOP; lines sealed as auth.h says when there is a secret."""

    def __init__(self, port, node_rank, secret):
        self.node_rank, self.secret, self.sent, self.buf = node_rank, secret, 0, b""
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.challenge = None
        if secret:
            hello = self.read_line_blocking()
            assert hello.startswith("HELLO "), hello
            self.challenge = hello.split()[1]
            nonce = os.urandom(16).hex()
            self.send(f"NONCE {nonce}")
            self.challenge += ":" + nonce
            taken = self.read_line_blocking()
            assert taken.endswith(" NONCE TAKEN"), taken
        self.sock.setblocking(False)

    def read_line_blocking(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError(f"node 0 closed node {self.node_rank}'s connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def send(self, line):
        if self.secret:
            self.sent += 1
            text = f"kubedist-rdzv-1 req {self.challenge} {self.sent} {line}".encode()
            line = f"MAC {self.sent} {hmac.new(self.secret, text, hashlib.sha256).hexdigest()} {line}"
        self.sock.sendall(line.encode() + b"\n")

    def lines(self):
        """The plain lines that arrived (MACs not checked)."""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError(f"node 0 closed node {self.node_rank}'s connection")
                self.buf += chunk
        except BlockingIOError:
            pass
        *whole, self.buf = self.buf.split(b"\n")
        return [(l.decode().split(" ", 3)[3] if self.secret else l.decode()) for l in whole]


def wait_rounds(members, epoll, by_fd, timeout, on_stop=None):
    """Reads until every member holds a ROUND; returns {node rank: (time read, round)} and the STOP-answering JOIN
    times when on_stop is given (each member JOINs again as soon as its STOP is read)."""
    got, joins = {}, {}
    deadline = time.monotonic() + timeout
    while len(got) < len(members):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(got)} of {len(members)} nodes got a ROUND")
        for fd, _ in epoll.poll(1.0):
            m = by_fd[fd]
            for line in m.lines():
                now = time.time()
                if line.startswith("ROUND "):
                    got[m.node_rank] = (now, int(line.split()[1]))
                elif line.startswith("STOP ") and on_stop:
                    on_stop(m)
                    joins[m.node_rank] = time.time()
                elif line.startswith("FAIL "):
                    raise RuntimeError(f"node {m.node_rank}: {line}")
    return got, joins


def trace_events(path):
    out = {"join": [], "assigned": []}
    with open(path) as f:
        for line in f:
            ns, _, event = line.split()[:3]
            out[event].append(int(ns) / 1e9)
    return out


def trial(launcher, n, secret, timeout=120):
    d = tempfile.mkdtemp(prefix=f"kubedist-rdzv-alone-{n}-")
    port = free_port()
    trace = os.path.join(d, "trace")
    args = [launcher, f"--nnodes={n}", "--node-rank=0", "--nproc-per-node=1", "--master-addr=127.0.0.1",
            f"--master-port={port}", "--rdzv-id=bench", "--max-restarts=1", f"--rdzv-trace={trace}",
            "--rdzv-conf=join_timeout=300", "--no-python", "--", "sh", "-c", "exec sleep 600"]
    if secret:
        with open(os.path.join(d, "secret"), "wb") as f:
            f.write(SECRET)
        args.insert(1, f"--rdzv-secret-file={os.path.join(d, 'secret')}")
    node0 = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "node0.log"), "w"),
                             start_new_session=True)
    members = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port + 1), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or node0.poll() is not None:
                    raise RuntimeError("node 0 did not listen: " + open(os.path.join(d, "node0.log")).read())
                time.sleep(0.02)
        epoll = select.epoll()
        by_fd = {}
        # One after the other, as launchers arrive: node 0 keeps only 64 connections that have not joined yet.
        for rank in range(1, n):
            m = Member(port + 1, rank, SECRET if secret else None)
            m.send(f"JOIN bench {rank} 1")
            members.append(m)
            by_fd[m.sock.fileno()] = m
            epoll.register(m.sock.fileno(), select.EPOLLIN)
        last_join = time.time()
        got, _ = wait_rounds(members, epoll, by_fd, timeout)
        deadline = time.monotonic() + timeout
        while len(trace_events(trace)["assigned"]) < 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        ev = trace_events(trace)
        formation = max(max(t for t, _ in got.values()), ev["assigned"][0]) - max(last_join, ev["join"][0])
        round1 = got[1][1]

        crashed = time.time()
        members[0].send(f"FAILED {round1} 1 bench: node 1's worker exited with code 1")
        got2, joins = wait_rounds(members, epoll, by_fd, timeout, on_stop=lambda m: m.send(f"JOIN bench {m.node_rank} 1"))
        while len(trace_events(trace)["assigned"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        ev = trace_events(trace)
        assert all(r > round1 for _, r in got2.values()), got2
        last_rejoin = max(max(joins.values()), ev["join"][1])
        held = max(max(t for t, _ in got2.values()), ev["assigned"][1])
        return formation, held - last_rejoin, held - crashed
    finally:
        for m in members:
            m.sock.close()
        try:
            os.killpg(node0.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node0.wait()
        if os.environ.get("KEEP"): print("kept", d, file=sys.stderr)
        else: shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--nodes", default="64,256,1024")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    launcher = os.path.abspath(a.launcher)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows = []
    for secret in (False, True):
        for n in [int(x) for x in a.nodes.split(",") if x]:
            results = [trial(launcher, n, secret) for _ in range(a.runs)]
            med = [statistics.median(r[i] for r in results) for i in range(3)]
            rows.append((n, secret, med))
            print(f"[rdzv-alone] N={n} secret={secret}: " +
                  ", ".join(f"({r[0] * 1000:.1f}, {r[1] * 1000:.1f}, {r[2] * 1000:.1f}) ms" for r in results),
                  file=sys.stderr)
    print(f"Rendezvous alone: node 0 a real launcher, N-1 nodes on the wire from one process; {os.cpu_count()} CPUs;"
          f" medians of {a.runs}")
    print(f"  {'N':>5} {'secret':>6} {'formation':>10} {'after crash':>12} {'FAILED -> all held':>19}")
    for n, secret, (f, r, c) in rows:
        print(f"  {n:5d} {'yes' if secret else 'no':>6} {f * 1000:8.1f}ms {r * 1000:10.1f}ms {c * 1000:17.1f}ms")
    most = max(n for n, _, _ in rows)
    worst = max(max(m[0], m[1]) for n, _, m in rows if n == most)
    print(f"target: under 100 ms at {most} nodes: {'met' if worst < 0.100 else 'MISSED'}"
          f" (worst median {worst * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
