"""`kubedist-launcher --install DIR`: the init container's way to hand the launcher to the trainer container (the
launcher image has no shell and no cp). The copy is atomic, executable and the real binary; bad input gets a
non-zero exit and one line naming the problem."""
import filecmp
import hashlib
import hmac
import os
import shutil
import stat
import subprocess
import tempfile
import unittest

from harness import DEADLINE, LAUNCHER

CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
UNSHARE = shutil.which("unshare") or "/usr/bin/unshare"
NOBODY = 65532  # the launcher image's user


def install(directory, *extra, user=None):
    def drop():
        os.setgroups([])
        os.setgid(user)
        os.setuid(user)

    return subprocess.run([LAUNCHER, "--install", directory, *extra], capture_output=True, text=True,
                          timeout=DEADLINE, env={}, preexec_fn=drop if user is not None else None)


class Install(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kubedist-install-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def assert_one_line_error(self, r, code, message):
        self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        self.assertEqual(r.stderr.splitlines(), [r.stderr.strip()], "not one line")
        self.assertTrue(r.stderr.startswith("kubedist-launcher: "), r.stderr)
        self.assertIn(message, r.stderr)
        self.assertEqual(r.stdout, "")

    def test_copies_itself_as_an_executable_file_and_says_where(self):
        r = install(self.tmp)
        target = os.path.join(self.tmp, "kubedist-launcher")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"kubedist-launcher: installed {target}\n")
        self.assertTrue(filecmp.cmp(LAUNCHER, target, shallow=False))
        self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o755)
        self.assertEqual(os.listdir(self.tmp), ["kubedist-launcher"], "the temporary file was left behind")
        help_text = subprocess.run([target, "--help"], capture_output=True, text=True, timeout=DEADLINE).stdout
        self.assertIn("--install DIR", help_text)

    def test_replaces_a_copy_that_is_running_without_disturbing_it(self):
        # Writing over a running executable fails with ETXTBSY; a rename over it does not.
        target = os.path.join(self.tmp, "kubedist-launcher")
        shutil.copy("/bin/sleep", target)
        running = subprocess.Popen([target, "60"])
        self.addCleanup(running.wait)
        self.addCleanup(running.kill)
        r = install(self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(filecmp.cmp(LAUNCHER, target, shallow=False))
        self.assertIsNone(running.poll(), "the old copy's process died")

    def test_works_as_an_unprivileged_user_in_a_root_holding_only_the_launcher(self):
        """Like the FROM-scratch launcher image: the binary alone, /proc mounted, user 65532, a world-writable
        directory as Kubernetes makes an emptyDir."""
        root = os.path.join(self.tmp, "root")
        os.makedirs(os.path.join(root, "proc"))
        os.makedirs(os.path.join(root, "kubedist", "bin"))
        os.chmod(os.path.join(root, "kubedist", "bin"), 0o777)
        shutil.copy(LAUNCHER, os.path.join(root, "kubedist-launcher"))
        script = (f'mount -t proc proc {root}/proc && exec {CHROOT} --userspec={NOBODY}:{NOBODY} {root} '
                  '/kubedist-launcher --install /kubedist/bin')
        r = subprocess.run([UNSHARE, "--mount", "--pid", "--fork", "sh", "-c", script], capture_output=True,
                           text=True, timeout=DEADLINE, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "kubedist-launcher: installed /kubedist/bin/kubedist-launcher\n")
        installed = os.path.join(root, "kubedist", "bin", "kubedist-launcher")
        self.assertEqual(os.stat(installed).st_uid, NOBODY)
        self.assertTrue(filecmp.cmp(LAUNCHER, installed, shallow=False))

    def test_a_missing_directory_is_an_error(self):
        missing = os.path.join(self.tmp, "missing")
        self.assert_one_line_error(install(missing), 1, f"--install: cannot use {missing}: No such file or directory")
        self.assertFalse(os.path.exists(missing))

    def test_a_file_in_place_of_the_directory_is_an_error(self):
        path = os.path.join(self.tmp, "file")
        open(path, "w").close()
        self.assert_one_line_error(install(path), 1, f"--install: {path} is not a directory")

    def test_an_unwritable_directory_is_an_error_and_leaves_nothing_behind(self):
        locked = os.path.join(self.tmp, "locked")
        os.mkdir(locked, 0o755)  # root's; the launcher runs as 65532
        os.chmod(self.tmp, 0o755)
        self.assert_one_line_error(install(locked, user=NOBODY), 1,
                                   f"--install: cannot create a file in {locked}: Permission denied")
        self.assertEqual(os.listdir(locked), [])

    def test_without_proc_it_cannot_find_itself_and_says_so(self):
        root = os.path.join(self.tmp, "root")
        os.makedirs(os.path.join(root, "out"))
        shutil.copy(LAUNCHER, os.path.join(root, "kubedist-launcher"))
        r = subprocess.run([CHROOT, root, "/kubedist-launcher", "--install", "/out"], capture_output=True, text=True,
                           timeout=DEADLINE, env={})
        self.assert_one_line_error(r, 1, "--install: cannot read this executable (/proc/self/exe; is /proc mounted?)")
        self.assertEqual(os.listdir(os.path.join(root, "out")), [])

    def test_a_missing_directory_argument_or_extra_arguments_are_usage_errors(self):
        r = subprocess.run([LAUNCHER, "--install"], capture_output=True, text=True, timeout=DEADLINE)
        self.assert_one_line_error(r, 2, "--install needs a directory")
        self.assert_one_line_error(install(self.tmp, "train.py"), 2,
                                   "--install DIR takes nothing else but --rdzv-secret-from FILE --rdzv-job UID, "
                                   "got 'train.py'")
        self.assert_one_line_error(install(self.tmp, "--rdzv-job", "u"), 2,
                                   "--install: --rdzv-secret-from FILE and --rdzv-job UID go together")
        self.assertEqual(os.listdir(self.tmp), [])

    # ---- the job's rendezvous secret, derived from the namespace's --------------------------------------------
    def namespace_secret(self, content=b"0123456789abcdef" * 4):
        secret_dir = os.path.join(self.tmp, "ns")
        os.makedirs(secret_dir, exist_ok=True)
        path = os.path.join(secret_dir, "secret")
        with open(path, "wb") as f:
            f.write(content)
        return path

    def test_derives_the_jobs_rendezvous_secret_the_operator_signs_with(self):
        """HMAC-SHA256(namespace secret, "kubedist-rdzv-job-1 " + uid) in hex, as contract/signed_line.h says and
        the operator computes (with OpenSSL); world-readable for a trainer of any user, and only the derived
        secret lands in the directory the trainer mounts."""
        ns_secret = self.namespace_secret()
        out = os.path.join(self.tmp, "bin")
        os.mkdir(out)
        r = install(out, "--rdzv-secret-from", ns_secret, "--rdzv-job", "1b4e28ba-2fa1-11d2-883f-0016d3cca427")
        self.assertEqual(r.returncode, 0, r.stderr)
        derived = os.path.join(out, "rdzv-secret")
        self.assertEqual(r.stdout, f"kubedist-launcher: installed {out}/kubedist-launcher\n"
                                   f"kubedist-launcher: derived the job's rendezvous secret into {derived}\n")
        want = hmac.new(b"0123456789abcdef" * 4, b"kubedist-rdzv-job-1 1b4e28ba-2fa1-11d2-883f-0016d3cca427",
                        hashlib.sha256).hexdigest()
        with open(derived) as f:
            self.assertEqual(f.read(), want)
        self.assertEqual(stat.S_IMODE(os.stat(derived).st_mode), 0o444)
        self.assertEqual(sorted(os.listdir(out)), ["kubedist-launcher", "rdzv-secret"])
        # Another job's secret differs; the same job's is the same on every node.
        other = os.path.join(self.tmp, "other")
        os.mkdir(other)
        self.assertEqual(install(other, "--rdzv-secret-from", ns_secret, "--rdzv-job", "2").returncode, 0)
        with open(os.path.join(other, "rdzv-secret")) as f:
            self.assertNotEqual(f.read(), want)

    def test_a_missing_or_short_namespace_secret_is_an_error_and_installs_nothing(self):
        missing = os.path.join(self.tmp, "ns", "missing")
        self.assert_one_line_error(install(self.tmp, "--rdzv-secret-from", missing, "--rdzv-job", "u"), 1,
                                   f"--rdzv-secret-from {missing}: No such file or directory")
        short = self.namespace_secret(b"too short")
        self.assert_one_line_error(install(self.tmp, "--rdzv-secret-from", short, "--rdzv-job", "u"), 1,
                                   f"--rdzv-secret-from {short}: a secret must have 16 to 4096 bytes (this one has 9)")
        self.assertEqual(os.listdir(self.tmp), ["ns"])


if __name__ == "__main__":
    unittest.main()
