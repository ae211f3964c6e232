"""The launcher with real PyTorch (Debian's torch 1.13, or torch 2.x in the torch2 variants; gloo on 127.0.0.1): DDP
training, restarts, elasticity."""
import glob
import json
import os
import signal
import socket
import unittest

from harness import DEADLINE, LauncherTest, free_port, torch_major, wait_until

TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers", "ddp_train.py")
TORCH_DEADLINE = max(DEADLINE, 240)
ENV = {"GLOO_SOCKET_IFNAME": "lo"}


class TorchJobs(LauncherTest):
    def results(self):
        out = {}
        for path in glob.glob(self.path("rank*.json")):
            with open(path) as f:
                r = json.load(f)
            out[r["rank"]] = r
        return out

    def assert_trained_identically(self, world):
        results = self.results()
        self.assertEqual(sorted(results), list(range(world)))
        first = results[0]["weights"]
        self.assertNotEqual(first, results[0]["initial"], "no training happened")
        for rank, r in results.items():
            self.assertEqual(r["world"], world)
            self.assertEqual(r["weights"], first, f"rank {rank} ended with other weights")
        return results

    def multi_node(self, nnodes, node_rank, master_port, rdzv_port, extra, steps, train_args=(), tag=""):
        args = [f"--nnodes={nnodes}", f"--node-rank={node_rank}", "--nproc-per-node=2", "--master-addr=127.0.0.1",
                f"--master-port={master_port}", f"--rdzv-endpoint=127.0.0.1:{rdzv_port}", "--rdzv-id=ddp",
                "--rdzv-conf=join_timeout=120,last_call_timeout=1", "--stop-timeout=5"] + extra
        return self.launch(args + [TRAIN, self.tmp, str(steps)] + list(train_args), dict(ENV, TEST_NODE=tag))

    def test_standalone_two_workers_train_to_identical_weights(self):
        l = self.launch(["--standalone", "--nproc-per-node=2", "--rdzv-id=solo", TRAIN, self.tmp, "5"], ENV)
        self.assertEqual(l.wait(TORCH_DEADLINE), 0, l.stderr())
        results = self.assert_trained_identically(2)
        self.assertEqual(results[1]["env"]["LOCAL_RANK"], "1")
        self.assertEqual(results[1]["env"]["TORCHELASTIC_RUN_ID"], "solo")
        self.assertEqual(results[1]["env"]["OMP_NUM_THREADS"], "1")

    def test_two_launchers_of_two_workers_train_to_identical_weights(self):
        mp, rp = free_port(), free_port()
        nodes = [self.multi_node(2, n, mp, rp, [], 5) for n in (1, 0)]  # node 1 first: it retries until node 0 listens
        for node in nodes:
            self.assertEqual(node.wait(TORCH_DEADLINE), 0, node.stderr())
        results = self.assert_trained_identically(4)
        self.assertEqual([results[r]["env"]["GROUP_RANK"] for r in range(4)], ["0", "0", "1", "1"])
        self.assertEqual({r["env"]["GROUP_WORLD_SIZE"] for r in results.values()}, {"2"})

    def test_a_worker_crash_on_the_first_attempt_restarts_every_node(self):
        mp, rp = free_port(), free_port()
        nodes = [self.multi_node(2, n, mp, rp, ["--max-restarts=2"], 5, ["--crash-rank=3"]) for n in (0, 1)]
        for node in nodes:
            self.assertEqual(node.wait(TORCH_DEADLINE), 0, node.stderr())
        results = self.assert_trained_identically(4)
        self.assertEqual({r["restart"] for r in results.values()}, {1})
        self.assertIn("worker failed: rank 3 (local rank 1", nodes[1].stderr())

    def c10d_node(self, nnodes, endpoint, extra, steps, train_args=()):
        """torchrun's c10d style: the same command on every node, no node rank, no master address or port."""
        args = [f"--nnodes={nnodes}", "--nproc-per-node=1", "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}",
                "--rdzv-id=c10d", "--rdzv-conf=join_timeout=120,last_call_timeout=1", "--stop-timeout=5"] + extra
        return self.launch(args + [TRAIN, self.tmp, str(steps)] + list(train_args), ENV)

    def wait_for_rendezvous(self, host, port):
        def accepts():
            try:
                socket.create_connection((host, port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_until(accepts, TORCH_DEADLINE, f"the rendezvous on {host}:{port}")

    def test_c10d_style_nodes_train_through_the_store_on_the_rendezvous_host(self):
        # The rendezvous host is the launcher that 127.0.0.2 belongs to; the other node's workers must look for the
        # store there, not on their own loopback (127.0.0.1:29500 was the old default).
        rp = free_port()
        n0 = self.c10d_node(2, f"127.0.0.2:{rp}", [], 3)
        self.wait_for_rendezvous("127.0.0.2", rp)
        n1 = self.c10d_node(2, f"127.0.0.2:{rp}", [], 3)
        for node in (n0, n1):
            self.assertEqual(node.wait(TORCH_DEADLINE), 0, node.stderr())
        results = self.assert_trained_identically(2)
        self.assertEqual({r["env"]["MASTER_ADDR"] for r in results.values()}, {"127.0.0.2"})
        self.assertEqual(len({r["env"]["MASTER_PORT"] for r in results.values()}), 1)
        self.assertNotEqual(results[1]["env"]["MASTER_PORT"], "29500")

    def test_a_second_launcher_started_later_grows_an_elastic_job_and_both_finish(self):
        rp = free_port()
        train = ["--grow-to=2", "--step-sleep=0.2"]
        n0 = self.c10d_node("1:2", f"127.0.0.2:{rp}", [], 3, train)
        wait_until(lambda: any(line.startswith("1 0 ") for line in self.progress()), TORCH_DEADLINE,
                   "node 0 training alone")
        n1 = self.c10d_node("1:2", f"127.0.0.2:{rp}", [], 3, train)
        for node in (n0, n1):
            self.assertEqual(node.wait(TORCH_DEADLINE), 0, node.stderr())
        results = self.assert_trained_identically(2)
        self.assertEqual({r["restart"] for r in results.values()}, {1})
        self.assertEqual({r["env"]["GROUP_WORLD_SIZE"] for r in results.values()}, {"2"})
        self.assertEqual({r["env"]["MASTER_ADDR"] for r in results.values()}, {"127.0.0.2"})

    def test_two_single_node_c10d_jobs_on_one_host_each_get_a_store_port_of_their_own(self):
        # torchrun's recipe for several jobs on a shared machine: each its own --rdzv-endpoint. Both would take
        # 29500 if the round did not name a free port, and the second would fail in init_process_group.
        jobs = []
        for name in ("a", "b"):
            out = self.path(name)
            os.makedirs(out)
            args = ["--nnodes=1", "--nproc-per-node=2", "--rdzv-backend=c10d",
                    f"--rdzv-endpoint=127.0.0.1:{free_port()}", f"--rdzv-id={name}", "--stop-timeout=5"]
            jobs.append((out, self.launch(args + [TRAIN, out, "8", "--step-sleep=0.3"], ENV)))
        for _, job in jobs:
            self.assertEqual(job.wait(TORCH_DEADLINE), 0, job.stderr())
        ports = []
        for out, _ in jobs:
            results = {}
            for rank in (0, 1):
                with open(os.path.join(out, f"rank{rank}.json")) as f:
                    results[rank] = json.load(f)
            self.assertEqual(results[0]["weights"], results[1]["weights"])
            self.assertEqual({r["world"] for r in results.values()}, {2})
            self.assertEqual({r["env"]["MASTER_ADDR"] for r in results.values()}, {"127.0.0.1"})
            port = {r["env"]["MASTER_PORT"] for r in results.values()}
            self.assertEqual(len(port), 1)
            ports += port
        self.assertNotIn("29500", ports)
        self.assertNotEqual(ports[0], ports[1])

    def test_a_legacy_launch_script_trains_with_the_spelling_auto_chooses(self):
        # python -m torch.distributed.launch --nproc_per_node=2 legacy_ddp_train.py, replaced by the launcher: the
        # default (auto) passes the spelling of the torch on the workers' interpreter, --local_rank=N for Debian's
        # 1.13 and --local-rank=N for 2.x, and the script declares only its own torch's.
        legacy = os.path.join(os.path.dirname(TRAIN), "legacy_ddp_train.py")
        l = self.launch(["--legacy-launch", "--standalone", "--nproc-per-node=2", legacy, self.tmp, "4"], ENV)
        self.assertEqual(l.wait(TORCH_DEADLINE), 0, l.stderr())
        self.assert_trained_identically(2)
        spelling = "--local_rank" if torch_major() < 2 else "--local-rank"
        self.assertIn(f"passing {spelling}=N", l.stderr())

    def progress(self):
        try:
            return self.read("progress").splitlines()
        except FileNotFoundError:
            return []

    def test_killing_one_launcher_of_an_elastic_job_reforms_the_rest(self):
        mp, rp = free_port(), free_port()
        nodes = [self.multi_node("1:2", n, mp, rp, ["--max-restarts=3"], 25, ["--step-sleep=0.2"]) for n in (0, 1)]

        def progress():
            try:
                return [line.split() for line in self.read("progress").splitlines()]
            except FileNotFoundError:
                return []

        wait_until(lambda: any(p[0] == "4" for p in progress()), TORCH_DEADLINE, "training with world size 4")
        nodes[1].proc.send_signal(signal.SIGKILL)
        nodes[1].proc.wait()
        self.assertEqual(nodes[0].wait(TORCH_DEADLINE), 0, nodes[0].stderr())
        results = self.assert_trained_identically(2)
        self.assertGreaterEqual(min(r["restart"] for r in results.values()), 1)
        self.assertEqual({r["env"]["GROUP_WORLD_SIZE"] for r in results.values()}, {"1"})

    def test_a_spare_takes_a_killed_launchers_place_and_training_goes_on_at_full_size(self):
        mp, rp = free_port(), free_port()
        train = ["--step-sleep=0.2"]
        spare = self.multi_node(2, 2, mp, rp, ["--max-restarts=3", "--spare"], 25, train, tag="spare")
        nodes = [self.multi_node(2, n, mp, rp, ["--max-restarts=3"], 25, train, tag=str(n)) for n in (1, 0)]

        def progress():
            try:
                return [line.split() for line in self.read("progress").splitlines()]
            except FileNotFoundError:
                return []

        wait_until(lambda: any(p[:2] == ["4", "0"] for p in progress()), TORCH_DEADLINE, "training with world size 4")
        nodes[0].proc.send_signal(signal.SIGKILL)  # node 1's launcher, and with it its workers
        nodes[0].proc.wait()
        for launcher in (nodes[1], spare):
            self.assertEqual(launcher.wait(TORCH_DEADLINE), 0, launcher.stderr())
        results = self.assert_trained_identically(4)
        self.assertEqual({r["restart"] for r in results.values()}, {1})
        self.assertEqual([results[r]["env"]["TEST_NODE"] for r in range(4)], ["0", "0", "spare", "spare"])
        self.assertEqual([results[r]["env"]["GROUP_RANK"] for r in range(4)], ["0", "0", "1", "1"])


if __name__ == "__main__":
    unittest.main()
