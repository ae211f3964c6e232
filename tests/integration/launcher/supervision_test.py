"""Supervision with real processes (shell workers): failures, restarts, signals, reaping, logs, metrics."""
import os
import re
import signal
import time
import socket
import subprocess
import unittest
import urllib.request

from harness import LauncherTest, pid_alive, proc_state, terminate, wait_until


class Supervision(LauncherTest):
    def test_exits_with_the_first_failing_workers_code_and_stops_the_rest(self):
        pids = self.path("pids")
        script = f'echo $$ >> {pids}; if [ "$RANK" = 1 ]; then exit 7; fi; exec sleep 300'
        l = self.launch(["--nproc-per-node=2", "--no-python", "--", "sh", "-c", script])
        self.assertEqual(l.wait(), 7)
        self.assertRegex(l.stderr(), r"worker failed: rank 1 \(local rank 1, pid \d+\) exited with code 7 at \d{4}-")
        for pid in map(int, self.read("pids").split()):
            self.assertFalse(pid_alive(pid), f"worker {pid} survived the launcher")

    def test_keeps_no_temporary_directory_unless_it_holds_logs(self):
        quiet = self.launch(["--no-python", "--", "sh", "-c", 'test -n "$TORCHELASTIC_ERROR_FILE"'])
        self.assertEqual(quiet.wait(), 0)
        self.assertEqual([d for d in os.listdir(self.tmp) if d.startswith("kubedist-launcher-")], [])
        teed = self.launch(["--tee=1", "--no-python", "--", "sh", "-c", "echo kept"])
        self.assertEqual(teed.wait(), 0)
        kept = re.search(r"worker logs in (\S+) ", teed.stderr()).group(1)
        with open(os.path.join(kept, "attempt_0", "0", "stdout.log")) as f:
            self.assertEqual(f.read(), "kept\n")

    def test_restarts_the_whole_group_up_to_max_restarts(self):
        attempts = self.path("attempts")
        script = f'echo "$RANK $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS" >> {attempts}; exit 3'
        l = self.launch(["--nproc-per-node=2", "--max-restarts=2", "--no-python", "--", "sh", "-c", script])
        self.assertEqual(l.wait(), 3)
        lines = sorted(self.read("attempts").splitlines())
        counts = sorted({line.split()[1] for line in lines})
        self.assertEqual(counts, ["0", "1", "2"])
        self.assertIn("giving up after 2 restart(s) (--max-restarts=2)", l.stderr())

    def test_succeeds_when_a_restart_succeeds(self):
        script = 'if [ "$RANK" = 0 ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then exit 1; fi; echo ok-$RANK-$TORCHELASTIC_RESTART_COUNT'
        l = self.launch(["--nproc-per-node=2", "--max-restarts=1", "--no-python", "--", "sh", "-c", script])
        self.assertEqual(l.wait(), 0)
        self.assertIn("ok-0-1", l.stdout())
        self.assertIn("ok-1-1", l.stdout())

    def test_sigterm_is_forwarded_and_the_launcher_exits_after_its_workers(self):
        marks = self.path("marks")
        script = f"trap 'echo term-$RANK >> {marks}; exit 0' TERM; echo up >> {marks}.up; while :; do sleep 0.05; done"
        l = self.launch(["--nproc-per-node=2", "--no-python", "--", "sh", "-c", script])
        wait_until(lambda: os.path.exists(marks + ".up") and len(self.read("marks.up").split()) == 2, what="workers up")
        terminate(l.proc.pid)
        self.assertEqual(l.wait(), 128 + signal.SIGTERM)
        self.assertEqual(sorted(self.read("marks").split()), ["term-0", "term-1"])

    def test_sigkill_follows_sigterm_after_the_grace_period(self):
        pid_file = self.path("pid")
        script = f"trap '' TERM; echo $$ > {pid_file}; while :; do sleep 0.05; done"
        l = self.launch(["--stop-timeout=0.5", "--no-python", "--", "sh", "-c", script])
        wait_until(lambda: os.path.exists(pid_file) and self.read("pid").strip(), what="worker pid")
        worker = int(self.read("pid"))
        terminate(l.proc.pid, signal.SIGINT)
        self.assertEqual(l.wait(), 128 + signal.SIGINT)
        self.assertFalse(pid_alive(worker))

    def test_a_checkpoint_on_sigterm_longer_than_10_s_finishes_within_the_pods_grace(self):
        # In a pod the operator sets KUBEDIST_STOP_TIMEOUT from terminationGracePeriodSeconds (here as if 30 s: 28):
        # a worker that takes 11 s to write its checkpoint on SIGTERM is not killed at the old fixed 10 s.
        ckpt = self.path("ckpt")
        script = (f"trap 'sleep 11; echo saved > {ckpt}; exit 0' TERM; echo up > {ckpt}.up; "
                  "while :; do sleep 0.05; done")
        l = self.launch(["--no-python", "--", "sh", "-c", script], env={"KUBEDIST_STOP_TIMEOUT": "28"})
        wait_until(lambda: os.path.exists(ckpt + ".up"), what="worker up")
        terminate(l.proc.pid)
        self.assertEqual(l.wait(40), 128 + signal.SIGTERM, l.stderr())
        self.assertEqual(self.read("ckpt"), "saved\n")
        self.assertIn("--shutdown-timeout=28 (KUBEDIST_STOP_TIMEOUT)", l.stderr())

    def test_a_short_pod_grace_kills_a_worker_that_ignores_sigterm_in_time(self):
        pid_file = self.path("pid")
        script = f"trap '' TERM; echo $$ > {pid_file}; while :; do sleep 0.05; done"
        l = self.launch(["--no-python", "--", "sh", "-c", script], env={"KUBEDIST_STOP_TIMEOUT": "0.5"})
        wait_until(lambda: os.path.exists(pid_file) and self.read("pid").strip(), what="worker pid")
        worker = int(self.read("pid"))
        start = time.monotonic()
        terminate(l.proc.pid)
        self.assertEqual(l.wait(), 128 + signal.SIGTERM)
        self.assertLess(time.monotonic() - start, 5, "the worker was not killed after the 0.5 s grace")
        self.assertFalse(pid_alive(worker))

    def test_a_bad_stop_timeout_from_the_pods_env_is_a_one_line_error(self):
        for value in ("-1", "soon", "1e999"):
            l = self.launch(["--no-python", "--", "true"], env={"KUBEDIST_STOP_TIMEOUT": value})
            self.assertEqual(l.wait(), 2)
            self.assertEqual(l.stderr(), f"kubedist-launcher: KUBEDIST_STOP_TIMEOUT: expected a number of seconds >= 0, "
                                         f"got '{value}'\n")

    def test_workers_die_with_a_launcher_killed_by_sigkill(self):
        pid_file = self.path("pid")
        l = self.launch(["--no-python", "--", "sh", "-c", f"echo $$ > {pid_file}; exec sleep 300"])
        wait_until(lambda: os.path.exists(pid_file) and self.read("pid").strip(), what="worker pid")
        worker = int(self.read("pid"))
        l.proc.kill()
        l.proc.wait()
        wait_until(lambda: not pid_alive(worker), what="worker to die with its launcher")

    # A worker with a child in its process group and a grandchild that escaped into its own session (setsid):
    # the shapes of dataloader workers and daemonized helpers. Each writes its pid, the grandchild also its sid.
    FAMILY = """import os, sys, time
def note(text):
    with open(sys.argv[1], "a") as f:
        f.write(text + "\\n")
note(f"worker {os.getpid()}")
up_r, up_w = os.pipe()
if os.fork() == 0:
    note(f"child {os.getpid()}")
    if os.fork() == 0:
        os.setsid()
        note(f"grandchild {os.getpid()} {os.getsid(0)}")
        os.write(up_w, b"up")
        time.sleep(300)
        os._exit(0)
    time.sleep(300)
    os._exit(0)
os.read(up_r, 2)  # the whole family is up (and noted) before the worker goes on
if sys.argv[2] == "sleep":
    time.sleep(300)
"""

    def start_family(self, then="sleep", prefix=None):
        """A launcher of one FAMILY worker; returns it and the family's pids once all three are up."""
        os.chmod(self.tmp, 0o777)  # also for an unprivileged launcher
        with open(self.path("family.py"), "w") as f:
            f.write(self.FAMILY)
        notes = self.path("family")
        l = self.launch(["--no-python", "--", "/usr/bin/python3", self.path("family.py"), notes, then], prefix=prefix)
        lines = wait_until(lambda: os.path.exists(notes) and (lambda t: t if len(t) == 3 else None)(
            self.read("family").splitlines()), what="the worker, its child and its grandchild")
        family = {line.split()[0]: [int(x) for x in line.split()[1:]] for line in lines}
        grandchild, sid = family["grandchild"]
        self.assertEqual(sid, grandchild, "the grandchild has its own session")
        return l, [family["worker"][0], family["child"][0], grandchild]

    def assert_all_gone(self, pids):
        try:
            wait_until(lambda: not any(pid_alive(p) for p in pids), timeout=10, what="every process to be gone")
        except AssertionError as e:
            raise AssertionError(f"{e}; left: {[(p, proc_state(p)) for p in pids if pid_alive(p)]}") from None
        finally:
            for pid in pids:
                terminate(pid, signal.SIGKILL)

    def test_sigkill_of_the_launcher_leaves_no_process_behind(self):
        l, pids = self.start_family()
        l.proc.kill()
        l.proc.wait()
        self.assert_all_gone(pids)

    def test_sigkill_of_an_unprivileged_launcher_leaves_no_process_behind(self):
        # As in a pod whose image runs as a plain user: no CAP_SYS_ADMIN, no PID namespace, no cgroup to write.
        l, pids = self.start_family(prefix=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        self.assertEqual({os.stat(f"/proc/{p}").st_uid for p in pids}, {65534})
        l.proc.kill()
        l.proc.wait()
        self.assert_all_gone(pids)

    def test_sigkill_of_the_supervisor_process_leaves_no_process_behind_and_exits_137(self):
        l, pids = self.start_family()
        # The launcher's child that is not a worker's parent-to-be: the supervisor (see guard.h).
        supervisor = int(subprocess.run(["pgrep", "-P", str(l.proc.pid)], capture_output=True, text=True).stdout)
        terminate(supervisor, signal.SIGKILL)
        self.assertEqual(l.wait(), 128 + signal.SIGKILL)
        self.assert_all_gone(pids)

    def test_sigkill_of_the_launchers_process_group_leaves_no_process_behind(self):
        # `kill -9 %1` in a shell: the whole job's process group, in which the launcher was started.
        l, pids = self.start_family(prefix=["setsid"])
        os.killpg(l.proc.pid, signal.SIGKILL)
        l.proc.wait()
        self.assert_all_gone(pids)

    def test_a_successful_job_leaves_no_escaped_grandchild_behind(self):
        l, pids = self.start_family(then="exit")
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assert_all_gone(pids)

    def test_reaps_orphaned_grandchildren(self):
        orphan_file = self.path("orphan")
        # The subshell exits at once; its `sleep 0.3` is orphaned and re-parented to the launcher (a subreaper).
        script = f"(sleep 0.3 & echo $! > {orphan_file}); exec sleep 300"
        l = self.launch(["--no-python", "--", "sh", "-c", script])
        wait_until(lambda: os.path.exists(orphan_file) and self.read("orphan").strip(), what="orphan pid")
        orphan = int(self.read("orphan"))
        wait_until(lambda: not os.path.exists(f"/proc/{orphan}"), what="the orphan to be reaped (no zombie)")
        self.assertIsNone(l.proc.poll())
        terminate(l.proc.pid)
        self.assertEqual(l.wait(), 128 + signal.SIGTERM)

    def test_as_pid1_reaps_orphans_and_forwards_sigterm(self):
        marks, token = self.path("marks"), f"0.3{os.getpid()}"
        # As PID 1 of a new pid namespace, orphans come to the launcher by the kernel's rule, not by subreaping.
        script = f"trap 'echo term >> {marks}; exit 0' TERM; (sleep {token} &); while :; do sleep 0.05; done"
        l = self.launch(["--no-python", "--", "sh", "-c", script], prefix=["unshare", "--pid", "--fork", "--kill-child"])

        def orphan_pids():
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if f.read() == b"sleep\0" + token.encode() + b"\0":
                            found.append(int(pid))
                except OSError:
                    pass
            return found

        orphan = wait_until(orphan_pids, what="the orphan")[0]
        wait_until(lambda: not os.path.exists(f"/proc/{orphan}"), what="PID 1 to reap the orphan (no zombie)")
        launcher = int(wait_until(lambda: subprocess.run(["pgrep", "-P", str(l.proc.pid)], capture_output=True,
                                                         text=True).stdout.split(), what="the launcher")[0])
        terminate(launcher)
        self.assertEqual(l.wait(), 128 + signal.SIGTERM)
        self.assertEqual(self.read("marks").split(), ["term"])

    def test_prints_the_workers_error_file(self):
        script = 'echo \'{"message": {"message": "ValueError: boom"}}\' > "$TORCHELASTIC_ERROR_FILE"; exit 1'
        l = self.launch(["--no-python", "--", "sh", "-c", script])
        self.assertEqual(l.wait(), 1)
        self.assertRegex(l.stderr(), r"rank 0 error file \S+/attempt_0/0/error.json: .*ValueError: boom")

    def test_a_failed_job_leaves_one_line_with_the_python_error_in_the_termination_log(self):
        # The worker records its exception in TORCHELASTIC_ERROR_FILE the way torch's @record does
        # (torch/distributed/elastic/multiprocessing/errors/error_handler.py), then dies of it.
        with open(self.path("raises.py"), "w") as f:
            f.write("import json, os, time, traceback\n"
                    "try:\n"
                    "    raise ValueError('learning rate must be positive\\nnot -1')\n"
                    "except Exception as e:\n"
                    "    with open(os.environ['TORCHELASTIC_ERROR_FILE'], 'w') as f:\n"
                    "        json.dump({'message': {'message': f'{type(e).__name__}: {e}', 'extraInfo': {\n"
                    "            'py_callstack': traceback.format_exc(), 'timestamp': str(int(time.time()))}}}, f)\n"
                    "    raise\n")
        log = self.path("termination-log")
        l = self.launch(["--nproc-per-node=2", "--no-python", "--", "sh", "-c",
                         f'if [ "$RANK" = 1 ]; then exec /usr/bin/python3 {self.path("raises.py")}; fi; exec sleep 300'],
                        env={"KUBEDIST_TERMINATION_LOG": log})
        self.assertEqual(l.wait(), 1)
        self.assertEqual(self.read("termination-log"),
                         f"rank 1 (local rank 1) on {socket.gethostname()} exited with code 1: "
                         "ValueError: learning rate must be positive")

    def test_a_worker_killed_by_a_signal_is_named_in_the_termination_log(self):
        l = self.launch(["--termination-log", self.path("t"), "--max-restarts=1", "--no-python", "--",
                         "sh", "-c", "kill -SEGV $$"])
        self.assertEqual(l.wait(), 128 + signal.SIGSEGV)
        self.assertEqual(self.read("t"), f"rank 0 (local rank 0) on {socket.gethostname()} was killed by signal SIGSEGV")

    def test_a_successful_job_leaves_its_last_status_and_no_failure(self):
        """On success, the termination message is no failure but node 0's last STATUS line (the job's final
        progress, for an operator that never polled it); here without progress, since the worker reports none."""
        l = self.launch(["--termination-log", self.path("t"), "--no-python", "--", "true"])
        self.assertEqual(l.wait(), 0)
        self.assertRegex(self.read("t"), r"^STATUS round=0 restarts=0 .*nodes=1 world_size=1 phase=over run=\S+ carried=\[\]$")

    def test_an_unwritable_termination_log_is_a_warning_not_a_crash(self):
        l = self.launch(["--termination-log=/nonexistent/dir/termination-log", "--no-python", "--", "sh", "-c", "exit 4"])
        self.assertEqual(l.wait(), 4)
        self.assertIn("kubedist-launcher: warning: cannot write the termination log /nonexistent/dir/termination-log: "
                      "No such file or directory\n", l.stderr())
        bad = self.launch(["--termination-log=", "--no-python", "--", "true"])
        self.assertEqual(bad.wait(), 2)
        self.assertEqual(bad.stderr(), "kubedist-launcher: --termination-log: expected a file path (in Kubernetes, the "
                                       "container's terminationMessagePath), got ''\n")

    def test_tee_prefixes_each_rank_and_writes_log_files(self):
        logs = self.path("logs")
        l = self.launch(["--nproc-per-node=2", "--tee=3", f"--log-dir={logs}", "--rdzv-id=job", "--no-python", "--",
                         "sh", "-c", 'echo out-$RANK; echo err-$RANK >&2; printf partial-$RANK'])
        self.assertEqual(l.wait(), 0)
        run_dir = re.search(r"worker logs in (\S+)\n", l.stderr()).group(1)
        self.assertRegex(run_dir, "^" + re.escape(logs) + r"/job_\w+$")
        for rank in (0, 1):
            self.assertIn(f"[rank {rank}]: out-{rank}\n", l.stdout())
            self.assertIn(f"[rank {rank}]: partial-{rank}\n", l.stdout())
            self.assertIn(f"[rank {rank}]: err-{rank}\n", l.stderr())
            with open(f"{run_dir}/attempt_0/{rank}/stdout.log") as f:
                self.assertEqual(f.read(), f"out-{rank}\npartial-{rank}")

    def test_redirects_hide_output_and_ranks_filter_limits_the_console(self):
        l = self.launch(["--nproc-per-node=2", "--redirects=1", "--log-dir", self.path("l"), "--no-python", "--",
                         "sh", "-c", "echo hidden-$RANK"])
        self.assertEqual(l.wait(), 0)
        self.assertNotIn("hidden", l.stdout())
        f = self.launch(["--nproc-per-node=2", "--tee=1", "--local-ranks-filter=1", "--no-python", "--",
                         "sh", "-c", "echo shown-$RANK"])
        self.assertEqual(f.wait(), 0)
        self.assertEqual(f.stdout(), "[rank 1]: shown-1\n")

    def test_runs_scripts_and_modules_with_python3_from_path_like_torchrun(self):
        with open(self.path("show.py"), "w") as f:
            f.write("import sys\nprint(sys.executable, *sys.argv[1:])\n")
        script = self.launch([self.path("show.py"), "--lr", "1"])
        self.assertEqual(script.wait(), 0, script.stderr())
        self.assertEqual(script.stdout(), "/usr/bin/python3 --lr 1\n")
        module = self.launch(["--nproc-per-node=2", "-m", "show", "x"], env={"PYTHONPATH": self.tmp})
        self.assertEqual(module.wait(), 0, module.stderr())
        self.assertEqual(module.stdout(), "/usr/bin/python3 x\n" * 2)
        legacy = self.launch(["--legacy-launch", "--nproc-per-node=2", "--tee=1", self.path("show.py"), "y"])
        self.assertEqual(legacy.wait(), 0, legacy.stderr())
        # --local-rank-style=auto: /usr/bin/python3 imports Debian's torch 1.13, whose launch passed --local_rank.
        self.assertIn("[rank 1]: /usr/bin/python3 --local_rank=1 y\n", legacy.stdout())

    def test_bad_flags_and_missing_program_are_clear_errors(self):
        l = self.launch(["--nnodes=x", "t.py"])
        self.assertEqual(l.wait(), 2)
        self.assertEqual(l.stderr().count("\n"), 1)
        self.assertIn("--nnodes", l.stderr())
        m = self.launch(["--no-python", "--", "/nonexistent/program"])
        self.assertEqual(m.wait(), 127)
        self.assertIn("cannot run '/nonexistent/program'", m.stderr())

    def test_metrics_endpoint_counts_restarts_and_running_workers(self):
        go = self.path("go")
        script = (f'if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then exit 9; fi; '
                  f'while [ ! -e {go} ]; do sleep 0.05; done')
        l = self.launch(["--nproc-per-node=2", "--max-restarts=1", "--metrics-port=0", "--metrics-addr=127.0.0.1",
                         "--no-python", "--", "sh", "-c", script])
        port = wait_until(lambda: re.search(r"metrics on 127\.0\.0\.1:(\d+)/metrics", l.stderr()), what="metrics port")
        url = f"http://127.0.0.1:{port.group(1)}/metrics"

        def scrape():
            text = urllib.request.urlopen(url, timeout=10).read().decode()
            return dict(line.split(" ", 1) for line in text.splitlines() if not line.startswith("#"))

        m = wait_until(lambda: (lambda s: s if s["kubedist_launcher_worker_restarts_total"] == "1" else None)(scrape()),
                       what="restart counted")
        self.assertEqual(m["kubedist_launcher_workers_running"], "2")
        self.assertEqual(m["kubedist_launcher_rendezvous_rounds_total"], "2")
        self.assertGreater(float(m["kubedist_launcher_last_recovery_seconds"]), 0)
        with urllib.request.urlopen(url, timeout=10) as r:
            self.assertIn("text/plain", r.headers["Content-Type"])
        open(go, "w").close()
        self.assertEqual(l.wait(), 0)


if __name__ == "__main__":
    unittest.main()
