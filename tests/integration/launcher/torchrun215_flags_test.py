"""torchrun 2.15's newer flags on the real launcher (issue 36 item 2): which signals reach the workers, the grace
before SIGKILL, the console prefix template, --local-ranks-filter, the duplicate filter files, the virtual local
rank, the flags that only say what happens instead, and torch 2.15's own workers and torchrun beside ours.
Shell workers where torch is not needed; torch 2.x where it matters (class Torch215, which ctest runs as
launcher.integration.torch2.torchrun215_flags with the torch of deploy/local/torch2.sh; skipped, saying why, under a
torch 1.x). The workers' environment beside torchrun's is torchrun_reference_test.py's, the legacy launch's spelling
torch_test.py's."""
import glob
import os
import re
import signal
import socket
import subprocess
import textwrap
import time
import unittest

from harness import LAUNCHER, PYTHON, LauncherTest, free_port, pid_alive, terminate, torch_major, wait_until, worker_env

TORCH_215_PYTHON = PYTHON

# A worker that marks itself up, then records which signal reached it (and exits 0 on it).
TRAPPING = ("for s in TERM INT HUP QUIT USR1; do trap \"echo $s-$RANK >> {marks}; exit 0\" $s; done; "
            "echo $$ >> {marks}.up; while :; do sleep 0.05; done")


class Signals(LauncherTest):
    def start_trapping(self, flags, env=None):
        marks = self.path("marks")
        l = self.launch(flags + ["--nproc-per-node=2", "--no-python", "--", "sh", "-c", TRAPPING.format(marks=marks)],
                        env=env)
        wait_until(lambda: os.path.exists(marks + ".up") and len(self.read("marks.up").split()) == 2,
                   what="workers up")
        return l, marks

    def test_sigquit_is_passed_on_by_default_as_torchrun_2_15_does(self):
        l, marks = self.start_trapping([])
        terminate(l.proc.pid, signal.SIGQUIT)
        self.assertEqual(l.wait(), 128 + signal.SIGQUIT)
        self.assertEqual(sorted(self.read("marks").split()), ["QUIT-0", "QUIT-1"])

    def test_a_signal_added_to_the_list_is_passed_on_to_every_worker(self):
        l, marks = self.start_trapping(["--signals-to-handle=SIGTERM,SIGUSR1"])
        terminate(l.proc.pid, signal.SIGUSR1)
        self.assertEqual(l.wait(), 128 + signal.SIGUSR1)
        self.assertEqual(sorted(self.read("marks").split()), ["USR1-0", "USR1-1"])

    def test_a_signal_left_out_ends_the_launcher_and_its_workers_without_reaching_them(self):
        l, marks = self.start_trapping([], env={"PET_SIGNALS_TO_HANDLE": "SIGTERM"})
        pids = [int(p) for p in self.read("marks.up").split()]
        terminate(l.proc.pid, signal.SIGHUP)
        self.assertEqual(l.wait(), -signal.SIGHUP, "SIGHUP's default action")
        wait_until(lambda: not any(pid_alive(p) for p in pids), what="workers gone with the launcher")
        self.assertFalse(os.path.exists(marks), "a worker was sent the SIGHUP")

    def test_workers_see_the_list_as_torchelastic_signals_to_handle(self):
        l = self.launch(["--signals-to-handle=SIGTERM,SIGUSR2", "--no-python", "--", "sh", "-c",
                         "echo $TORCHELASTIC_SIGNALS_TO_HANDLE"])
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(l.stdout(), "SIGTERM,SIGUSR2\n")


