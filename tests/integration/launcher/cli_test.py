"""The launcher's command line as users meet it: legacy torch.distributed.launch scripts, the interpreter, the
environment it reads, log directories. Real processes, real /usr/bin/python3 (no torch import: fast)."""
import os
import re
import textwrap
import unittest

from harness import LauncherTest, free_port, free_port_pair

# What torch.distributed.launch scripts do: declare the local rank argument in one spelling, and check it.
LEGACY_SCRIPT = """\
import argparse, os
parser = argparse.ArgumentParser()
parser.add_argument("{flag}", type=int, required=True)
parser.add_argument("rest", nargs="*")
args = parser.parse_args()
assert args.{dest} == int(os.environ["LOCAL_RANK"]), (args.{dest}, os.environ["LOCAL_RANK"])
print("local rank", args.{dest}, "rest", *args.rest, flush=True)
"""


class LegacyLaunch(LauncherTest):
    def script(self, name, text):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def legacy_script(self, flag):
        name = "new_style.py" if flag == "--local-rank" else "old_style.py"
        return self.script(name, LEGACY_SCRIPT.format(flag=flag, dest="local_rank"))

    def test_underscore_style_runs_a_torch_1_script_that_declares_local_rank_with_an_underscore(self):
        l = self.launch(["--legacy-launch", "--local-rank-style=underscore", "--nproc-per-node=2", "--tee=1",
                         self.legacy_script("--local_rank"), "x"])
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(sorted(l.stdout().splitlines()),
                         ["[rank 0]: local rank 0 rest x", "[rank 1]: local rank 1 rest x"])

    def fake_torch(self, version):
        """A directory holding only torch/version.py, as a wheel of that version has it: for PYTHONPATH."""
        root = self.path(f"fake-torch-{version}")
        os.makedirs(os.path.join(root, "torch"), exist_ok=True)
        with open(os.path.join(root, "torch", "version.py"), "w") as f:
            f.write(f"from typing import Optional\n__version__ = '{version}'\ndebug = False\n")
        return root

    def test_auto_is_the_default_and_chooses_the_underscore_for_debians_torch_1_13(self):
        # /usr/bin/python3 (first on the harness's PATH) imports Debian's torch 1.13, whose launch passed --local_rank.
        for extra in ([], ["--local-rank-style=auto"]):
            l = self.launch(["--legacy-launch", *extra, "--nproc-per-node=2", "--tee=1",
                             self.legacy_script("--local_rank"), "x"])
            self.assertEqual(l.wait(), 0, l.stderr())
            self.assertEqual(sorted(l.stdout().splitlines()),
                             ["[rank 0]: local rank 0 rest x", "[rank 1]: local rank 1 rest x"])
            self.assertIn("--local-rank-style=auto: torch 1.13", l.stderr())
            self.assertIn("/torch/version.py): passing --local_rank=N", l.stderr())

    def test_auto_chooses_the_dash_for_a_torch_2_found_first_on_pythonpath(self):
        # Found without importing torch: the fake holds nothing but version.py, and the script would fail on the
        # underscore spelling.
        l = self.launch(["--legacy-launch", "--nproc-per-node=2", "--tee=1", self.legacy_script("--local-rank"), "y"],
                        env={"PYTHONPATH": self.fake_torch("2.4.0+cu121")})
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(sorted(l.stdout().splitlines()),
                         ["[rank 0]: local rank 0 rest y", "[rank 1]: local rank 1 rest y"])
        self.assertIn("torch 2.4.0+cu121", l.stderr())
        self.assertIn("passing --local-rank=N", l.stderr())

    def test_auto_without_a_torch_falls_back_to_the_dash_with_one_line(self):
        # An interpreter without site-packages finds no torch.
        wrapper = self.path("python-no-site")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n')
        os.chmod(wrapper, 0o755)
        l = self.launch(["--legacy-launch", self.legacy_script("--local-rank"), "z"], env={"PYTHON_EXEC": wrapper})
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(l.stdout(), "local rank 0 rest z\n")
        lines = [line for line in l.stderr().splitlines() if "--local-rank-style=auto" in line]
        self.assertEqual(len(lines), 1, l.stderr())
        self.assertIn("no torch/version.py on " + wrapper + "'s sys.path: passing --local-rank=N", lines[0])

    def test_the_operators_form_takes_the_legacy_launch_from_the_pods_env(self):
        # `--no-python -- python SCRIPT ARGS` (the trainer's command in a pod): the local rank goes after the script,
        # in the spelling of the torch that interpreter imports.
        for env in ({"KUBEDIST_LEGACY_LAUNCH": "1"}, {"PET_LEGACY_LAUNCH": "true"},
                    {"KUBEDIST_LEGACY_LAUNCH": "1", "KUBEDIST_LOCAL_RANK_STYLE": "underscore"}):
            l = self.launch(["--no-python", "--", "/usr/bin/python3", "-u", self.legacy_script("--local_rank"), "w"],
                            env=env)
            self.assertEqual(l.wait(), 0, l.stderr())
            self.assertEqual(l.stdout(), "local rank 0 rest w\n")
            self.assertIn("from the environment: --legacy-launch=", l.stderr())

    def test_explicit_dash_runs_a_torch_2_script_and_explicit_underscore_a_torch_1_script(self):
        for style, flag in (("dash", "--local-rank"), ("underscore", "--local_rank")):
            l = self.launch(["--legacy-launch", f"--local-rank-style={style}", "--nproc-per-node=2", "--tee=1",
                             self.legacy_script(flag), "y"], env={"PYTHONPATH": self.fake_torch("2.4.0")})
            self.assertEqual(l.wait(), 0, l.stderr())
            self.assertEqual(sorted(l.stdout().splitlines()),
                             ["[rank 0]: local rank 0 rest y", "[rank 1]: local rank 1 rest y"])
            self.assertNotIn("--local-rank-style=auto", l.stderr(), "an explicit style asks no interpreter")

    def test_the_style_comes_from_pet_env_too(self):
        l = self.launch([self.legacy_script("--local_rank")],
                        env={"PET_LEGACY_LAUNCH": "1", "PET_LOCAL_RANK_STYLE": "underscore",
                             "PYTHONPATH": self.fake_torch("2.4.0")})
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(l.stdout(), "local rank 0 rest\n")

    def test_a_torch_1_script_rejects_the_dash_spelling(self):
        # Why the choice matters: argparse knows only the spelling the script declared.
        l = self.launch(["--legacy-launch", "--local-rank-style=dash", self.legacy_script("--local_rank")])
        self.assertEqual(l.wait(), 2)
        self.assertIn("old_style.py: error: the following arguments are required: --local_rank", l.stderr())

    def test_bad_local_rank_styles_are_one_line_errors(self):
        cases = [(["--legacy-launch", "--local-rank-style=snake"], {}, "--local-rank-style: expected auto"),
                 (["--legacy-launch", "--local-rank-style"], {}, "--local-rank-style needs a value"),
                 (["--legacy-launch"], {"PET_LOCAL_RANK_STYLE": "--local_rank"}, "PET_LOCAL_RANK_STYLE: expected"),
                 (["--legacy-launch"], {"KUBEDIST_LOCAL_RANK_STYLE": "Dash"}, "KUBEDIST_LOCAL_RANK_STYLE: expected auto"),
                 ([], {"KUBEDIST_LEGACY_LAUNCH": "yes please"}, "KUBEDIST_LEGACY_LAUNCH: expected 1/0/true/false"),
                 ([], {"KUBEDIST_USE_ENV": "2"}, "KUBEDIST_USE_ENV: expected 1/0/true/false"),
                 ([], {"KUBEDIST_LOCAL_RANK_STYLE": "underscore"}, "KUBEDIST_LOCAL_RANK_STYLE: only applies with --legacy-launch"),
                 (["--local-rank-style=underscore"], {}, "only applies with --legacy-launch")]
        for args, env, fragment in cases:
            tail = [] if args and args[-1] == "--local-rank-style" else [self.legacy_script("--local_rank")]
            l = self.launch(args + tail, env=env)
            self.assertEqual(l.wait(), 2, args)
            self.assertEqual(l.stderr().count("\n"), 1, l.stderr())
            self.assertTrue(l.stderr().startswith("kubedist-launcher: "), l.stderr())
            self.assertIn(fragment, l.stderr())
            self.assertEqual(l.stdout(), "")


