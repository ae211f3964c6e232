"""Progress with no change to the script: under real launchers, PyTorch Lightning's Trainer and Hugging Face
transformers' Trainer report their steps to node 0 through the helper's callbacks (Lightning's external-callback
entry point, transformers' default callbacks through the helper's sitecustomize), and KUBEDIST_AUTO_CALLBACKS=0
turns both off. The scripts (workers/lightning_train.py, workers/hf_train.py) contain no kubedist code. torch 2.x
only (the torch2 variant)."""
import json
import os
import time
import unittest

from harness import DEADLINE, LauncherTest, free_port, torch_major
from progress_test import status

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "workers")
TORCH_DEADLINE = max(DEADLINE, 400)
ENV = {"GLOO_SOCKET_IFNAME": "lo"}


class Callbacks(LauncherTest):
    def setUp(self):
        super().setUp()
        if torch_major() < 2:
            self.skipTest("needs torch 2.x (the torch2 variant of this test runs it)")

    def train(self, script, args, nproc, env=None):
        """2 launchers of nproc workers each (one node would host no rendezvous, hence no STATUS); polls node 0's
        STATUS while it runs and returns every STATUS that carried a step."""
        nnodes, rdzv = 2, free_port()
        nodes = self.launch_nodes(nnodes, nproc, [os.path.join(WORKERS, script), *args], dict(ENV, **(env or {})),
                                  ["--max-restarts=0"], rdzv=rdzv)
        seen = []
        while nodes[0].proc.poll() is None:
            s = status(rdzv)
            if s and "step" in s:
                seen.append(s)
            time.sleep(0.1)
        codes = [n.wait(TORCH_DEADLINE) for n in nodes]
        self.assertEqual(codes, [0] * nnodes, "\n".join(n.stderr()[-3000:] for n in nodes))
        return seen

    def rank(self, n):
        with open(self.path(f"rank{n}.json")) as f:
            return json.load(f)

    def test_a_lightning_trainer_reports_its_steps_with_no_callback_in_the_script(self):
        seen = self.train("lightning_train.py", [self.tmp, "2", "2", "20", "0.2"], 2)
        self.assertTrue(seen, "no STATUS ever carried a step")
        last = seen[-1]
        # 256 samples, batches of 16 over 4 ranks: 4 steps an epoch, the 20th step in epoch 4 (counted from 0).
        self.assertEqual((last["total"], last["epoch"], last["world_size"]), ("20", "4", "4"))
        self.assertGreaterEqual(int(last["step"]), 15, seen[-3:])
        self.assertIn("m.loss", last)
        self.assertIn("m.train_loss", last)
        steps = [int(s["step"]) for s in seen]
        self.assertEqual(steps, sorted(steps))
        self.assertEqual(self.rank(0)["global_step"], 20)

    def test_a_transformers_trainer_reports_its_steps_with_no_callback_in_the_script(self):
        seen = self.train("hf_train.py", [self.tmp, "20", "0.2"], 1)
        self.assertTrue(seen, "no STATUS ever carried a step")
        last = seen[-1]
        self.assertEqual((last["total"], last["world_size"]), ("20", "2"))
        self.assertGreaterEqual(int(last["step"]), 15, seen[-3:])
        self.assertIn("m.loss", last)
        self.assertIn("m.learning_rate", last)
        r = self.rank(1)
        self.assertEqual((r["world_size"], r["process_index"], r["global_step"]), (2, 1, 20))
        self.assertIn("KubedistProgress", r["callbacks"])

    def test_kubedist_auto_callbacks_0_turns_lightnings_off(self):
        off = {"KUBEDIST_AUTO_CALLBACKS": "0"}
        self.assertEqual(self.train("lightning_train.py", [self.tmp, "1", "2", "10", "0.2"], 1, off), [])
        self.assertEqual(self.rank(0)["global_step"], 10)

    def test_kubedist_auto_callbacks_0_turns_transformers_off(self):
        off = {"KUBEDIST_AUTO_CALLBACKS": "0"}
        self.assertEqual(self.train("hf_train.py", [self.tmp, "10", "0.2"], 1, off), [])
        self.assertNotIn("KubedistProgress", self.rank(0)["callbacks"])


if __name__ == "__main__":
    unittest.main()
