"""A node that vanishes without a word (its power lost, its cable cut: no FIN, no RST reaches the others) is found out
and the group goes on without it. Two real launchers in a network namespace of the test's own (root: ip netns,
iptables); once the elastic group (1:2 nodes) has formed, iptables drops every packet of node 1's rendezvous
connection in both directions: node 0's kernel gives the silent connection up (keepalive, io/net.h kDeadPeerSeconds),
and node 0 re-forms alone, its worker restarted at world size 1, within kDeadPeerSeconds plus a margin."""
import os
import subprocess
import time
import unittest

from harness import LauncherTest, wait_until

DEAD_PEER_S = 15  # launcher-sidecar/src/io/net.h kDeadPeerSeconds
RDZV_PORT, MASTER_PORT = 29401, 29500  # the namespace is the test's own: nothing else listens there


def sh(*args, check=True):
    return subprocess.run(args, capture_output=True, text=True, check=check)


class SilentPeer(LauncherTest):
    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("needs root (ip netns, iptables)")
        self.ns = f"kdsilent-{os.getpid()}"
        sh("ip", "netns", "add", self.ns)
        self.addCleanup(sh, "ip", "netns", "del", self.ns, check=False)
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")

    def node(self, rank):
        # Each worker notes its world size and restart count, then waits to be stopped.
        script = f'echo "$WORLD_SIZE $TORCHELASTIC_RESTART_COUNT" >> {self.tmp}/started-{rank}; exec sleep 600'
        return self.launch([f"--nnodes=1:2", f"--node-rank={rank}", "--nproc-per-node=1", "--master-addr=127.0.0.1",
                            f"--master-port={MASTER_PORT}", f"--rdzv-endpoint=127.0.0.1:{RDZV_PORT}",
                            "--rdzv-id=silent", "--rdzv-conf=last_call_timeout=0.5,join_timeout=120",
                            "--max-restarts=3", "--stop-timeout=2", "--no-python", "--", "sh", "-c", script],
                           prefix=["ip", "netns", "exec", self.ns])

    def started(self, rank):
        try:
            return [tuple(map(int, line.split())) for line in self.read(f"started-{rank}").splitlines() if line]
        except FileNotFoundError:
            return []

    def test_a_node_that_vanishes_without_a_word_is_dropped_and_the_group_goes_on(self):
        node0 = self.node(0)
        self.node(1)
        wait_until(lambda: (2, 0) in self.started(0) and (2, 0) in self.started(1), 60,
                   "both workers started at world size 2")
        for chain_rule in (("--dport", str(RDZV_PORT)), ("--sport", str(RDZV_PORT))):
            sh("ip", "netns", "exec", self.ns, "iptables", "-A", "INPUT", "-p", "tcp", *chain_rule, "-j", "DROP")
        cut = time.monotonic()
        wait_until(lambda: any(world == 1 for world, _ in self.started(0)), DEAD_PEER_S + 45,
                   "node 0's worker restarted at world size 1")
        found = time.monotonic() - cut
        self.assertLess(found, DEAD_PEER_S + 15, f"node 0 went on alone {found:.1f} s after the cut")
        self.assertIn((1, 1), self.started(0), "the restart is the group's first, at world size 1")
        self.assertIsNone(node0.proc.poll(), "node 0 goes on, not fails")
        print(f"node 0 re-formed alone {found:.1f} s after node 1 fell silent (kDeadPeerSeconds {DEAD_PEER_S})")


if __name__ == "__main__":
    unittest.main()