class ShutdownTimeout(LauncherTest):
    # A worker that ignores SIGTERM: only SIGKILL, after the grace, ends it.
    STUBBORN = "trap '' TERM; echo up >> {up}; while :; do sleep 0.05; done"

    def grace_of(self, flags, env=None):
        up = self.path(f"up-{len(self.launchers)}")  # each launch its own: up once its worker is
        l = self.launch(flags + ["--no-python", "--", "sh", "-c", self.STUBBORN.format(up=up)], env=env)
        wait_until(lambda: os.path.exists(up), what="worker up")
        start = time.monotonic()
        terminate(l.proc.pid)
        self.assertEqual(l.wait(), 128 + signal.SIGTERM)
        return time.monotonic() - start

    def test_each_spelling_is_the_grace_from_the_stop_signal_to_sigkill(self):
        for flags, env in ((["--shutdown-timeout=1"], None), (["--stop_timeout", "1"], None),
                           ([], {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "1"}), ([], {"PET_SHUTDOWN_TIMEOUT": "1"})):
            with self.subTest(flags=flags, env=env):
                self.assertTrue(0.9 <= self.grace_of(flags, env) < 10, "not the 1 s asked for (default 30 s)")


class Console(LauncherTest):
    SCRIPT = "echo out-$RANK; echo err-$RANK >&2"

    def test_the_prefix_template_shapes_each_teed_line(self):
        host = socket.gethostname()
        l = self.launch(["--nproc-per-node=2", "--tee=3", "--role=trainer",
                         "--log-line-prefix-template=${hostname}|${role_name}${local_rank}/${rank}: ",
                         "--no-python", "--", "sh", "-c", self.SCRIPT])
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(sorted(l.stdout().splitlines()),
                         [f"{host}|trainer0/0: out-0", f"{host}|trainer1/1: out-1"])
        self.assertIn(f"{host}|trainer1/1: err-1\n", l.stderr())

    def test_torchelastics_variable_sets_the_template_too(self):
        l = self.launch(["--tee=1", "--no-python", "--", "sh", "-c", self.SCRIPT],
                        env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "<$rank> "})
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(l.stdout(), "<0> out-0\n")

    def test_local_ranks_filter_shows_only_those_ranks_and_keeps_every_ranks_log_file(self):
        logs = self.path("logs")
        l = self.launch(["--nproc-per-node=3", "--tee=1", "--local-ranks-filter=1,2", f"--log-dir={logs}",
                         "--no-python", "--", "sh", "-c", self.SCRIPT])
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(sorted(l.stdout().splitlines()), ["[rank 1]: out-1", "[rank 2]: out-2"])
        (attempt,) = glob.glob(os.path.join(logs, "none_*", "attempt_0"))
        with open(os.path.join(attempt, "0", "stdout.log")) as f:
            self.assertEqual(f.read(), "out-0\n")

    def test_duplicate_filters_copy_matching_teed_lines_of_every_rank_to_the_attempts_files(self):
        logs = self.path("logs")
        script = "echo loss=$RANK; echo noise; echo 'a,b' >&2; echo other >&2"
        l = self.launch(["--nproc-per-node=2", "--tee=3", f"--log-dir={logs}", "--duplicate-stdout-filters=loss",
                         "--duplicate-stderr-filters=a,,b,nothing", "--no-python", "--", "sh", "-c", script])
        self.assertEqual(l.wait(), 0, l.stderr())
        (attempt,) = glob.glob(os.path.join(logs, "none_*", "attempt_0"))
        with open(os.path.join(attempt, "filtered_stdout.log")) as f:
            self.assertEqual(sorted(f.read().splitlines()), ["[rank 0]: loss=0", "[rank 1]: loss=1"])
        with open(os.path.join(attempt, "filtered_stderr.log")) as f:
            self.assertEqual(sorted(f.read().splitlines()), ["[rank 0]: a,b", "[rank 1]: a,b"])


