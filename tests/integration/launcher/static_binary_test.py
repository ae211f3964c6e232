"""The launcher binary is static: it runs alone in an empty root with an empty env, and resolves host names
(/etc/hosts, then DNS with search domains) without glibc's NSS."""
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import DEADLINE, LAUNCHER, PYTHON, wait_until

CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
UNSHARE = shutil.which("unshare") or "/usr/bin/unshare"
HERE = os.path.dirname(os.path.abspath(__file__))


def empty_root(files=None):
    """A directory holding only the launcher (as /kubedist-launcher) and the given /etc files."""
    root = tempfile.mkdtemp(prefix="kubedist-root-")
    shutil.copy(LAUNCHER, os.path.join(root, "kubedist-launcher"))
    for name, text in (files or {}).items():
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    return root


class StaticBinary(unittest.TestCase):
    def test_file_and_ldd_show_a_static_binary(self):
        self.assertIn("statically linked", subprocess.run(["file", "-L", LAUNCHER], capture_output=True, text=True).stdout)
        ldd = subprocess.run(["ldd", LAUNCHER], capture_output=True, text=True)
        self.assertIn("not a dynamic executable", ldd.stdout + ldd.stderr)

    def test_runs_alone_in_an_empty_root_with_an_empty_env(self):
        root = empty_root()
        self.addCleanup(shutil.rmtree, root)
        # The worker is the launcher itself (--help): the root holds no other program, not even a libc.
        r = subprocess.run([CHROOT, root, "/kubedist-launcher", "--nproc-per-node=2", "--no-python", "--",
                            "/kubedist-launcher", "--help"], env={}, capture_output=True, text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("usage: kubedist-launcher"), 2)

    def test_a_node_finds_node_zero_by_dns_name_retrying_until_it_resolves(self):
        """In a fresh network namespace: a DNS responder on 127.0.0.1:53 that learns node 0's name only after the
        joining node has asked for it; the joining node runs chrooted with just /etc/resolv.conf and /etc/hosts."""
        work = tempfile.mkdtemp(prefix="kubedist-dns-")
        self.addCleanup(shutil.rmtree, work)
        root = empty_root({"etc/resolv.conf": "nameserver 127.0.0.1\nsearch ns.svc.cluster.local svc.cluster.local\n"
                                              "options ndots:5 timeout:1\n",
                           "etc/hosts": "127.0.0.1 localhost\n"})
        self.addCleanup(shutil.rmtree, root)
        script = f"""
set -eu
ip link set lo up
records={work}/records; log={work}/queries
: > "$records"
{PYTHON} {HERE}/workers/dns_responder.py 127.0.0.1 53 "$records" "$log" & dns=$!
trap 'kill $dns $node0 $node1 2>/dev/null || true' EXIT
node0=; node1=
until [ -e "$log.ready" ]; do sleep 0.02; done
flags="--nnodes=2 --master-addr=j-node-0.j --master-port=29500 --rdzv-id=dns --rdzv-conf=join_timeout=60"
env -i {CHROOT} {root} /kubedist-launcher $flags --node-rank=1 --no-python -- /kubedist-launcher --help \
  > {work}/node1.out 2> {work}/node1.err & node1=$!
# Node 0's name is unknown until the joining node has asked for it with its search domain.
until grep -qx j-node-0.j.ns.svc.cluster.local "$log" 2>/dev/null; do sleep 0.02; done
echo "j-node-0.j.ns.svc.cluster.local 127.0.0.1" > "$records"
env -i PATH=/usr/bin:/bin {LAUNCHER} $flags --node-rank=0 --no-python -- sh -c 'echo "WORLD_SIZE=$WORLD_SIZE RANK=$RANK"' \
  > {work}/node0.out 2> {work}/node0.err & node0=$!
wait $node1; echo "node1=$?"
wait $node0; echo "node0=$?"
"""
        r = subprocess.run([UNSHARE, "--net", "bash", "-c", script], capture_output=True, text=True,
                           timeout=DEADLINE * 2)
        def read(name):
            with open(os.path.join(work, name)) as f:
                return f.read()

        self.assertIn("node1=0", r.stdout, r.stderr + read("node1.err"))
        self.assertIn("node0=0", r.stdout, r.stderr + read("node0.err"))
        self.assertEqual(read("node0.out").strip(), "WORLD_SIZE=2 RANK=0")
        self.assertIn("usage: kubedist-launcher", read("node1.out"))
        self.assertEqual(read("queries").split()[0], "j-node-0.j.ns.svc.cluster.local")


if __name__ == "__main__":
    unittest.main()
