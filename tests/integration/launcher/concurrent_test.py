"""Several single-node jobs on one host at once: each must get a store port of its own."""
import unittest

from harness import LauncherTest, free_port, wait_until

# Local rank 0 binds the store port as torch's TCPStore does (SO_REUSEADDR, which the launcher's hold on the port
# until then expects): a second job on the same port fails to start.
WORKER = """
import os, socket, sys, time
log, go = sys.argv[1], sys.argv[2]
port = int(os.environ["MASTER_PORT"])
if os.environ["LOCAL_RANK"] == "0":
    store = socket.socket()
    store.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    store.bind(("127.0.0.1", port))
    store.listen()
with open(log, "a") as f:
    f.write(f"{os.environ['TORCHELASTIC_RUN_ID']} {port}\\n")
while not os.path.exists(go):
    time.sleep(0.05)
"""


class ConcurrentJobs(LauncherTest):
    def run_two_jobs_at_once(self, flags_for):
        log, go = self.path("log"), self.path("go")
        jobs = [self.launch([*flags_for(run), "--nproc-per-node=2", f"--rdzv-id={run}", "--no-python", "--",
                             "/usr/bin/python3", "-c", WORKER, log, go]) for run in ("one", "two")]
        wait_until(lambda: len(self.lines(log)) == 4 or any(j.proc.poll() is not None for j in jobs),
                   what="both jobs running")
        open(go, "w").close()
        for job in jobs:
            self.assertEqual(job.wait(), 0, job.stderr())
        ports = {}
        for line in self.lines(log):
            run, port = line.split()
            ports.setdefault(run, set()).add(int(port))
        self.assertEqual(len(ports["one"]), 1, ports)
        self.assertEqual(len(ports["two"]), 1, ports)
        self.assertNotEqual(ports["one"], ports["two"])
        return ports

    def lines(self, path):
        try:
            with open(path) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def test_two_standalone_jobs_at_once_each_get_a_free_port(self):
        self.run_two_jobs_at_once(lambda run: ["--standalone"])

    def test_the_random_master_port_recipe_gives_each_job_its_own_port(self):
        # The torch.distributed.launch recipe: --master_port=$((29500 + RANDOM % 1000)); free ports stand in for
        # RANDOM so that the test cannot pick a port in use.
        chosen = {"one": free_port(), "two": free_port()}
        ports = self.run_two_jobs_at_once(lambda run: [f"--master_port={chosen[run]}"])
        self.assertEqual(ports, {run: {port} for run, port in chosen.items()})


if __name__ == "__main__":
    unittest.main()