class VirtualLocalRank(LauncherTest):
    SCRIPT = "echo $RANK $LOCAL_RANK $CUDA_VISIBLE_DEVICES"

    def test_each_worker_gets_local_rank_0_and_only_its_own_device(self):
        l = self.launch(["--nproc-per-node=2", "--virtual-local-rank", "--no-python", "--", "sh", "-c", self.SCRIPT],
                        env={"CUDA_VISIBLE_DEVICES": "4,5"})
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(sorted(l.stdout().splitlines()), ["0 0 4", "1 0 5"])
        plain = self.launch(["--nproc-per-node=2", "--no-python", "--", "sh", "-c", self.SCRIPT],
                            env={"CUDA_VISIBLE_DEVICES": "4,5"})
        self.assertEqual(plain.wait(), 0, plain.stderr())
        self.assertEqual(sorted(plain.stdout().splitlines()), ["0 0 4,5", "1 1 4,5"])

    def test_fewer_devices_than_workers_is_one_line_before_any_worker_starts(self):
        l = self.launch(["--nproc-per-node=2", "--virtual-local-rank", "--no-python", "--", "sh", "-c",
                         f"touch {self.path('ran')}"], env={"CUDA_VISIBLE_DEVICES": "4"})
        self.assertEqual(l.wait(), 2)
        self.assertEqual(l.stderr(), "kubedist-launcher: --virtual-local-rank: 2 workers but CUDA_VISIBLE_DEVICES=4 "
                                     "lists 1 device(s): each worker needs its own\n")
        self.assertFalse(os.path.exists(self.path("ran")))


class SayWhatHappensInstead(LauncherTest):
    def test_python_entry_point_flags_are_accepted_with_one_line_each(self):
        l = self.launch(["--logs-specs=custom", "--event-log-handler=console", "--no-python", "--", "true"])
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertIn("kubedist-launcher: --logs-specs=custom names a Python entry point (torchrun.logs_specs), "
                      "which the launcher does not load: worker logs go where --log-dir, --redirects and --tee say\n",
                      l.stderr())
        self.assertIn("kubedist-launcher: --event-log-handler=console names a Python event handler", l.stderr())

    def test_numa_binding_says_what_it_does_on_this_machine(self):
        with open("/sys/devices/system/node/online") as f:
            online = f.read().strip()
        if online != "0":
            self.skipTest(f"NUMA nodes {online}: the binding itself is tested on a fake topology (launcher unit tests)")
        l = self.launch(["--numa-binding=node", "--nproc-per-node=2", "--no-python", "--", "sh", "-c",
                         "grep Cpus_allowed_list /proc/self/status"])
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertIn("kubedist-launcher: --numa-binding=node: this machine has one NUMA node, so every CPU is near "
                      "every GPU: workers run unbound (a no-op)\n", l.stderr())
        with open("/proc/self/status") as f:
            ours = [line for line in f.read().splitlines() if line.startswith("Cpus_allowed_list")]
        self.assertEqual(l.stdout().splitlines(), ours * 2, "a worker was bound")

    def test_print_completion_prints_a_script_the_shell_accepts(self):
        script = self.path("completion.bash")
        with open(script, "w") as f:
            subprocess.run([LAUNCHER, "--print-completion", "bash"], stdout=f, check=True, timeout=30)
        out = subprocess.run(["bash", "-c", f"source {script}; complete -p kubedist-launcher; "
                              "COMP_WORDS=(kubedist-launcher --shutdown); COMP_CWORD=1; _kubedist_launcher; "
                              "echo ${COMPREPLY[@]}"], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, "complete -F _kubedist_launcher kubedist-launcher\n--shutdown-timeout\n")

    def test_every_new_flag_refuses_a_bad_value_in_one_line(self):
        cases = {
            "--shutdown-timeout=soon": "--shutdown-timeout: expected a number of seconds >= 0, got 'soon'",
            "--signals-to-handle=SIGKILL": "--signals-to-handle: SIGKILL cannot be caught (expected names like "
                                           "SIGTERM,SIGUSR1)",
            "--numa-binding=far": "--numa-binding: expected node, socket, exclusive or core-complex, got 'far'",
            "--log-line-prefix-template=${rnak}": "--log-line-prefix-template: unknown macro '${rnak}' (use "
                                                  "${role_name}, ${local_rank}, ${rank}, ${hostname}), in '${rnak}'",
            "--duplicate-stdout-filters=a,": "--duplicate-stdout-filters: expected words to match, comma-separated "
                                             "(,, for a comma), none empty (an empty one matches every line), got 'a,'",
            "--duplicate-stderr-filters=,": "--duplicate-stderr-filters: expected words to match, comma-separated "
                                            "(,, for a comma), none empty (an empty one matches every line), got ','",
            "--local-addr=a b": "--local-addr: expected a host name or address, got 'a b'",
            "--logs-specs=a b": "--logs-specs: expected an entry point name, got 'a b'",
            "--event-log-handler=a b": "--event-log-handler: expected a handler name, got 'a b'",
            "--virtual-local-rank=1": "--virtual-local-rank takes no value",
            "--print-completion=fish": "--print-completion: expected bash, zsh or tcsh, got 'fish'",
        }
        for flag, error in cases.items():
            with self.subTest(flag=flag):
                l = self.launch([flag, "--no-python", "--", "true"])
                self.assertEqual(l.wait(), 2)
                self.assertEqual(l.stderr(), f"kubedist-launcher: {error}\n")


