"""The checkpoint helper (kubedist.checkpoint, issue 37 item 1) with real PyTorch under the launcher: gloo DDP on
127.0.0.1, two workers. Saves on the schedule, a restarted group resumes from the newest complete checkpoint and
trains to the very weights of a run never interrupted, and a save that raises, outlives its budget or is not made
by every rank is no checkpoint; without a directory the helper does nothing."""
import json
import os
import re
import signal
import unittest

from harness import DEADLINE, LauncherTest, free_port, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "workers", "checkpoint_train.py")
TORCH_DEADLINE = max(DEADLINE, 300)


class Checkpoints(LauncherTest):
    def run_job(self, out, steps, env, extra=()):
        os.makedirs(out, exist_ok=True)
        launcher = self.launch(["--nproc-per-node=2", f"--master-port={free_port()}", "--max-restarts=2",
                                "--stop-timeout=5", *extra, TRAIN, out, str(steps)],
                               {"GLOO_SOCKET_IFNAME": "lo", **env})
        return launcher.wait(TORCH_DEADLINE), launcher

    def lines(self, out, rank):
        with open(os.path.join(out, f"rank{rank}.log")) as f:
            return f.read().split("\n")

    def complete(self, ckpt):
        return sorted(n for n in os.listdir(ckpt) if os.path.exists(os.path.join(ckpt, n, "COMPLETE")))

    def final(self, out):
        with open(os.path.join(out, "rank0.json")) as f:
            return json.load(f)

    def test_a_crashed_group_resumes_from_the_newest_checkpoint_to_the_weights_of_an_uninterrupted_run(self):
        ckpt, plain, out = self.path("ckpt"), self.path("plain"), self.path("out")
        code, launcher = self.run_job(plain, 12, {})
        self.assertEqual(code, 0, launcher.stderr())
        self.assertFalse(os.path.exists(ckpt), "no directory: nothing saved")
        env = {"KUBEDIST_CHECKPOINT_DIR": ckpt, "KUBEDIST_CHECKPOINT_EVERY_STEPS": "4", "CRASH_AT": "6",
               "KUBEDIST_CHECKPOINT_KEEP": "2"}
        code, launcher = self.run_job(out, 12, env, [f"--termination-log={self.path('termination-log')}"])
        self.assertEqual(code, 0, launcher.stderr())
        starts = [l.split()[1] for l in self.lines(out, 0) if l.startswith("start ")]
        self.assertEqual(starts, ["0", "4"], "the restarted group went on from step 4, the newest complete one")
        self.assertIn("kubedist: checkpoint: resumed from step 4", launcher.stderr())
        self.assertEqual(self.final(out), self.final(plain), "the same weights as a run never interrupted")
        self.assertEqual(self.complete(ckpt), ["step-0000000008", "step-0000000012"], "the newest 2 kept")
        with open(os.path.join(ckpt, "step-0000000012", "COMPLETE")) as f:
            record = json.load(f)
        self.assertEqual((record["step"], record["reason"], record["ranks"]), (12, "periodic", 2))
        # Rank 0 told its launcher: node 0's last STATUS (what the operator's status.checkpoint is made of) says so.
        with open(self.path("termination-log")) as f:
            final = f.read()
        self.assertRegex(final, r"^STATUS .* ckpt=12:periodic:2:\d+(\s|$)", final)

    def test_a_save_that_raises_or_outlives_its_budget_on_one_rank_is_no_checkpoint(self):
        ckpt, out = self.path("ckpt"), self.path("out")
        env = {"KUBEDIST_CHECKPOINT_DIR": ckpt, "KUBEDIST_CHECKPOINT_EVERY_STEPS": "2", "FAIL_SAVE_AT": "4",
               "SLOW_SAVE_AT": "6", "KUBEDIST_CHECKPOINT_TIMEOUT": "1", "KUBEDIST_CHECKPOINT_KEEP": "10"}
        code, launcher = self.run_job(out, 7, env)
        self.assertEqual(code, 0, launcher.stderr())
        self.assertEqual(self.complete(ckpt), ["step-0000000002"], "steps 4 and 6 are no checkpoints")
        err = launcher.stderr()
        self.assertIn("kubedist: checkpoint: step 4 is no checkpoint: rank 1's save raised OSError: disk full", err)
        self.assertIn("kubedist: checkpoint: step 6 is no checkpoint: another rank's save failed", err)
        self.assertRegex(err, r"step 6 is no checkpoint: rank 1's save took 2\.\d s, over the 1\.0 s budget")
        code, launcher = self.run_job(self.path("again"), 7, env)
        self.assertEqual(code, 0, launcher.stderr())
        starts = [l.split()[1] for l in self.lines(self.path("again"), 1) if l.startswith("start ")]
        # Every start (one, or more if the group restarted for another reason: CI's torch 2.15 run once did) resumed
        # from step 2, never from an incomplete checkpoint.
        self.assertTrue(starts and set(starts) == {"2"}, f"resumed from step 2, never from an incomplete one: {starts}")

    # Just in time (issue 37 item 2): SIGTERM is how every planned interruption reaches a pod (eviction, drain,
    # preemption, suspend, scale-down, deletion).

    def steps_done(self, out, rank):
        try:
            return max([int(l.split()[1]) for l in self.lines(out, rank) if l.startswith("step ")] or [0])
        except FileNotFoundError:
            return 0

    def start_long_job(self, out, env, steps=400):
        os.makedirs(out, exist_ok=True)
        launcher = self.launch(["--nproc-per-node=2", f"--master-port={free_port()}", "--max-restarts=2",
                                "--stop-timeout=5", TRAIN, out, str(steps)],
                               {"GLOO_SOCKET_IFNAME": "lo", "STEP_SLEEP": "0.02", **env})
        wait_until(lambda: min(self.steps_done(out, 0), self.steps_done(out, 1)) >= 20, TORCH_DEADLINE,
                   "both ranks past step 20")
        return launcher

    def test_sigterm_saves_the_step_just_done_on_every_rank_before_the_workers_stop_and_the_next_run_resumes_there(self):
        ckpt, out = self.path("ckpt"), self.path("out")
        env = {"KUBEDIST_CHECKPOINT_DIR": ckpt, "KUBEDIST_CHECKPOINT_EVERY_STEPS": "1000"}
        launcher = self.start_long_job(out, env)
        os.kill(launcher.proc.pid, signal.SIGTERM)
        self.assertEqual(launcher.wait(TORCH_DEADLINE), 128 + signal.SIGTERM, launcher.stderr())
        err = launcher.stderr()
        self.assertIn("received SIGTERM: the workers save a checkpoint first (up to 65 s), then stop", err)
        saved = re.search(r"the workers saved the checkpoint of step (\d+): stopping them", err)
        self.assertTrue(saved, err)
        at = int(saved.group(1))
        self.assertEqual(self.complete(ckpt), ["step-%010d" % at])
        with open(os.path.join(ckpt, "step-%010d" % at, "COMPLETE")) as f:
            record = json.load(f)
        self.assertEqual((record["reason"], record["ranks"]), ("termination", 2))
        # 0 steps lost: neither rank did a step the checkpoint lacks.
        self.assertEqual((self.steps_done(out, 0), self.steps_done(out, 1)), (at, at))
        again = self.path("again")
        code, launcher = self.run_job(again, at + 3, env, [f"--termination-log={self.path('termination-log')}"])
        self.assertEqual(code, 0, launcher.stderr())
        starts = [l.split()[1] for l in self.lines(again, 0) if l.startswith("start ")]
        self.assertEqual(starts, [str(at)], "the next run went on from the step where SIGTERM came")
        # It saved nothing itself: node 0's last STATUS (status.checkpoint) names the checkpoint it resumed from.
        with open(self.path("termination-log")) as f:
            final = f.read()
        self.assertRegex(final, rf"^STATUS .* ckpt={at}:termination:2:\d+(\s|$)", final)

    def test_a_two_node_job_loses_no_step_when_one_nodes_pod_is_stopped(self):
        # Node 1's pod is evicted (SIGTERM to its launcher alone): every rank saves the same step, node 1 leaves
        # and node 0 goes on alone (an elastic job, 1 to 2 nodes) from that step.
        ckpt, out = self.path("ckpt"), self.path("out")
        master, rdzv = free_port(), free_port()
        env = {"GLOO_SOCKET_IFNAME": "lo", "STEP_SLEEP": "0.02", "KUBEDIST_CHECKPOINT_DIR": ckpt}
        os.makedirs(out)
        nodes = {}
        for node_rank in (1, 0):
            nodes[node_rank] = self.launch(
                ["--nnodes=1:2", f"--node-rank={node_rank}", "--nproc-per-node=1", "--master-addr=127.0.0.1",
                 f"--master-port={master}", f"--rdzv-endpoint=127.0.0.1:{rdzv}", "--rdzv-id=jit",
                 "--rdzv-conf=join_timeout=120,last_call_timeout=2", "--max-restarts=3", "--stop-timeout=5",
                 TRAIN, out, "400"], env)
        wait_until(lambda: min(self.steps_done(out, 0), self.steps_done(out, 1)) >= 20, TORCH_DEADLINE,
                   "both nodes' ranks past step 20")
        os.kill(nodes[1].proc.pid, signal.SIGTERM)
        self.assertEqual(nodes[1].wait(TORCH_DEADLINE), 128 + signal.SIGTERM, nodes[1].stderr())
        saved = re.search(r"the workers saved the checkpoint of step (\d+): stopping them", nodes[1].stderr())
        self.assertTrue(saved, nodes[1].stderr())
        at = int(saved.group(1))
        self.assertEqual(nodes[0].wait(TORCH_DEADLINE), 0, nodes[0].stderr())
        lines = self.lines(out, 0)
        last_start = max(i for i, l in enumerate(lines) if l.startswith("start "))
        self.assertEqual(lines[last_start].split()[1], str(at), "node 0 alone went on from that step")
        before = [int(l.split()[1]) for l in lines[:last_start] if l.startswith("step ")]
        self.assertEqual(max(before), at, "rank 0 did no step the checkpoint lacks before it stopped")
        self.assertEqual(self.steps_done(out, 1), at)
        self.assertIn("step-%010d" % at, self.complete(ckpt))

    def test_a_script_without_the_helper_is_stopped_at_once_and_a_failed_save_stops_it_without_waiting(self):
        out = self.path("out")
        launcher = self.start_long_job(out, {})  # no directory: the helper answers no request
        os.kill(launcher.proc.pid, signal.SIGTERM)
        self.assertEqual(launcher.wait(TORCH_DEADLINE), 128 + signal.SIGTERM, launcher.stderr())
        self.assertNotIn("save a checkpoint first", launcher.stderr())
        ckpt, out = self.path("ckpt"), self.path("failing")
        launcher = self.start_long_job(out, {"KUBEDIST_CHECKPOINT_DIR": ckpt})
        open(os.path.join(out, "fail-saves"), "w").close()
        os.kill(launcher.proc.pid, signal.SIGTERM)
        self.assertEqual(launcher.wait(TORCH_DEADLINE), 128 + signal.SIGTERM, launcher.stderr())
        err = launcher.stderr()
        self.assertIn("the workers' checkpoint failed (their log says why): stopping them", err)
        self.assertIn("rank 1's save raised OSError: the volume went read-only", err)
        self.assertNotIn("no checkpoint within", err)
        self.assertEqual(self.complete(ckpt), [], "a failed save is no checkpoint")


if __name__ == "__main__":
    unittest.main()
