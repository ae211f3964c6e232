"""The progress channel with real PyTorch (Debian's python3-torch, gloo DDP on 127.0.0.1) under real launchers:
reports reach node 0's STATUS, a rank stuck in a collective is caught and named with its stack and the group
restarts, a job that never reports is never judged hung, a throttled rank is named a straggler (and nobody in a
clean run), the lost time of a worker crash matches the restart window, and bad or flooding reports cost nothing
but one warning."""
import json
import os
import re
import socket
import subprocess
import time
import unittest
import urllib.request

from harness import DEADLINE, PYTHON, LauncherTest, free_port, wait_until, worker_path

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "workers", "progress_train.py")
HELPER = os.path.join(HERE, "..", "..", "..", "launcher-sidecar", "python")
TORCH_DEADLINE = max(DEADLINE, 300)
ENV = {"GLOO_SOCKET_IFNAME": "lo"}


def status(port):
    """Node 0's STATUS line as a dict of its words (hang_msg unescaped), or None while it does not answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), 2) as s:
            s.sendall(b"STATUS\n")
            line = s.makefile().readline().strip()
    except OSError:
        return None
    words = dict(w.split("=", 1) for w in line.split()[1:])
    if "hang_msg" in words:
        words["hang_msg"] = re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), words["hang_msg"])
    return words


def step_lines(path):
    """(attempt, step, time) of a rank's steps file."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [(int(a), int(s), float(t)) for a, s, t in (line.split() for line in f if len(line.split()) == 3)]