class Interpreter(LauncherTest):
    def test_python_exec_names_the_interpreter_of_every_worker_as_in_torchrun(self):
        record = self.path("used")
        wrapper = self.path("python-wrapper")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\necho "$LOCAL_RANK $*" >> {record}\nexec /usr/bin/python3 "$@"\n')
        os.chmod(wrapper, 0o755)
        with open(self.path("hello.py"), "w") as f:
            f.write("import os\nprint('hello', os.environ['LOCAL_RANK'])\n")
        l = self.launch(["--nproc-per-node=2", "--tee=1", self.path("hello.py"), "z"], env={"PYTHON_EXEC": wrapper})
        self.assertEqual(l.wait(), 0, l.stderr())
        # Before the workers, the launcher asks the same interpreter once for its sys.path (no LOCAL_RANK yet), to
        # find the workers' torch without importing it.
        used = self.read("used").splitlines()
        probes = [u for u in used if u.startswith(" -u -c import sys")]
        self.assertEqual(len(probes), 1, used)
        self.assertEqual(used[0], probes[0])
        self.assertEqual(sorted(u for u in used if u not in probes),
                         [f"0 -u {self.path('hello.py')} z", f"1 -u {self.path('hello.py')} z"])
        self.assertEqual(sorted(l.stdout().splitlines()), ["[rank 0]: hello 0", "[rank 1]: hello 1"])
        self.assertIn(f"kubedist-launcher: from the environment: interpreter {wrapper} (PYTHON_EXEC)\n", l.stderr())

    def test_an_interpreter_that_cannot_run_is_one_clear_error_before_any_worker_starts(self):
        with open(self.path("t.py"), "w") as f:
            f.write("open(__file__ + '.ran', 'w')\n")
        os.mkdir(self.path("dir"))
        cases = [({"PYTHON_EXEC": "/nonexistent/python"}, "PYTHON_EXEC: cannot run the interpreter /nonexistent/python: "
                                                          "No such file or directory"),
                 ({"PYTHON_EXEC": self.path("dir")}, "PYTHON_EXEC: cannot run the interpreter"),
                 ({"PYTHON_EXEC": "no-such-python"}, "no-such-python: not found on PATH"),
                 ({"PATH": self.path("dir")}, "python3: not found on PATH")]
        for env, fragment in cases:
            l = self.launch(["--nproc-per-node=2", self.path("t.py")], env=env)
            self.assertEqual(l.wait(), 2, env)
            self.assertEqual(l.stderr().count("\n"), 1, l.stderr())
            self.assertTrue(l.stderr().startswith("kubedist-launcher: "), l.stderr())
            self.assertIn(fragment, l.stderr())
            self.assertFalse(os.path.exists(self.path("t.py.ran")))

    def test_no_python_needs_no_interpreter(self):
        l = self.launch(["--no-python", "--", "/bin/true"], env={"PYTHON_EXEC": "/nonexistent/python"})
        self.assertEqual(l.wait(), 0, l.stderr())


