"""The libraries people train with, under real launchers (2 nodes x 2 processes on 127.0.0.1, gloo): PyTorch
Lightning's Trainer with strategy="ddp", Hugging Face Accelerate, torch.distributed.checkpoint save and load across
ranks, and a @record-decorated main. Each test asserts what the library itself reports (its world size, ranks,
cluster environment, a gathered tensor), so a broken environment contract fails it. Lightning, Accelerate and
torch.distributed.checkpoint's current API need torch 2.x: those run only in the torch2 variant (the venv of
deploy/local/torch2.sh); @record runs with both torches."""
import json
import os
import socket
import unittest

from harness import DEADLINE, LauncherTest, torch_major

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "workers")
TORCH_DEADLINE = max(DEADLINE, 400)
ENV = {"GLOO_SOCKET_IFNAME": "lo"}


class Libraries(LauncherTest):
    def run_nodes(self, script, args, extra=(), run_id="lib"):
        nodes = self.launch_nodes(2, 2, [os.path.join(WORKERS, script), *args], ENV, extra, run_id)
        codes = [n.wait(TORCH_DEADLINE) for n in nodes]
        return nodes, codes

    def ranks(self, prefix="rank"):
        out = {}
        for name in os.listdir(self.tmp):
            if name.startswith(prefix) and name.endswith(".json"):
                with open(self.path(name)) as f:
                    out[int(name[len(prefix):-5])] = json.load(f)
        return out

    def run_four_ranks(self, script, args):
        """2 nodes x 2 processes of script to success; every rank's result."""
        nodes, codes = self.run_nodes(script, args)
        self.assertEqual(codes, [0, 0], "\n".join(n.stderr()[-3000:] for n in nodes))
        results = self.ranks()
        self.assertEqual(sorted(results), [0, 1, 2, 3])
        return results

    def require_torch2(self):
        if torch_major() < 2:
            self.skipTest("needs torch 2.x (the torch2 variant of this test runs it)")

    def test_lightning_ddp_sees_four_ranks_on_two_nodes_through_torchelastic(self):
        self.require_torch2()
        results = self.run_four_ranks("lightning_train.py", [self.tmp, "2", "2"])
        for rank, r in results.items():
            self.assertEqual(r["world_size"], 4)
            self.assertEqual(r["global_rank"], rank)
            self.assertEqual(str(r["local_rank"]), r["env"]["LOCAL_RANK"])
            self.assertEqual(str(r["node_rank"]), r["env"]["GROUP_RANK"])
            self.assertEqual(r["node_rank"], rank // 2)
            self.assertEqual(r["cluster_environment"], "TorchElasticEnvironment")
            self.assertEqual(r["gathered"], [0, 1, 2, 3])
            self.assertEqual(r["global_step"], 6)
            self.assertEqual(r["weights"], results[0]["weights"], f"rank {rank} ended with other weights")

    def test_accelerate_sees_four_processes_and_gathers_from_each(self):
        self.require_torch2()
        results = self.run_four_ranks("accelerate_train.py", [self.tmp])
        for rank, r in results.items():
            self.assertEqual(r["num_processes"], 4)
            self.assertEqual(r["process_index"], rank)
            self.assertEqual(str(r["local_process_index"]), r["env"]["LOCAL_RANK"])
            self.assertEqual(r["is_main_process"], rank == 0)
            self.assertEqual(r["distributed_type"], "DistributedType.MULTI_CPU")
            self.assertEqual(r["backend"], "gloo")
            self.assertEqual(r["gathered"], [0, 1, 2, 3])
            self.assertEqual(r["steps"], 4)  # 256 samples / 16 a batch / 4 processes
            self.assertEqual(r["weights"], results[0]["weights"], f"rank {rank} ended with other weights")

    def test_distributed_checkpoint_saved_by_four_ranks_loads_into_fresh_ones(self):
        self.require_torch2()
        checkpoint = self.path("checkpoint")
        nodes, codes = self.run_nodes("dcp_train.py", ["save", checkpoint, self.tmp], run_id="save")
        self.assertEqual(codes, [0, 0], "\n".join(n.stderr()[-3000:] for n in nodes))
        self.assertTrue(os.path.exists(os.path.join(checkpoint, ".metadata")), os.listdir(checkpoint))
        nodes, codes = self.run_nodes("dcp_train.py", ["load", checkpoint, self.tmp], run_id="load")
        self.assertEqual(codes, [0, 0], "\n".join(n.stderr()[-3000:] for n in nodes))
        saved, loaded = self.ranks("save-rank"), self.ranks("load-rank")
        self.assertEqual((sorted(saved), sorted(loaded)), ([0, 1, 2, 3], [0, 1, 2, 3]))
        for rank in range(4):
            self.assertEqual(saved[rank]["step"], 3)
            self.assertEqual(loaded[rank]["step"], 3)
            self.assertNotEqual(loaded[rank]["initial"], saved[rank]["weights"], "the fresh model was not fresh")
            self.assertEqual(loaded[rank]["weights"], saved[0]["weights"], f"rank {rank} loaded other weights")

    def test_a_record_decorated_mains_exception_is_the_root_cause_in_the_summary(self):
        nodes = self.launch_nodes(2, 2, [os.path.join(WORKERS, "record_main.py"), "3"], ENV,
                                  node_env=lambda n: {"KUBEDIST_TERMINATION_LOG": self.path(f"termination-log-{n}")})
        codes = [n.wait(TORCH_DEADLINE) for n in nodes]
        self.assertEqual(codes, [1, 1], "\n".join(n.stderr()[-3000:] for n in nodes))
        # Node 1 ran rank 3: its summary shows @record's error file, traceback included, and its termination log
        # (status.lastFailure in a pod) the exception's first line.
        summary = nodes[1].stderr()
        self.assertRegex(summary, r"rank 3 error file \S+/error\.json: .*ValueError: batch 7 of rank 3 has a NaN loss")
        self.assertIn("raise ValueError(", summary)
        with open(self.path("termination-log-1")) as f:
            self.assertEqual(f.read(), f"rank 3 (local rank 1) on {socket.gethostname()} exited with code 1: "
                                       "ValueError: batch 7 of rank 3 has a NaN loss")
        # Node 0 says why node 1 stopped the group, the exception included: whichever pod the operator reads first,
        # status.lastFailure has the root cause.
        with open(self.path("termination-log-0")) as f:
            self.assertRegex(f.read(), r"node 1: rank 3 \(local rank 1, pid \d+\) exited with code 1 at \S+: "
                                       r"ValueError: batch 7 of rank 3 has a NaN loss")


if __name__ == "__main__":
    unittest.main()
