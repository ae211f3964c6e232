"""Rendezvous across launchers on 127.0.0.1 with shell workers: growing, waiting below MIN, refusing, failing."""
import os
import socket
import unittest

from harness import LauncherTest, free_port, free_port_pair, pid_alive, wait_until


class MultiNode(LauncherTest):
    def setUp(self):
        super().setUp()
        self.master_port, self.rdzv_port = free_port(), free_port()

    def node(self, node_rank, nnodes, script, *flags, run_id="job", env=None):
        rank_flag = [] if node_rank is None else [f"--node-rank={node_rank}"]
        args = [f"--nnodes={nnodes}", *rank_flag, "--master-addr=127.0.0.1",
                f"--master-port={self.master_port}", f"--rdzv-endpoint=127.0.0.1:{self.rdzv_port}",
                f"--rdzv-id={run_id}", *flags, "--no-python", "--", "sh", "-c", script]
        return self.launch(args, env)

    def lines(self, name):
        try:
            return self.read(name).splitlines()
        except FileNotFoundError:
            return []

    def test_the_operators_env_alone_runs_a_job_with_rendezvous_on_master_port_plus_one(self):
        # Exactly what a pod gets: env from the operator, and `kubedist-launcher --no-python -- <command>`.
        log, port = self.path("log"), free_port_pair()
        script = f'echo "$RANK $WORLD_SIZE $LOCAL_RANK $GROUP_RANK $MASTER_ADDR $MASTER_PORT $TORCHELASTIC_RUN_ID" >> {log}'
        for node_rank in (1, 0):
            env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "NODE_RANK": str(node_rank), "NNODES": "2",
                   "NPROC_PER_NODE": "2", "KUBEDIST_JOB": "resnet", "PET_MASTER_ADDR": "127.0.0.1",
                   "PET_MASTER_PORT": str(port), "PET_NODE_RANK": str(node_rank), "PET_NNODES": "2",
                   "PET_NPROC_PER_NODE": "2", "PET_MAX_RESTARTS": "1"}
            self.launch(["--no-python", "--", "sh", "-c", script], env)
        for launcher in self.launchers:
            self.assertEqual(launcher.wait(), 0, launcher.stderr())
        self.assertEqual(sorted(self.lines("log")),
                         [f"{r} 4 {r % 2} {r // 2} 127.0.0.1 {port} resnet" for r in range(4)])

    def test_a_joining_node_grows_the_running_group(self):
        log, go = self.path("log"), self.path("go")
        script = f'echo "$WORLD_SIZE $RANK $GROUP_RANK $TORCHELASTIC_RESTART_COUNT" >> {log}; while [ ! -e {go} ]; do sleep 0.05; done'
        flags = ["--max-restarts=2", "--rdzv-conf=last_call_timeout=0.2,join_timeout=60", "--stop-timeout=5"]
        n0 = self.node(0, "1:2", script, *flags)
        wait_until(lambda: "1 0 0 0" in self.lines("log"), what="node 0 running alone")
        n1 = self.node(1, "1:2", script, *flags)
        wait_until(lambda: {"2 0 0 1", "2 1 1 1"} <= set(self.lines("log")), what="both nodes in round 2")
        open(go, "w").close()
        self.assertEqual(n0.wait(), 0, n0.stderr())
        self.assertEqual(n1.wait(), 0, n1.stderr())

    def test_a_late_joiner_is_admitted_without_restarts_left_as_torchrun_admits_it(self):
        # --max-restarts defaults to 0: growing the group is a membership change, not a retry.
        log, go = self.path("log"), self.path("go")
        script = f'echo "$WORLD_SIZE $RANK $TORCHELASTIC_RESTART_COUNT" >> {log}; while [ ! -e {go} ]; do sleep 0.05; done'
        flags = ["--rdzv-conf=last_call_timeout=0.2,join_timeout=60", "--stop-timeout=5"]
        n0 = self.node(0, "1:2", script, *flags)
        wait_until(lambda: "1 0 0" in self.lines("log"), what="node 0 running alone")
        n1 = self.node(1, "1:2", script, *flags)
        wait_until(lambda: {"2 0 1", "2 1 1"} <= set(self.lines("log")), what="both nodes in the grown group")
        open(go, "w").close()
        self.assertEqual(n0.wait(), 0, n0.stderr())
        self.assertEqual(n1.wait(), 0, n1.stderr())

    def test_a_late_joiner_of_a_full_group_says_it_was_not_admitted_and_fails(self):
        log, go = self.path("log"), self.path("go")
        script = f'echo "$GROUP_RANK" >> {log}; while [ ! -e {go} ]; do sleep 0.05; done'
        nodes = [self.c10d_node("127.0.0.1", 2, script, "--rdzv-conf=join_timeout=60") for _ in range(2)]
        wait_until(lambda: len(self.lines("log")) == 2, what="both nodes running")
        late = self.c10d_node("127.0.0.1", 2, script, "--rdzv-conf=join_timeout=60")
        wait_until(lambda: "joined the rendezvous" in late.stderr(), what="the third node connected")
        open(go, "w").close()
        for n in nodes:
            self.assertEqual(n.wait(), 0, n.stderr())
        self.assertEqual(late.wait(), 1, late.stderr())
        self.assertIn("kubedist-launcher: this node was not admitted (the group already had the maximum of 2 nodes) "
                      "and the job finished without it\n", late.stderr())
        self.assertEqual(sorted(self.lines("log")), ["0", "1"])

    def status(self):
        """One STATUS request to node 0's rendezvous service, as the operator's poller sends it; {} while the
        service does not listen yet (node 0's launcher starting)."""
        try:
            s = socket.create_connection(("127.0.0.1", self.rdzv_port), timeout=5)
        except OSError:  # refused, or reset while node 0's launcher starts or goes
            return {}
        with s:
            s.sendall(b"STATUS\n")
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = s.recv(512)
                if not chunk:
                    break
                answer += chunk
        fields = answer.decode().split()
        self.assertEqual(fields[0], "STATUS", answer)
        return dict(f.split("=", 1) for f in fields[1:])

    def test_status_reports_restarts_by_cause_and_sigterm_leaves_as_a_scale(self):
        go = self.path("go")
        script = f'if [ "$CRASH" = 1 ] && [ ! -e {go}.crashed ]; then touch {go}.crashed; exit 7; fi; ' \
                 f'while [ ! -e {go} ]; do sleep 0.05; done'
        flags = ["--max-restarts=5", "--rdzv-conf=last_call_timeout=0.2,join_timeout=60", "--stop-timeout=5"]
        n0 = self.launch([f"--nnodes=1:2", "--node-rank=0", "--master-addr=127.0.0.1",
                          f"--master-port={self.master_port}", f"--rdzv-endpoint=127.0.0.1:{self.rdzv_port}",
                          "--rdzv-id=job", *flags, "--no-python", "--", "sh", "-c", script], {"CRASH": "1"})
        def running(**want):
            st = self.status()
            return st.get("phase") == "running" and all(st.get(k) == str(v) for k, v in want.items())
        wait_until(lambda: running(worker_crash=1, restarts=1, nodes=1), what="a worker crash counted")
        n1 = self.node(1, "1:2", script, *flags)
        wait_until(lambda: running(scale=1, restarts=2, nodes=2, world_size=2), what="a joiner counted as scale")
        n1.proc.terminate()
        self.assertEqual(n1.wait(), 128 + 15, n1.stderr())
        wait_until(lambda: running(scale=2, node_lost=0, restarts=3, nodes=1), what="SIGTERM counted as scale")
        n1 = self.node(1, "1:2", script, *flags)
        wait_until(lambda: running(scale=3, restarts=4, nodes=2), what="the node back")
        n1.kill()
        wait_until(lambda: running(node_lost=1, scale=3, worker_crash=1, restarts=5, nodes=1),
                   what="a vanished node counted as node_lost")
        open(go, "w").close()
        self.assertEqual(n0.wait(), 0, n0.stderr())

    def test_a_spare_waits_without_workers_then_takes_a_lost_nodes_place_and_status_says_so(self):
        log, go = self.path("log"), self.path("go")
        script = f'echo "$GROUP_RANK $RANK $WORLD_SIZE $TORCHELASTIC_RESTART_COUNT $TAG" >> {log}; ' \
                 f'while [ ! -e {go} ]; do sleep 0.05; done'
        flags = ["--max-restarts=2", "--rdzv-conf=join_timeout=60", "--stop-timeout=5"]
        spare = self.node(2, 2, script, "--spare", *flags, env={"TAG": "spare"})  # first: it must still wait
        n1 = self.node(1, 2, script, *flags, env={"TAG": "one"})
        n0 = self.node(0, 2, script, *flags, env={"TAG": "zero"})
        wait_until(lambda: {"0 0 2 0 zero", "1 1 2 0 one"} <= set(self.lines("log")), what="nodes 0 and 1 running")
        wait_until(lambda: self.status().get("spares") == "[2]", what="STATUS naming the ready spare")
        self.assertEqual(len(self.lines("log")), 2, "a spare runs no worker")
        n1.kill()  # node 1 vanishes: its node lost power, say
        wait_until(lambda: {"0 0 2 1 zero", "1 1 2 1 spare"} <= set(self.lines("log")),
                   what="the spare in node 1's place (group rank 1, rank 1) at the next round")
        st = self.status()
        self.assertEqual((st["stand_ins"], st["node_lost"], st["restarts"], st["nodes"], st["lost"]),
                         ("[1:2]", "1", "1", "2", "[1]"), st)
        self.assertNotIn("spares", st)
        open(go, "w").close()
        self.assertEqual(n0.wait(), 0, n0.stderr())
        self.assertEqual(spare.wait(), 0, spare.stderr())

    def test_a_rigid_jobs_member_stopped_with_sigterm_gives_its_place_to_the_spare(self):
        # Its pod evicted or deleted (`kubectl drain`, a preemption): a rigid job is never scaled down, so the spare
        # takes the place at once instead of the group waiting for a new pod.
        log, go = self.path("log"), self.path("go")
        script = f'echo "$GROUP_RANK $RANK $WORLD_SIZE $TORCHELASTIC_RESTART_COUNT $TAG" >> {log}; ' \
                 f'while [ ! -e {go} ]; do sleep 0.05; done'
        flags = ["--max-restarts=2", "--rdzv-conf=join_timeout=60", "--stop-timeout=5"]
        spare = self.node(2, 2, script, "--spare", *flags, env={"TAG": "spare"})
        n1 = self.node(1, 2, script, *flags, env={"TAG": "one"})
        n0 = self.node(0, 2, script, *flags, env={"TAG": "zero"})
        wait_until(lambda: {"0 0 2 0 zero", "1 1 2 0 one"} <= set(self.lines("log")), what="nodes 0 and 1 running")
        wait_until(lambda: self.status().get("spares") == "[2]", what="STATUS naming the ready spare")
        n1.proc.terminate()
        self.assertEqual(n1.wait(), 128 + 15, n1.stderr())
        wait_until(lambda: {"0 0 2 1 zero", "1 1 2 1 spare"} <= set(self.lines("log")),
                   what="the spare in node 1's place (group rank 1, rank 1) at the next round")
        st = self.status()
        self.assertEqual((st["stand_ins"], st["node_lost"], st["scale"], st["restarts"], st["nodes"]),
                         ("[1:2]", "1", "0", "1", "2"), st)
        open(go, "w").close()
        self.assertEqual(n0.wait(), 0, n0.stderr())
        self.assertEqual(spare.wait(), 0, spare.stderr())

    def test_a_spare_the_job_did_not_need_ends_with_zero(self):
        log, go = self.path("log"), self.path("go")
        script = f'echo "$GROUP_RANK" >> {log}; while [ ! -e {go} ]; do sleep 0.05; done'
        nodes = [self.node(n, 2, script, "--rdzv-conf=join_timeout=60") for n in (0, 1)]
        spare = self.node(2, 2, script, "--spare", "--rdzv-conf=join_timeout=60")
        wait_until(lambda: self.status().get("spares") == "[2]", what="the spare registered")
        open(go, "w").close()
        for n in nodes:
            self.assertEqual(n.wait(), 0, n.stderr())
        self.assertEqual(spare.wait(), 0, spare.stderr())
        self.assertEqual(sorted(self.lines("log")), ["0", "1"])

    def test_one_domains_nodes_take_consecutive_group_ranks_once_each_node_knows_its_own(self):
        # As in a pod with spec.placement.topologyKey: each node's domain in a file (the operator's annotation,
        # projected by the kubelet); node 2's file is still empty when it starts, so it waits for it (had it joined
        # without, it would be group rank 2: a node of no known domain goes before the named ones).
        log, go = self.path("log"), self.path("go")
        script = f'echo "$TAG $GROUP_RANK $RANK" >> {log}; while [ ! -e {go} ]; do sleep 0.05; done'
        files = {n: self.path(f"domain-{n}") for n in range(4)}
        for n, domain in ((0, "rack-b\n"), (1, "rack-a"), (2, ""), (3, "rack-b")):
            with open(files[n], "w") as f:
                f.write(domain)
        nodes = [self.node(n, 4, script, "--rdzv-conf=join_timeout=60",
                           env={"TAG": f"node{n}", "KUBEDIST_TOPOLOGY_DOMAIN_FILE": files[n]}) for n in range(4)]
        wait_until(lambda: "topology domain in" in nodes[2].stderr(), what="node 2 waiting for its domain")
        with open(files[2], "w") as f:
            f.write("rack-c")
        wait_until(lambda: len(self.lines("log")) == 4, what="the group of four formed")
        self.assertEqual(sorted(self.lines("log")), ["node0 0 0", "node1 2 2", "node2 3 3", "node3 1 1"],
                         "node 0, node 3 of its rack, then rack-a's node 1 and rack-c's node 2")
        open(go, "w").close()
        for n in nodes:
            self.assertEqual(n.wait(), 0, n.stderr())

    def test_a_domain_file_that_holds_no_label_value_is_said_and_ignored(self):
        log, domain = self.path("log"), self.path("domain")
        with open(domain, "w") as f:
            f.write("rack/a")  # not a node label's value
        n0 = self.node(0, 1, f'echo "$GROUP_RANK" >> {log}', env={"KUBEDIST_TOPOLOGY_DOMAIN_FILE": domain})
        self.assertEqual(n0.wait(), 0, n0.stderr())
        self.assertIn("ignoring the topology domain 'rack/a' in " + domain + ": not a node label's value", n0.stderr())
        self.assertNotIn("this node's topology domain is", n0.stderr())
        self.assertEqual(self.lines("log"), ["0"], "the job runs as without a domain")

    def test_a_replaced_node_0_goes_on_from_the_restart_counts_of_the_one_before(self):
        # Node 1's worker crashes twice; node 0's launcher is then killed before anyone asked its STATUS (as a node
        # losing its power takes it), and a new one takes its place: node 1 carries the counts it last saw.
        go, started = self.path("go"), self.path("started")
        script = f'if [ "$CRASH" = 1 ] && [ ! -e {go}.c2 ]; then ' \
                 f'if [ -e {go}.c1 ]; then touch {go}.c2; else touch {go}.c1; fi; exit 7; fi; ' \
                 f'[ "$CRASH" = 1 ] && echo "$TORCHELASTIC_RESTART_COUNT" >> {started}; ' \
                 f'while [ ! -e {go} ]; do sleep 0.05; done'
        flags = ["--max-restarts=5", "--rdzv-conf=join_timeout=60", "--stop-timeout=5"]
        n0 = self.node(0, 2, script, *flags)
        n1 = self.launch(["--nnodes=2", "--node-rank=1", "--master-addr=127.0.0.1",
                          f"--master-port={self.master_port}", f"--rdzv-endpoint=127.0.0.1:{self.rdzv_port}",
                          "--rdzv-id=job", *flags, "--no-python", "--", "sh", "-c", script], {"CRASH": "1"})
        def status(**want):
            st = self.status()
            return st if st.get("phase") == "running" and all(st.get(k) == str(v) for k, v in want.items()) else None
        before = wait_until(lambda: status(worker_crash=2, round=2, nodes=2), what="two worker crashes counted")
        self.assertEqual(before["carried"], "[]")  # the first node 0 took over nothing
        # Node 1's workers of round 2 run: node 0's STATUS came with that ROUND, before they started.
        wait_until(lambda: "2" in self.lines("started"), what="node 1's workers of round 2 started")
        n0.kill()
        # Its listening socket goes with the last of its processes (a worker may outlive it a moment here; a new pod
        # has an address of its own).
        def port_free():
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", self.rdzv_port))
                    return True
                except OSError:
                    return False
        wait_until(port_free, what="node 0's rendezvous port free")
        n0 = self.node(0, 2, script, *flags)
        after = wait_until(lambda: status(round=0, nodes=2), what="the group formed again under the new node 0")
        self.assertEqual(after["worker_crash"], "2", after)
        self.assertEqual(after["restarts"], "2", after)
        self.assertEqual(after["carried"], "[hang:0,node_lost:0,scale:0,worker_crash:2]", after)
        open(go, "w").close()
        self.assertEqual(n0.wait(), 0, n0.stderr())
        self.assertEqual(n1.wait(), 0, n1.stderr())

    def test_a_bad_request_is_refused_with_a_clear_error_and_the_service_keeps_serving(self):
        n0 = self.node(0, "1:2", "exec sleep 300", "--rdzv-conf=last_call_timeout=0.2,join_timeout=60")
        wait_until(lambda: self.rdzv_answers(), what="node 0 listening")
        with socket.create_connection(("127.0.0.1", self.rdzv_port), timeout=5) as s:
            s.sendall(b"STATUS please\n")
            self.assertEqual(s.recv(512), b"")  # dropped
        wait_until(lambda: "rendezvous: bad rendezvous request: 'STATUS please'" in n0.stderr(), what="error logged")
        with socket.create_connection(("127.0.0.1", self.rdzv_port), timeout=5) as s:
            s.sendall(b"JOIN other 1 2 3 1 0 0 0 0\n")  # another run's settings with MIN above MAX
            self.assertEqual(s.recv(512), b"")  # dropped
        wait_until(lambda: "rendezvous: bad rendezvous request: 'JOIN other 1 2 3 1 0 0 0 0'\n" in n0.stderr(),
                   what="error logged")
        self.assertIn(self.status()["phase"], ("gathering", "running"))

    def rdzv_answers(self):
        return bool(self.status())

    def test_a_worker_failure_with_no_restart_left_fails_every_node_with_its_code(self):
        script = 'if [ "$RANK" = 3 ]; then exit 42; fi; exec sleep 300'
        nodes = [self.node(n, 2, script, "--nproc-per-node=2", "--rdzv-conf=join_timeout=60",
                           f"--termination-log={self.path(f'termination-log-{n}')}") for n in (0, 1)]
        for n in nodes:
            self.assertEqual(n.wait(), 42, n.stderr())
        self.assertIn("worker failed: rank 3 (local rank 1", nodes[1].stderr())
        self.assertIn("giving up after 0 restart(s) (--max-restarts=0): node 1: rank 3", nodes[0].stderr())
        # Each pod's termination message says why: the failing worker where it ran, the job's reason elsewhere.
        self.assertEqual(self.read("termination-log-1"),
                         f"rank 3 (local rank 1) on {socket.gethostname()} exited with code 42")
        self.assertRegex(self.read("termination-log-0"),
                         r"^giving up after 0 restart\(s\) \(--max-restarts=0\): node 1: rank 3 \(local rank 1, pid \d+\) "
                         r"exited with code 42 at \S+$")

    def test_without_node_ranks_the_first_launcher_on_the_endpoints_host_hosts(self):
        # torchrun's c10d style: the same command on every node, no --node-rank.
        log = self.path("log")
        script = f'echo "$WORLD_SIZE $RANK $GROUP_RANK" >> {log}'
        nodes = [self.node(None, 2, script, "--rdzv-conf=join_timeout=60") for _ in range(2)]
        for n in nodes:
            self.assertEqual(n.wait(), 0, n.stderr())
        self.assertEqual(sorted(self.lines("log")), ["2 0 0", "2 1 1"])

    def c10d_node(self, endpoint_host, nnodes, script, *flags, run_id="job", port=None):
        """torchrun's c10d style: the same command on every node, no node rank and no master address."""
        args = [f"--nnodes={nnodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint_host}:{port or self.rdzv_port}",
                f"--rdzv-id={run_id}", *flags, "--no-python", "--", "sh", "-c", script]
        return self.launch(args)

    def accepts(self, host, port):
        try:
            socket.create_connection((host, port), timeout=1).close()
            return True
        except OSError:
            return False

    def test_without_a_master_address_every_node_gets_the_store_the_rendezvous_host_chose(self):
        # Node 0 is the host that 127.0.0.2 belongs to; before the fix node 1's workers got 127.0.0.1:29500.
        log = self.path("log")
        script = f'echo "$GROUP_RANK $MASTER_ADDR $MASTER_PORT" >> {log}'
        n0 = self.c10d_node("127.0.0.2", 2, script, "--rdzv-conf=join_timeout=60")
        wait_until(lambda: self.accepts("127.0.0.2", self.rdzv_port), what="node 0 hosting the rendezvous")
        n1 = self.c10d_node("127.0.0.2", 2, script, "--rdzv-conf=join_timeout=60")
        for n in (n0, n1):
            self.assertEqual(n.wait(), 0, n.stderr())
        lines = sorted(self.lines("log"))
        self.assertEqual([line.split()[:2] for line in lines], [["0", "127.0.0.2"], ["1", "127.0.0.2"]])
        ports = {line.split()[2] for line in lines}
        self.assertEqual(len(ports), 1, lines)
        self.assertNotIn("29500", ports)

    def test_a_given_master_port_is_kept_and_the_address_still_comes_from_the_rendezvous(self):
        log = self.path("log")
        script = f'echo "$GROUP_RANK $MASTER_ADDR $MASTER_PORT" >> {log}'
        flags = ["--rdzv-conf=join_timeout=60", f"--master_port={self.master_port}"]
        n0 = self.c10d_node("127.0.0.2", 2, script, *flags)
        wait_until(lambda: self.accepts("127.0.0.2", self.rdzv_port), what="node 0 hosting the rendezvous")
        n1 = self.c10d_node("127.0.0.2", 2, script, *flags)
        for n in (n0, n1):
            self.assertEqual(n.wait(), 0, n.stderr())
        self.assertEqual(sorted(self.lines("log")),
                         [f"0 127.0.0.2 {self.master_port}", f"1 127.0.0.2 {self.master_port}"])

    def test_losing_a_node_below_min_makes_the_rest_wait_then_fail_clearly(self):
        pids = self.path("pids")
        script = f'echo $$ >> {pids}; exec sleep 300'
        flags = ["--max-restarts=3", "--rdzv-conf=join_timeout=2"]
        n0, n1 = (self.node(n, 2, script, *flags) for n in (0, 1))
        wait_until(lambda: len(self.lines("pids")) == 2, what="both workers running")
        n1.proc.kill()
        self.assertEqual(n0.wait(), 1)
        self.assertIn("only 1 of the minimum 2 nodes joined within join_timeout (2 s); last event: node 1 left the job",
                      n0.stderr())
        for pid in map(int, self.lines("pids")):
            self.assertFalse(pid_alive(pid))

    def test_losing_node_zero_stops_the_other_nodes_workers_then_fails_clearly(self):
        pids = self.path("pids")
        script = f'echo "$GROUP_RANK $$" >> {pids}; exec sleep 300'
        n0, n1 = (self.node(n, 2, script, "--max-restarts=3", "--rdzv-conf=join_timeout=2") for n in (0, 1))
        wait_until(lambda: len(self.lines("pids")) == 2, what="both workers running")
        n0.proc.kill()
        node1_worker = int(next(line.split()[1] for line in self.lines("pids") if line.startswith("1 ")))
        wait_until(lambda: not pid_alive(node1_worker), what="node 1 to stop its worker")
        self.assertEqual(n1.wait(), 1)
        self.assertIn(f"cannot reach the rendezvous on node 0 at 127.0.0.1:{self.rdzv_port}", n1.stderr())

    def test_below_min_nodes_node_zero_waits_then_fails_clearly(self):
        n0 = self.node(0, 2, "true", "--rdzv-conf=join_timeout=1")
        self.assertEqual(n0.wait(), 1)
        self.assertIn("only 1 of the minimum 2 nodes joined within join_timeout (1 s)", n0.stderr())

    def test_a_node_gives_up_when_node_zero_never_answers(self):
        n1 = self.node(1, 2, "true", "--rdzv-conf=join_timeout=1")
        self.assertEqual(n1.wait(), 1)
        self.assertIn(f"cannot reach the rendezvous on node 0 at 127.0.0.1:{self.rdzv_port}", n1.stderr())

    def test_a_node_of_another_job_never_joins_this_jobs_group(self):
        # Same endpoint, different --rdzv-id: two rendezvous apart (torchrun's c10d). Node 0's elastic job would grow
        # if b's node joined it; instead b's node waits for a second node of b and fails with b's own settings.
        log, go = self.path("log"), self.path("go")
        n0 = self.node(0, "1:2", f'echo "$WORLD_SIZE" >> {log}; while [ ! -e {go} ]; do sleep 0.05; done',
                       "--rdzv-conf=last_call_timeout=0.1,join_timeout=60", run_id="a")
        wait_until(lambda: self.lines("log") == ["1"], what="node 0 running alone")
        n1 = self.node(1, 2, "true", "--rdzv-conf=join_timeout=3", run_id="b")
        wait_until(lambda: "joined the rendezvous" in n1.stderr(), what="b's node connected")
        open(go, "w").close()
        self.assertEqual(n0.wait(), 0, n0.stderr())
        # Node 0's job is over; it serves b's rendezvous until b is over too.
        self.assertIn("this job is over; still hosting the rendezvous of run b", n0.stderr())
        self.assertEqual(n1.wait(), 1, n1.stderr())
        self.assertIn("only 1 of the minimum 2 nodes joined within join_timeout (3 s)", n1.stderr())
        self.assertEqual(self.lines("log"), ["1"])

    def test_two_c10d_jobs_with_different_rdzv_ids_on_one_endpoint_each_form_their_own_group(self):
        log, go = self.path("log"), self.path("go")
        script = f'echo "$TORCHELASTIC_RUN_ID $WORLD_SIZE $RANK $MASTER_ADDR $MASTER_PORT" >> {log}; ' \
                 f'while [ ! -e {go} ]; do sleep 0.05; done'
        flags = "--rdzv-conf=join_timeout=60"
        first = self.c10d_node("127.0.0.1", 2, script, flags, run_id="a")
        wait_until(lambda: self.accepts("127.0.0.1", self.rdzv_port), what="the first launcher hosting")
        others = [self.c10d_node("127.0.0.1", 3, script, flags, run_id="b") for _ in range(3)]
        others.append(self.c10d_node("127.0.0.1", 2, script, flags, run_id="a"))
        wait_until(lambda: len(self.lines("log")) == 5, what="both jobs running at once")
        open(go, "w").close()
        for n in [first] + others:
            self.assertEqual(n.wait(), 0, n.stderr())
        jobs = {}
        for line in self.lines("log"):
            run, world, rank, addr, port = line.split()
            jobs.setdefault(run, []).append((world, rank, addr, port))
        self.assertEqual(sorted((w, r) for w, r, _, _ in jobs["a"]), [("2", "0"), ("2", "1")])
        self.assertEqual(sorted((w, r) for w, r, _, _ in jobs["b"]), [("3", "0"), ("3", "1"), ("3", "2")])
        stores = {run: {(a, p) for _, _, a, p in rows} for run, rows in jobs.items()}
        self.assertEqual(len(stores["a"]), 1, stores)
        self.assertEqual(len(stores["b"]), 1, stores)
        self.assertNotEqual(stores["a"], stores["b"])


if __name__ == "__main__":
    unittest.main()