class Torch215(LauncherTest):
    """torch 2.15's own workers and torchrun, beside ours."""

    def setUp(self):
        super().setUp()
        if torch_major() < 2:
            self.skipTest(f"{PYTHON} imports torch 1.x: ctest runs this class as launcher.integration.torch2.*")

    def env(self, extra=None):
        return dict({"GLOO_SOCKET_IFNAME": "lo", "PYTHON_EXEC": TORCH_215_PYTHON}, **(extra or {}))

    def script(self, name, text):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def test_workers_form_their_group_with_the_store_they_host_under_use_agent_store_false(self):
        # torchrun says True (its agent's store); ours hosts no c10d store, so workers host one at MASTER_ADDR:PORT.
        train = self.script("allreduce.py", """\
            import os, torch, torch.distributed as dist
            assert os.environ["TORCHELASTIC_USE_AGENT_STORE"] == "False"
            assert "NCCL_ASYNC_ERROR_HANDLING" not in os.environ
            assert os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
            dist.init_process_group("gloo")
            t = torch.tensor([dist.get_rank() + 1.0])
            dist.all_reduce(t)
            print(torch.__version__.split("+")[0], dist.get_rank(), dist.get_world_size(), int(t.item()), flush=True)
            dist.destroy_process_group()
            """)
        l = self.launch(["--standalone", "--nproc-per-node=2", "--tee=1", train], env=self.env())
        self.assertEqual(l.wait(timeout=180), 0, l.stderr())
        self.assertEqual(sorted(l.stdout().splitlines()), ["[rank 0]: 2.15.0 0 2 3", "[rank 1]: 2.15.0 1 2 3"])

    def test_the_console_and_the_filter_files_match_torchrun_2_15s(self):
        flags = ["--nproc-per-node=2", "--tee=3", "--role=trainer", "--log-line-prefix-template=${role_name}${local_rank}/${rank}| ",
                 "--duplicate-stdout-filters=loss", "--no-python", "sh", "-c", "echo loss=$RANK; echo noise"]
        results = {}
        for name, prefix in (("torchrun", [TORCH_215_PYTHON, "-m", "torch.distributed.run"]), ("ours", [LAUNCHER])):
            logs = self.path(f"logs-{name}")
            out = subprocess.run(prefix + [f"--log-dir={logs}", f"--master-port={free_port()}"] + flags,
                                 capture_output=True, text=True, timeout=180, env=worker_env(self.env()))
            self.assertEqual(out.returncode, 0, out.stderr)
            (filtered,) = glob.glob(os.path.join(logs, "*", "attempt_0", "filtered_stdout.log"))
            with open(filtered) as f:
                results[name] = (sorted(out.stdout.splitlines()), sorted(f.read().splitlines()))
        self.assertEqual(results["ours"], results["torchrun"])
        self.assertEqual(results["ours"][1], ["trainer0/0| loss=0", "trainer1/1| loss=1"])


if __name__ == "__main__":
    unittest.main()