class LocalWorldSize(LauncherTest):
    SHOW = ["--no-python", "--", "sh", "-c", 'echo "$LOCAL_WORLD_SIZE ${OMP_NUM_THREADS:-unset}"']
    NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}

    def test_auto_without_gpus_runs_one_worker_per_cpu_as_torchrun(self):
        cpus = len(os.sched_getaffinity(0))
        l = self.launch(["--nproc-per-node=auto", *self.SHOW], env=self.NO_GPU)
        self.assertEqual(l.wait(), 0, l.stderr())
        omp = "1" if cpus > 1 else "unset"
        self.assertEqual(l.stdout().splitlines(), [f"{cpus} {omp}"] * cpus)

    def test_auto_without_gpus_in_a_trainingjob_pod_runs_one_worker(self):
        l = self.launch(["--nproc-per-node=auto", *self.SHOW], env=dict(self.NO_GPU, KUBEDIST_JOB="job"))
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(l.stdout(), "1 unset\n")

    def test_gpu_without_gpus_is_one_clear_error(self):
        for args, env in ((["--nproc-per-node=gpu"], self.NO_GPU), ([], dict(self.NO_GPU, PET_NPROC_PER_NODE="gpu"))):
            l = self.launch([*args, *self.SHOW], env=env)
            self.assertEqual(l.wait(), 2)
            self.assertEqual(l.stderr().count("\n"), 1, l.stderr())
            self.assertIn("--nproc-per-node=gpu: no GPU visible", l.stderr())

    def test_several_workers_get_one_omp_thread_with_torchruns_notice_unless_the_user_chose(self):
        l = self.launch(["--nproc-per-node=2", *self.SHOW])
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(l.stdout(), "2 1\n" * 2)
        self.assertIn("setting OMP_NUM_THREADS=1 for each worker process by default, to avoid overloading your system",
                      l.stderr())
        chosen = self.launch(["--nproc-per-node=2", *self.SHOW], env={"OMP_NUM_THREADS": "4"})
        self.assertEqual(chosen.wait(), 0, chosen.stderr())
        self.assertEqual(chosen.stdout(), "2 4\n" * 2)
        self.assertNotIn("OMP_NUM_THREADS", chosen.stderr())
        single = self.launch(self.SHOW)
        self.assertEqual(single.wait(), 0, single.stderr())
        self.assertEqual(single.stdout(), "1 unset\n")
        self.assertNotIn("OMP_NUM_THREADS", single.stderr())



