"""The launcher on a real terminal (a pty it controls, as in an interactive shell): workers that read stdin."""
import fcntl
import os
import re
import select
import signal
import subprocess
import termios
import time
import unittest

from harness import DEADLINE, LAUNCHER, LauncherTest, wait_until, worker_env


def proc_state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


class OnATerminal:
    """The launcher as the session leader of a new pty: its process group is the terminal's foreground group."""

    def __init__(self, args, cwd):
        self.master, slave = os.openpty()
        self.output = b""

        def take_the_terminal():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen([LAUNCHER] + args, stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                                     env=worker_env({"TMPDIR": cwd}), start_new_session=True,
                                     preexec_fn=take_the_terminal)
        os.close(slave)

    def read_until(self, text, timeout=DEADLINE):
        end = time.monotonic() + timeout
        while text.encode() not in self.output:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {text!r} on the terminal after {timeout:.0f} s; it shows:\n"
                                     f"{self.output.decode(errors='replace')}")
            if select.select([self.master], [], [], left)[0]:
                try:
                    self.output += os.read(self.master, 4096)
                except OSError:  # EIO: every slave end is closed
                    time.sleep(0.02)
        return self.output.decode(errors="replace")

    def type(self, text):
        os.write(self.master, text.encode())

    def wait(self, timeout=DEADLINE):
        end = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < end:
            if select.select([self.master], [], [], 0.05)[0]:  # keep draining, so no write blocks on a full pty
                try:
                    self.output += os.read(self.master, 4096)
                except OSError:
                    pass
        if self.proc.poll() is None:
            raise AssertionError(f"launcher still running after {timeout:.0f} s; the terminal shows:\n"
                                 f"{self.output.decode(errors='replace')}")
        return self.proc.returncode

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.master is not None:
            os.close(self.master)
            self.master = None


class Terminal(LauncherTest):
    READER = ("import os\n"
              "rank = os.environ['LOCAL_RANK']\n"
              "print(f'rank {rank} is pid {os.getpid()}', flush=True)\n"
              "try:\n"
              "    print(f'rank {rank} read', repr(input(f'rank {rank} asks> ')), flush=True)\n"
              "except EOFError:\n"
              "    print(f'rank {rank} saw end-of-file', flush=True)\n")

    def on_terminal(self, args):
        with open(self.path("reader.py"), "w") as f:
            f.write(self.READER)
        t = OnATerminal(args + ["--no-python", "--", "/usr/bin/python3", self.path("reader.py")], self.tmp)
        self.addCleanup(t.close)
        return t

    def test_a_single_worker_reads_the_line_typed_on_the_terminal(self):
        t = self.on_terminal([])
        t.read_until("rank 0 asks> ")
        t.type("hello there\n")
        self.assertEqual(t.wait(), 0)
        self.assertIn("rank 0 read 'hello there'", t.read_until("rank 0 read"))

    def test_with_several_workers_local_rank_0_reads_the_terminal_and_the_others_see_end_of_file(self):
        t = self.on_terminal(["--nproc-per-node=2"])
        t.read_until("rank 1 saw end-of-file")  # at once, not stopped by SIGTTIN
        t.read_until("rank 0 asks> ")
        t.type("from the keyboard\n")
        self.assertEqual(t.wait(), 0)
        self.assertIn("rank 0 read 'from the keyboard'", t.read_until("rank 0 read"))

    def test_ctrl_c_at_the_workers_prompt_stops_the_job_without_a_restart(self):
        t = self.on_terminal(["--max-restarts=3"])
        worker = int(re.search(r"rank 0 is pid (\d+)", t.read_until("rank 0 asks> ")).group(1))
        # Python notices a signal only in its blocking read; one that comes between the prompt and the read waits
        # for the next input. So wait until the worker sleeps (in that read) before typing.
        wait_until(lambda: proc_state(worker) == "S", what="the worker to block reading the terminal")
        t.type("\x03")  # the terminal sends SIGINT to its foreground group: the worker's
        self.assertEqual(t.wait(), 128 + signal.SIGINT)
        shown = t.read_until("interrupted from the terminal")
        self.assertEqual(shown.count("rank 0 asks> "), 1, "no restart after Ctrl-C")


if __name__ == "__main__":
    unittest.main()