class Progress(LauncherTest):
    def job(self, nodes, nproc, train_args, launcher_args=(), steps=12):
        """`nodes` launchers of `nproc` workers each; returns (launchers, rendezvous port)."""
        master, rdzv = free_port(), free_port()
        launchers = []
        for node_rank in reversed(range(nodes)):  # the others first: they retry until node 0 hosts
            args = [f"--nnodes={nodes}", f"--node-rank={node_rank}", f"--nproc-per-node={nproc}",
                    "--master-addr=127.0.0.1", f"--master-port={master}", f"--rdzv-endpoint=127.0.0.1:{rdzv}",
                    "--rdzv-id=progress", "--rdzv-conf=join_timeout=120", "--stop-timeout=5", "--max-restarts=2",
                    *launcher_args, TRAIN, self.tmp, str(steps), *train_args]
            launchers.insert(0, self.launch(args, ENV))
        return launchers, rdzv

    def wait_all(self, launchers):
        codes = [l.wait(TORCH_DEADLINE) for l in launchers]
        self.assertEqual(codes, [0] * len(launchers), "\n".join(l.stderr() for l in launchers))

    def watch(self, port, launchers, every=0.2, files=()):
        """Every STATUS answer while node 0 runs, each with what the named files of the test held then."""
        seen = []
        while launchers[0].proc.poll() is None:
            s = status(port)
            if s:
                held = {name: self.read(name) for name in files if os.path.exists(self.path(name))}
                seen.append((time.time(), dict(s, files=held) if files else s))
            time.sleep(every)
        return seen

    def test_the_helper_is_a_no_op_outside_a_launcher_and_never_raises(self):
        env = {"PYTHONPATH": HELPER, "PATH": worker_path()}
        code = ("from kubedist import progress\n"
                "assert not progress.enabled()\n"
                "progress.step(1, total=2, loss=0.5)\n"
                "with progress.compute(): pass\n"
                "import os; os.environ['KUBEDIST_PROGRESS'] = '@nobody-listens'\n"
                "import importlib; importlib.reload(progress)\n"
                "assert progress.enabled()\n"
                "for i in range(1000): progress.step(i, total=1000, loss=float('nan'), bad=object())\n"
                "print('ok')\n")
        out = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual((out.returncode, out.stdout, out.stderr), (0, "ok\n", ""))

    def test_a_step_the_interval_held_back_is_sent_when_the_loop_stops_after_it(self):
        """The helper sends at most every 0.1 s; a loop that stops right after a held step (a hang) must still
        tell the launcher that step, or the hang message names an older one."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        name = f"kubedist-progress-test-{os.getpid()}"
        sock.bind("\0" + name)
        sock.settimeout(0.5)
        env = {"PYTHONPATH": HELPER, "PATH": worker_path(), "KUBEDIST_PROGRESS": "@" + name}
        code = ("import os, sys, time\n"
                "from kubedist import progress\n"
                "for i in range(1, 1001): progress.step(i, total=5000, loss=1.0 / i)\n"
                "print('stopped', flush=True)\n"
                "time.sleep(60)\n"  # stuck: only the helper's own thread can still send step 1000
                "os._exit(0)\n")
        child = subprocess.Popen([PYTHON, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(child.stdout.readline(), "stopped\n")
            steps, deadline = [], time.monotonic() + 30
            while (not steps or steps[-1] != 1000) and time.monotonic() < deadline:
                try:
                    steps.append(json.loads(sock.recv(4096))["step"])
                except socket.timeout:
                    pass
            self.assertIsNone(child.poll(), "the loop is still stuck when the held step arrives")
        finally:
            child.kill()
            child.wait()
            sock.close()
        self.assertEqual(steps[-1:], [1000], f"the held step never came: {steps}")
        self.assertEqual(steps[0], 1)
        self.assertEqual(steps, sorted(set(steps)), "each report newer than the one before")
        self.assertLess(len(steps), 100, "still at most one report per 0.1 s")

    def test_reports_reach_node_zeros_status_as_the_jobs_step_rate_and_metrics(self):
        launchers, port = self.job(2, 2, ["--step-sleep", "0.25"], steps=40)
        seen = self.watch(port, launchers)
        self.wait_all(launchers)
        with_step = [s for _, s in seen if "step" in s]
        self.assertTrue(with_step, f"no STATUS with progress among {len(seen)}")
        mid = with_step[len(with_step) // 2]
        self.assertEqual((mid["total"], mid["epoch"], mid["nodes"], mid["world_size"]), ("40", "0", "2", "4"))
        self.assertIn("m.loss", mid)
        self.assertGreater(float(mid["sps"]), 0.5)
        steps = [int(s["step"]) for s in with_step]
        self.assertEqual(steps, sorted(steps), "the job's step never goes back within a round")
        self.assertGreaterEqual(steps[-1], 35)
        self.assertEqual(with_step[-1]["hang"], "0")
        self.assertTrue(all("slow" not in s for s in with_step), "a clean run names no straggler")

    def test_a_rank_stuck_in_a_collective_is_caught_named_with_its_stack_and_the_group_resumes(self):
        timeout = 8
        launchers, port = self.job(2, 1, ["--step-sleep", "0.2", "--hang-rank", "1", "--hang-step", "5"],
                                   [f"--hang-timeout={timeout}", f"--termination-log={self.path('term0')}"])
        seen = self.watch(port, launchers, every=0.5, files=["term0"])
        self.wait_all(launchers)
        hung = next((t - int(s["hang_age_ms"]) / 1000, s) for t, s in seen if s.get("hang") == "1")
        detected, report = hung
        # The stuck rank's last step of the first attempt, as the worker wrote it: the hang starts there.
        last_step = max(t for a, s, t in step_lines(self.path("steps1")) if a == 0)
        self.assertLess(detected - last_step, timeout + 5, f"detected {detected - last_step:.1f} s after the last step")
        self.assertGreaterEqual(detected - last_step, timeout - 0.5)
        message = report["hang_msg"]
        self.assertRegex(message, r"^no step for \d+ s \(hang timeout 8 s\): ")
        # The innermost frames are torch's own: torch 2.x wraps recv in c10d_logger's wrapper and runs backward
        # in autograd/graph.py's _engine_run_backward.
        self.assertRegex(message, r"rank 1 on \S+ stuck \d+ s at step 4 in recv \(progress_train\.py:\d+\) "
                                  r"\[recv distributed_c10d\.py:\d+ < (wrapper c10d_logger\.py:\d+ < )?"
                                  r"<module> progress_train\.py:\d+\]")
        self.assertRegex(message, r"rank 0 on \S+ stuck \d+ s at step 4 in (_engine_run_)?backward "
                                  r"\(progress_train\.py:\d+\)")
        # The termination message, at once (a pod killed in the hang's aftermath says why); once the job succeeded,
        # node 0's last STATUS, the hang counted.
        self.assertTrue(any("hang: " + message in s["files"].get("term0", "") for _, s in seen if s.get("hang") == "1"),
                        [s["files"] for _, s in seen if s.get("hang") == "1"][:2])
        self.assertRegex(self.read("term0"), r"^STATUS round=1 restarts=1 hang=1 .*phase=over ")
        # faulthandler lists the helper's thread (the newest) first; the training thread, which took the signal, is
        # the "Current thread", waiting in the receive.
        self.assertRegex(launchers[1].stderr(), r"rank 1's stacks:\n(Thread 0x[0-9a-f]+ \(most recent call first\):\n"
                                                r"(  File .*\n)+\n)?Current thread 0x[0-9a-f]+ \(most recent call first\):\n"
                                                r"(  File .*\n)*  File .*progress_train\.py")
        # Training resumed on the one in-place restart and finished.
        self.assertEqual(max(a for a, s, t in step_lines(self.path("steps0"))), 1,
                         "one restart only:\n" + "\n".join(l.stderr()[-3000:] for l in launchers))
        self.assertEqual(max(s for a, s, t in step_lines(self.path("steps1")) if a == 1), 12)
        self.assertEqual(seen[-1][1]["restarts"], "1")

    def test_a_job_that_never_reports_is_never_judged_hung(self):
        master, rdzv = free_port(), free_port()
        script = self.path("quiet.py")
        with open(script, "w") as f:
            f.write("import time\ntime.sleep(6)\n")
        launchers = []
        for node_rank in (1, 0):
            launchers.insert(0, self.launch([
                "--nnodes=2", f"--node-rank={node_rank}", "--nproc-per-node=1", "--master-addr=127.0.0.1",
                f"--master-port={master}", f"--rdzv-endpoint=127.0.0.1:{rdzv}", "--rdzv-id=quiet",
                "--hang-timeout=1", "--max-restarts=2", script], ENV))
        seen = self.watch(rdzv, launchers, every=0.5)
        self.wait_all(launchers)
        self.assertTrue(seen)
        self.assertTrue(all(s["hang"] == "0" and s["restarts"] == "0" and "step" not in s for _, s in seen), seen[-1])

    def test_a_throttled_rank_is_named_a_straggler(self):
        launchers, port = self.job(2, 2, ["--step-sleep", "0.05", "--slow-rank", "2", "--slow-sleep", "0.15"],
                                   ["--straggler-steps=5"], steps=60)
        seen = self.watch(port, launchers)
        self.wait_all(launchers)
        named = [s["slow"] for _, s in seen if "slow" in s]
        self.assertTrue(named, "no straggler named")
        rank, node_rank, ratio, seconds = named[-1].split(",")
        self.assertEqual((rank, node_rank), ("2", "1"))  # global rank 2 is node 1's local rank 0
        self.assertGreater(float(ratio), 1.5)
        self.assertGreater(float(seconds), 0.15)
        self.assertTrue(all(n.split(",")[0] == "2" for n in named), named)

    def test_the_lost_time_of_a_worker_crash_matches_the_restart_window(self):
        launchers, port = self.job(2, 1, ["--step-sleep", "0.1", "--crash-rank", "1", "--crash-step", "6"], steps=30)
        seen = self.watch(port, launchers, every=0.3)
        self.wait_all(launchers)
        with open(self.path("crash_time")) as f:
            crashed = float(f.read())
        resumed = min(t for path in ("steps0", "steps1") for a, s, t in step_lines(self.path(path)) if a == 1)
        window = resumed - crashed
        last = seen[-1][1]
        self.assertEqual(last["worker_crash"], "1")
        lost = int(last["lost_ms"]) / 1000
        self.assertLess(abs(lost - window), 1.0, f"lost {lost:.2f} s, restart window {window:.2f} s")
        self.assertLess(int(last["busy_ms"]), int(last["up_ms"]), "goodput below 1")

    def test_malformed_huge_and_flooding_reports_cost_one_warning_and_no_memory(self):
        launchers, port = self.job(2, 1, ["--step-sleep", "0.1", "--flood", "500", "--bad-reports"],
                                   ["--metrics-port=0", "--metrics-addr=127.0.0.1"], steps=40)
        peak_rss = 0
        seen = []
        counters = {}
        while launchers[0].proc.poll() is None:
            s = status(port)
            if s:
                seen.append(s)
            for pid in self.launcher_pids(launchers[0].proc.pid):
                peak_rss = max(peak_rss, self.rss_kb(pid))
            counters = self.counters(launchers[0]) or counters
            time.sleep(0.3)
        self.wait_all(launchers)
        self.assertGreater(counters.get("kubedist_launcher_progress_reports_dropped_total", 0), 0, counters)
        self.assertGreater(counters.get("kubedist_launcher_progress_reports_malformed_total", 0), 0, counters)
        self.assertTrue(any(s.get("step") == "40" for s in seen) or any(int(s.get("step", 0)) >= 30 for s in seen),
                        seen[-1:])
        for l in launchers:
            err = l.stderr()
            self.assertEqual(len(re.findall(r"sends more than \d+ progress reports a second", err)), 1, err[-2000:])
            self.assertEqual(len(re.findall(r"ignoring a progress report from rank", err)), 1, err[-2000:])
        self.assertLess(peak_rss, 64 * 1024, f"the launcher grew to {peak_rss} kB")

    def test_reports_from_a_process_that_is_not_the_ranks_worker_are_ignored(self):
        # The abstract sockets are the network namespace's: this test process reaches them as another container of
        # the pod (or a hostNetwork process of the node) would. Its forged steps must never reach the job's view.
        launchers, port = self.job(2, 1, ["--step-sleep", "0.2"], ["--metrics-port=0", "--metrics-addr=127.0.0.1"],
                                   steps=30)
        forged = json.dumps({"step": 999999, "total_steps": 1000000}).encode()
        sent, seen, counters = set(), [], {}
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            while launchers[0].proc.poll() is None:
                for name in self.progress_sockets():
                    try:
                        s.sendto(forged, "\0" + name)
                        sent.add(name)
                    except OSError:
                        pass  # the launcher has just closed it
                st = status(port)
                if st:
                    seen.append(st)
                counters = self.counters(launchers[0]) or counters
                time.sleep(0.1)
        self.wait_all(launchers)
        self.assertGreaterEqual(len(sent), 2, "no progress socket of both launchers was found")
        steps = [int(st["step"]) for st in seen if st.get("step", "-").isdigit()]
        self.assertTrue(steps, seen[-3:])
        self.assertLessEqual(max(steps), 30, "a forged step reached node 0's STATUS")
        self.assertGreater(counters.get("kubedist_launcher_progress_reports_foreign_total", 0), 0, counters)
        for l in launchers:
            warnings = re.findall(r"ignoring progress reports to local rank 0's socket from pid (\d+), which is not "
                                  r"that rank's worker", l.stderr())
            self.assertEqual(warnings, [str(os.getpid())], l.stderr()[-2000:])

    @staticmethod
    def progress_sockets():
        """The names of the launchers' progress sockets in this network namespace's abstract namespace."""
        names = set()
        with open("/proc/net/unix") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 8 else ""
                if path.startswith("@kubedist-progress-"):
                    names.add(path[1:])
        return names

    @staticmethod
    def counters(launcher):
        """The launcher's progress counters from its /metrics, {} while it does not answer."""
        port = re.search(r"metrics on 127\.0\.0\.1:(\d+)/metrics", launcher.stderr())
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=2) as r:
                text = r.read().decode()
        except (OSError, AttributeError):
            return {}
        return {name: float(v) for name, v in re.findall(r"^(kubedist_launcher_progress_\w+) (\S+)$", text, re.M)}

    def launcher_pids(self, pid):
        """The launcher's guard and its supervisor (its children not running python)."""
        pids = [pid]
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                for child in f.read().split():
                    with open(f"/proc/{child}/comm") as c:
                        if "python" not in c.read():
                            pids.append(int(child))
        except OSError:
            pass
        return pids

    @staticmethod
    def rss_kb(pid):
        try:
            with open(f"/proc/{pid}/status") as f:
                return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
        except (OSError, AttributeError):
            return 0


if __name__ == "__main__":
    unittest.main()