class Environment(LauncherTest):
    SHOW = ["--no-python", "--", "sh", "-c", 'echo "$RANK $WORLD_SIZE $MASTER_PORT"']

    def test_plain_nnodes_and_node_rank_in_a_shell_do_not_change_a_single_node_run(self):
        # Without the rule this launcher would be node 1 of 2, waiting for node 0 for join_timeout (600 s).
        port = free_port()
        shell = {"NNODES": "2", "NODE_RANK": "1", "NPROC_PER_NODE": "3", "MASTER_ADDR": "127.0.0.2", "MASTER_PORT": "1"}
        l = self.launch(["--nproc-per-node=2", f"--master-port={port}", *self.SHOW], env=shell)
        self.assertEqual(l.wait(timeout=30), 0, l.stderr())
        self.assertEqual(sorted(l.stdout().splitlines()), [f"0 2 {port}", f"1 2 {port}"])
        self.assertIn("kubedist-launcher: ignoring NNODES, NODE_RANK, MASTER_ADDR: read only in a TrainingJob's pod "
                      "(KUBEDIST_JOB set)", l.stderr())
        self.assertNotIn("from the environment", l.stderr())

    def test_pet_variables_still_apply_outside_a_pod_and_are_named(self):
        port = free_port()
        l = self.launch(self.SHOW, env={"PET_NPROC_PER_NODE": "2", "PET_MASTER_PORT": str(port)})
        self.assertEqual(l.wait(timeout=30), 0, l.stderr())
        self.assertEqual(sorted(l.stdout().splitlines()), [f"0 2 {port}", f"1 2 {port}"])
        self.assertIn(f"kubedist-launcher: from the environment: --nproc-per-node=2 (PET_NPROC_PER_NODE), "
                      f"--master-port={port} (PET_MASTER_PORT)\n", l.stderr())

    def test_in_a_trainingjob_pod_the_operators_plain_variables_form_the_job(self):
        # Only the plain names (no PET_ twins): two launchers as the operator's two pods would run them.
        port = free_port_pair()
        launchers = []
        for node_rank in (1, 0):
            env = {"KUBEDIST_JOB": "j", "NNODES": "2", "NODE_RANK": str(node_rank), "NPROC_PER_NODE": "1",
                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
            launchers.append(self.launch(self.SHOW, env=env))
        for l in launchers:
            self.assertEqual(l.wait(), 0, l.stderr())
            self.assertIn("--nnodes=2 (NNODES)", l.stderr())
            self.assertIn("--rdzv-id=j (KUBEDIST_JOB)", l.stderr())
            self.assertNotIn("ignoring", l.stderr())
        self.assertEqual(launchers[0].stdout(), f"1 2 {port}\n")
        self.assertEqual(launchers[1].stdout(), f"0 2 {port}\n")

    def test_a_bad_plain_variable_in_a_pod_is_one_line_naming_it(self):
        l = self.launch(self.SHOW, env={"KUBEDIST_JOB": "j", "NNODES": "two"})
        self.assertEqual(l.wait(), 2)
        self.assertEqual(l.stderr(), "kubedist-launcher: NNODES: expected N or MIN:MAX with 1 <= MIN <= MAX, got 'two'\n")
        ignored = self.launch(self.SHOW, env={"NNODES": "two"})
        self.assertEqual(ignored.wait(), 0, ignored.stderr())



class LogDir(LauncherTest):
    def run_once(self, logs, word):
        l = self.launch(["--nproc-per-node=2", "--redirects=3", f"--log-dir={logs}", "--rdzv-id=job", "--no-python",
                         "--", "sh", "-c", f"echo {word}-$RANK; echo {word}-err >&2"])
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(l.stdout(), "")
        return re.search(r"^kubedist-launcher: worker logs in (\S+)$", l.stderr(), re.M).group(1)

    def test_a_rerun_with_the_same_log_dir_and_run_id_keeps_the_earlier_runs_logs(self):
        logs = self.path("logs")
        first, second = self.run_once(logs, "first"), self.run_once(logs, "second")
        self.assertNotEqual(first, second)
        self.assertEqual(sorted(os.listdir(logs)), sorted([os.path.basename(first), os.path.basename(second)]))
        for run_dir, word in ((first, "first"), (second, "second")):
            self.assertRegex(os.path.basename(run_dir), r"^job_\w+$")  # torchrun's RUN_ID_<random>
            for rank in (0, 1):
                with open(os.path.join(run_dir, "attempt_0", str(rank), "stdout.log")) as f:
                    self.assertEqual(f.read(), f"{word}-{rank}\n")
                with open(os.path.join(run_dir, "attempt_0", str(rank), "stderr.log")) as f:
                    self.assertEqual(f.read(), f"{word}-err\n")

    def test_a_log_dir_that_cannot_be_created_is_one_clear_error(self):
        with open(self.path("afile"), "w"):
            pass
        for log_dir in (self.path("afile"), self.path("afile") + "/sub"):
            l = self.launch([f"--log-dir={log_dir}", "--no-python", "--", "sh", "-c", f"touch {self.path('ran')}"])
            self.assertEqual(l.wait(), 1)
            self.assertEqual(l.stderr().count("\n"), 1, l.stderr())
            self.assertIn(f"kubedist-launcher: --log-dir: cannot create a directory in {log_dir}: ", l.stderr())
            self.assertFalse(os.path.exists(self.path("ran")))

    def test_rdzv_trace_appends_the_join_and_the_assignment_and_a_bad_path_is_one_clear_error(self):
        trace = self.path("trace")
        for _ in range(2):  # appended: a second launcher adds its lines
            l = self.launch([f"--rdzv-trace={trace}", "--no-python", "--", "true"])
            self.assertEqual(l.wait(), 0, l.stderr())
        with open(trace) as f:
            lines = [line.split() for line in f]
        self.assertEqual([line[1:] for line in lines], [["0", "join"], ["0", "assigned", "0"]] * 2, lines)
        self.assertTrue(all(line[0].isdigit() for line in lines), lines)
        for bad, why in ((self.path("no-such-dir") + "/trace", "No such file or directory"), ("", "a file path")):
            l = self.launch([f"--rdzv-trace={bad}", "--no-python", "--", "sh", "-c", f"touch {self.path('ran')}"])
            self.assertEqual(l.wait(), 2, l.stderr())
            self.assertEqual(l.stderr().count("\n"), 1, l.stderr())
            self.assertIn("--rdzv-trace", l.stderr())
            self.assertIn(why, l.stderr())
            self.assertFalse(os.path.exists(self.path("ran")))


if __name__ == "__main__":
    unittest.main()
