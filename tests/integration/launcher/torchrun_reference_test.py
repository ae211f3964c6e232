"""The launcher beside the real torchrun of the workers' own torch (Debian's 1.13, or 2.x in the torch2 variant): the
same worker, started by each with the same flags, must see the same environment and the same command line, but for
the differences kubedist makes on purpose, each named here with its reason (docs/reference/trainingjob.md's worker
environment says the same)."""
import json
import os
import subprocess
import unittest

from harness import DEADLINE, PYTHON, LauncherTest, torch_major, worker_env

TORCH_DEADLINE = max(DEADLINE, 240)
ENV = {"GLOO_SOCKET_IFNAME": "lo"}

# A worker that writes what it was started with, then meets the others in one all_reduce (a wrong environment
# fails init_process_group).
WORKER = '''import json, os, sys
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
out = {"env": dict(os.environ), "argv": sys.argv, "executable": sys.executable, "sum": t.item(),
       "world": dist.get_world_size()}
with open(os.path.join(sys.argv[1], "rank%s.json" % os.environ["RANK"]), "w") as f:
    json.dump(out, f)
dist.destroy_process_group()
'''

# Variables whose values differ by nature or on purpose; every other variable torchrun sets must be set by the
# launcher to the same value.
DIFFERENT_VALUES = {
    # Each picks a free port, and names its own host (torchrun's c10d store host, the launcher 127.0.0.1).
    "MASTER_PORT": "a free port of each",
    "MASTER_ADDR": "torchrun names its store's host by name, the launcher by address",
    # torchrun --standalone makes a random run id; the launcher keeps --rdzv-id's default.
    "TORCHELASTIC_RUN_ID": "torchrun --standalone makes a random one",
    "TORCHELASTIC_ERROR_FILE": "each its own directory",
    # On purpose: the workers host their own store at MASTER_ADDR:MASTER_PORT (the launcher's rendezvous is not a
    # c10d store), so rank 0 must not look for an agent's store.
    "TORCHELASTIC_USE_AGENT_STORE": "workers host their own store",
}
# What the launcher adds beside torchrun's contract: its progress channel, its helper on PYTHONPATH.
OWN_PREFIXES = ("KUBEDIST_",)
OWN_NAMES = {"PYTHONPATH"}


class TorchrunReference(LauncherTest):
    def write_worker(self):
        path = self.path("worker.py")
        with open(path, "w") as f:
            f.write(WORKER)
        return path

    def torchrun_flags(self):
        # Debian's torch 1.13 torchrun fails on Python 3.11 without explicit stream flags (an enum regression).
        return ["--redirects", "1", "--tee", "1"] if torch_major() < 2 else []

    def results(self, out):
        found = {}
        for name in sorted(os.listdir(out)):
            if name.startswith("rank"):
                with open(os.path.join(out, name)) as f:
                    r = json.load(f)
                found[int(r["env"]["RANK"])] = r
        return found

    def run_torchrun(self, flags, out):
        os.makedirs(out)
        env = worker_env(dict(ENV, TMPDIR=self.tmp))
        p = subprocess.run([PYTHON, "-m", "torch.distributed.run", *flags, self.write_worker(), out], env=env,
                           capture_output=True, text=True, timeout=TORCH_DEADLINE)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        return self.results(out), env

    def run_launcher(self, flags, out):
        os.makedirs(out)
        l = self.launch([*flags, self.write_worker(), out], ENV)
        self.assertEqual(l.wait(TORCH_DEADLINE), 0, l.stderr())
        return self.results(out)

    def set_by(self, result, parent):
        """What the starter set or changed in the worker's environment."""
        return {k: v for k, v in result["env"].items() if parent.get(k) != v}

    def test_workers_see_torchruns_environment_and_command_line(self):
        flags = ["--standalone", "--nproc_per_node=2", *self.torchrun_flags()]  # 1.13 knows only underscores
        reference, parent = self.run_torchrun(flags, self.path("torchrun"))
        ours = self.run_launcher(flags, self.path("launcher"))
        self.assertEqual(sorted(reference), [0, 1])
        self.assertEqual(sorted(ours), [0, 1])
        for rank in (0, 1):
            theirs, mine = self.set_by(reference[rank], parent), self.set_by(ours[rank], parent)
            missing = sorted(set(theirs) - set(mine))
            self.assertEqual(missing, [], f"rank {rank}: torchrun sets {missing}, the launcher does not")
            extra = sorted(k for k in set(mine) - set(theirs) if not k.startswith(OWN_PREFIXES) and k not in OWN_NAMES)
            self.assertEqual(extra, [], f"rank {rank}: the launcher sets {extra}, torchrun does not")
            differ = {k: (theirs[k], mine[k]) for k in theirs if k not in DIFFERENT_VALUES and theirs[k] != mine[k]}
            self.assertEqual(differ, {}, f"rank {rank}: values differ (torchrun, launcher)")
            self.assertEqual(mine["TORCHELASTIC_USE_AGENT_STORE"], "False")
            # The same interpreter, -u, the script and its arguments.
            self.assertEqual(reference[rank]["argv"], [self.path("worker.py"), self.path("torchrun")])
            self.assertEqual(ours[rank]["argv"], [self.path("worker.py"), self.path("launcher")])
            # The same interpreter: torchrun runs its own sys.executable, the launcher python3 from PATH (a link to it).
            self.assertEqual(os.path.realpath(ours[rank]["executable"]), os.path.realpath(reference[rank]["executable"]))
            self.assertEqual((ours[rank]["sum"], ours[rank]["world"]), (3.0, 2))


if __name__ == "__main__":
    unittest.main()
