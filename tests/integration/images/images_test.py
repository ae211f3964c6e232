"""The images built for real (deploy/local/images.sh, Debian's buildah) and pushed to a real registry (distribution,
built by tools.sh) on 127.0.0.1; what they hold is read back through the registry's HTTP API (/v2/...).

Needs root, buildah, crun and debootstrap (setup.sh), $KUBEDIST_CACHE/bin/registry (tools.sh), and, the first time,
Debian's mirror and some minutes: `images.sh build` is cached by content, so later runs take seconds."""
import ctypes
import gzip
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
import unittest
import urllib.error
import urllib.request

SOURCE = os.environ.get("KUBEDIST_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
CACHE = os.environ.get("KUBEDIST_CACHE") or os.path.join(SOURCE, ".cache")
IMAGES = os.path.join(SOURCE, "deploy", "local", "images.sh")
ENV_FILE = os.path.join(CACHE, "images", "images.env")
REGISTRY = os.path.join(CACHE, "bin", "registry")
BUILD_TIMEOUT = 3000  # a cold build: debootstrap, Debian's compilers and torch, compiling the operator
ACCEPT = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
NOBODY = "65532:65532"
# As images.sh: crun refuses this machine's hybrid cgroup v1/v2 layout, buildah's chroot isolation needs no runtime.
ISOLATION = os.environ.get("KUBEDIST_BUILDAH_ISOLATION", "chroot")
# Where a worker of the examples dies of a signal, every thread's Python stack is printed (faulthandler): CI once saw
# a torch 2.15 worker abort ("terminate called without an active exception") with nothing else to go on.
TRAIN_ENV = ["--env", "GLOO_SOCKET_IFNAME=lo", "--env", "PYTHONFAULTHANDLER=1"]
# What this test pushes to its own registry: all but the torch 2.15 example (5.2 GB), which is read in buildah's
# storage here and pushed by the real-node cluster (tests/e2e/real) to its own.
PUSHED = ["KUBEDIST_EXAMPLE_CPU_IMAGE", "KUBEDIST_LAUNCHER_IMAGE", "KUBEDIST_OPERATOR_IMAGE", "KUBEDIST_PAUSE_IMAGE"]
TORCH2_REQUIREMENTS = os.path.join(SOURCE, "deploy", "local", "torch2-requirements.txt")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    """The registry gets SIGTERM when this test process dies, even by SIGKILL (a ctest timeout)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def images_sh(*args, timeout=BUILD_TIMEOUT):
    r = subprocess.run([IMAGES, *args], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, KUBEDIST_CACHE=CACHE))
    if r.returncode != 0:
        raise AssertionError(f"images.sh {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stderr


def buildah(*args, check=True):
    for _ in range(3):
        r = subprocess.run(["buildah", *args], capture_output=True, text=True, timeout=300)
        # runc copies itself into a sealed memfd before it runs a container; sealing may find the copy still busy
        # for a moment ("Close_Fd sealing memfd copy: Device or resource busy", seen once in CI): that try only.
        if r.returncode == 0 or "sealing memfd copy" not in r.stdout + r.stderr:
            break
        time.sleep(1)
    if check and r.returncode != 0:
        raise AssertionError(f"buildah {' '.join(args)} exited {r.returncode}:\n{r.stdout.strip()[-4000:]}\n"
                             f"{r.stderr.strip()}")
    return r


class Images(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kubedist-images-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.first_build = images_sh("build")
        with open(ENV_FILE) as f:
            cls.images = dict(line.strip().split("=", 1) for line in f if line.strip())
        cls.port = free_port()
        cls.addr = f"127.0.0.1:{cls.port}"
        cls.registry_log = open(os.path.join(cls.tmp, "registry.log"), "w")
        cls.addClassCleanup(cls.registry_log.close)
        cls.start_registry()
        cls.addClassCleanup(cls.stop_registry)
        cls.first_push = images_sh("push", cls.addr, *PUSHED, timeout=900)

    @classmethod
    def start_registry(cls):
        cls.registry = subprocess.Popen([IMAGES, "serve-registry", os.path.join(cls.tmp, "registry"), str(cls.port)],
                                        stdout=cls.registry_log, stderr=subprocess.STDOUT, start_new_session=True,
                                        preexec_fn=die_with_parent,
                                        env=dict(os.environ, KUBEDIST_CACHE=CACHE))
        deadline = time.monotonic() + 60
        while not cls.answers("/v2/"):
            if cls.registry.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the registry did not come up on {cls.addr}: {cls.read_registry_log()}")
            time.sleep(0.05)

    @classmethod
    def stop_registry(cls):
        if cls.registry.poll() is None:
            os.killpg(cls.registry.pid, signal.SIGTERM)
            try:
                cls.registry.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(cls.registry.pid, signal.SIGKILL)
                cls.registry.wait()

    @classmethod
    def read_registry_log(cls):
        with open(os.path.join(cls.tmp, "registry.log")) as f:
            return f.read()

    @classmethod
    def answers(cls, path):
        try:
            with urllib.request.urlopen(f"http://{cls.addr}{path}", timeout=2):
                return True
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    # The registry's HTTP API.
    def get(self, path, accept=None, head=False):
        req = urllib.request.Request(f"http://{self.addr}{path}", method="HEAD" if head else "GET",
                                     headers={"Accept": accept} if accept else {})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.headers, resp.read()

    def tags(self, name):
        return json.loads(self.get(f"/v2/{name}/tags/list")[1])["tags"]

    def manifest(self, image):
        name, tag = image.rsplit(":", 1)
        return json.loads(self.get(f"/v2/{name}/manifests/{tag}", ACCEPT)[1])

    def digest(self, name, tag):
        return self.get(f"/v2/{name}/manifests/{tag}", ACCEPT, head=True)[0]["Docker-Content-Digest"]

    def config(self, image):
        name = image.rsplit(":", 1)[0]
        return json.loads(self.get(f"/v2/{name}/blobs/{self.manifest(image)['config']['digest']}")[1])

    def layer_files(self, image, layer):
        """The paths in a layer (a tar, gzip-compressed as pushed), without a leading ./"""
        name = image.rsplit(":", 1)[0]
        blob = self.get(f"/v2/{name}/blobs/{layer['digest']}")[1]
        if blob[:2] == b"\x1f\x8b":
            blob = gzip.decompress(blob)
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            return sorted(m.name.removeprefix("./") for m in tar.getmembers() if m.name not in (".", "./"))

    def test_images_env_names_every_image_by_a_content_tag(self):
        self.assertEqual(sorted(self.images), sorted(PUSHED + ["KUBEDIST_EXAMPLE_TORCH2_IMAGE"]))
        version = subprocess.run(["sed", "-n", r"s/^project(kubedist VERSION \([0-9.]*\).*/\1/p",
                                  os.path.join(SOURCE, "CMakeLists.txt")], capture_output=True, text=True).stdout.strip()
        for var, image in self.images.items():
            name, tag = image.rsplit(":", 1)
            self.assertRegex(tag, rf"^{version}-[0-9a-f]{{12}}$", var)
            if var in PUSHED:
                self.assertIn(tag, self.tags(name), f"{image} is not in the registry")
        self.assertNotIn("example-torch2", self.first_push, "push VAR... pushed an image it was not given")

    def test_the_operator_image_runs_as_65532_with_the_operator_as_entrypoint(self):
        config = self.config(self.images["KUBEDIST_OPERATOR_IMAGE"])["config"]
        self.assertEqual(config["User"], NOBODY)
        self.assertEqual(config["Entrypoint"], ["/usr/local/bin/kubedist-operator"])

    def test_the_launcher_image_is_the_static_launcher_alone(self):
        image = self.images["KUBEDIST_LAUNCHER_IMAGE"]
        manifest = self.manifest(image)
        self.assertEqual(len(manifest["layers"]), 1, "FROM scratch with one COPY is one layer")
        files = self.layer_files(image, manifest["layers"][0])
        self.assertEqual(files, ["kubedist-launcher"])  # no bin/sh, no libc, nothing else
        config = self.config(image)
        self.assertEqual(config["config"]["User"], NOBODY)
        self.assertEqual(config["config"]["Entrypoint"], ["/kubedist-launcher"])
        self.assertEqual(len(config["rootfs"]["diff_ids"]), 1)

    def test_the_pause_image_is_kubernetes_pause_alone_also_under_its_own_version(self):
        image = self.images["KUBEDIST_PAUSE_IMAGE"]
        manifest = self.manifest(image)
        self.assertEqual(len(manifest["layers"]), 1)
        self.assertEqual(self.layer_files(image, manifest["layers"][0]), ["pause"])
        config = self.config(image)
        self.assertEqual(config["config"]["Entrypoint"], ["/pause"])
        pause_version = config["config"]["Labels"]["io.kubedist.pause-version"]
        self.assertRegex(pause_version, r"^\d+\.\d+(\.\d+)?$")
        name, tag = image.rsplit(":", 1)
        self.assertEqual(self.digest(name, pause_version), self.digest(name, tag))

    def test_example_cpu_latest_is_the_content_tagged_image(self):
        name, tag = self.images["KUBEDIST_EXAMPLE_CPU_IMAGE"].rsplit(":", 1)
        self.assertIn("latest", self.tags(name))
        self.assertEqual(self.digest(name, "latest"), self.digest(name, tag))
        config = self.config(f"{name}:{tag}")["config"]
        self.assertEqual(config["WorkingDir"], "/workspace")
        # Not root, so that it runs under Pod Security "restricted" (runAsNonRoot).
        self.assertEqual(config["User"], NOBODY)
        ctr = self.container("KUBEDIST_EXAMPLE_CPU_IMAGE")
        self.assertEqual(buildah("run", "--isolation", ISOLATION, ctr, "--", "id", "-u").stdout.strip(), "65532")

    def test_a_second_build_and_push_with_nothing_changed_skip_everything(self):
        again = images_sh("build", timeout=600)
        skipped = [line for line in again.splitlines() if line.endswith("up to date (skipped)")]
        self.assertEqual(len(skipped), 6, again)  # the Debian base and the five images
        self.assertNotIn("building", again)
        for image in self.images.values():
            self.assertIn(f"{image}: up to date (skipped)", again)
        pushed = images_sh("push", self.addr, *PUSHED, timeout=300)
        for var in PUSHED:
            self.assertIn(f"{self.addr}/{self.images[var]}: present (skipped)", pushed)

    def test_serving_again_drops_the_tags_images_env_no_longer_names_and_their_blobs(self):
        """A long-lived machine's registry keeps one image of each name, not one more per change (the torch 2.15
        example's 3 GB each time its pins change): serve-registry first removes our content tags that images.env
        does not name, a latest that names none of those kept, and the blobs only they held."""
        tags = os.path.join(self.tmp, "registry/storage/docker/registry/v2/repositories/kubedist/pause/_manifests/tags")
        current = self.images["KUBEDIST_PAUSE_IMAGE"].rsplit(":", 1)[1]
        layer = self.manifest(self.images["KUBEDIST_PAUSE_IMAGE"])["layers"][0]["digest"]
        self.stop_registry()
        try:
            shutil.copytree(os.path.join(tags, current), os.path.join(tags, "0.1.0-000000000000"))  # an earlier build's
            shutil.copytree(os.path.join(tags, current), os.path.join(tags, "latest"))
            with open(os.path.join(tags, "latest/current/link"), "w") as f:  # naming a manifest no kept tag names
                f.write("sha256:" + "0" * 64)
            # A stale image of its own: a tag whose manifest and blobs nothing else holds.
            stale = os.path.join(self.tmp, "registry/storage/docker/registry/v2/repositories/kubedist/stale")
            shutil.copytree(os.path.dirname(os.path.dirname(tags)), stale)
            shutil.rmtree(os.path.join(stale, "_manifests/tags", current))
            shutil.copytree(os.path.join(tags, current), os.path.join(stale, "_manifests/tags/0.1.0-111111111111"))
        finally:
            self.start_registry()
        self.assertEqual(sorted(os.listdir(tags)), sorted([current, self.config(self.images["KUBEDIST_PAUSE_IMAGE"])
                                                           ["config"]["Labels"]["io.kubedist.pause-version"]]))
        self.assertEqual(os.listdir(os.path.join(stale, "_manifests/tags")), [])
        self.get(f"/v2/kubedist/pause/blobs/{layer}", head=True)  # the kept image's layer is still served
        self.assertIn("superseded tags removed", self.read_registry_log())

    def test_the_operator_starts_in_its_image(self):
        ctr = self.container("KUBEDIST_OPERATOR_IMAGE")
        r = buildah("run", "--isolation", ISOLATION, ctr, "--", "/usr/local/bin/kubedist-operator", "--help")
        self.assertIn("usage: kubedist-operator", r.stdout)
        self.assertEqual(buildah("run", "--isolation", ISOLATION, ctr, "--", "id", "-u").stdout.strip(), "65532")

    def container(self, var):
        ctr = buildah("from", "--pull=never", f"localhost/{self.images[var]}").stdout.strip()
        self.addCleanup(buildah, "rm", ctr)
        return ctr

    def install_launcher(self, name):
        """What the operator's init container does, in the launcher image: into a fresh emptyDir-like directory."""
        out = os.path.join(self.tmp, name)
        os.makedirs(out)
        os.chmod(out, 0o777)
        r = buildah("run", "--isolation", ISOLATION, "--volume", f"{out}:/kubedist/bin",
                    self.container("KUBEDIST_LAUNCHER_IMAGE"), "--", "/kubedist-launcher", "--install", "/kubedist/bin")
        self.assertEqual(r.stdout.strip(), "kubedist-launcher: installed /kubedist/bin/kubedist-launcher")
        return out

    def test_the_launcher_installs_itself_from_its_image_which_has_no_shell(self):
        installed = os.path.join(self.install_launcher("bin"), "kubedist-launcher")
        self.assertEqual(os.stat(installed).st_uid, 65532)
        help_text = subprocess.run([installed, "--help"], capture_output=True, text=True, timeout=60).stdout
        self.assertIn("usage: kubedist-launcher", help_text)
        shell = buildah("run", "--isolation", ISOLATION, self.container("KUBEDIST_LAUNCHER_IMAGE"), "--",
                        "/bin/sh", "-c", "true", check=False)
        self.assertNotEqual(shell.returncode, 0, "the launcher image has a shell")

    def test_the_example_trains_in_its_image_under_the_installed_launcher(self):
        """As in a pod: the launcher from the launcher image, mounted at /kubedist/bin, runs the trainer image's
        command (one node of 2 workers here, gloo on 127.0.0.1)."""
        bin_dir = self.install_launcher("example-bin")
        r = buildah("run", "--isolation", ISOLATION, "--volume", f"{bin_dir}:/kubedist/bin:ro",
                    *TRAIN_ENV, self.container("KUBEDIST_EXAMPLE_CPU_IMAGE"), "--",
                    "/kubedist/bin/kubedist-launcher", "--standalone", "--nproc-per-node=2", "--no-python", "--",
                    "python3", "/workspace/train.py", "--epochs", "2")
        self.assertEqual(sorted(re.findall(r"^start: RANK=(\d) .* WORLD_SIZE=2 ", r.stdout, re.M)), ["0", "1"], r.stdout)
        self.assertRegex(r.stdout, r"(?m)^training finished: 2 epochs, .*world size 2, .*torch 1\.13\.")

    def test_the_torch2_example_has_the_pinned_torch_and_libraries_first_on_path(self):
        """kubedist/example-torch2: the same Dockerfile with PIP_TORCH, the pins of torch2-requirements.txt; its
        python3 and torchrun are the virtual environment's, it runs as 65532, and the example trains on torch 2.15
        under the installed launcher, whose --local-rank-style=auto reads the image's torch."""
        with open(TORCH2_REQUIREMENTS) as f:
            pins = dict(line.split("#")[0].strip().split("==") for line in f if line.split("#")[0].strip())
        ctr = self.container("KUBEDIST_EXAMPLE_TORCH2_IMAGE")
        r = buildah("run", "--isolation", ISOLATION, ctr, "--", "python3", "-c",
                    "import importlib.metadata as m, shutil, torch.distributed as d; "
                    f"print(*[m.version(p) for p in {sorted(pins)!r}], d.is_gloo_available(), shutil.which('torchrun'))")
        self.assertEqual(r.stdout.split(), [pins[p] for p in sorted(pins)] + ["True", "/opt/torch/bin/torchrun"])
        self.assertEqual(buildah("run", "--isolation", ISOLATION, ctr, "--", "id", "-u").stdout.strip(), "65532")
        bin_dir = self.install_launcher("torch2-bin")
        r = buildah("run", "--isolation", ISOLATION, "--volume", f"{bin_dir}:/kubedist/bin:ro",
                    *TRAIN_ENV, ctr, "--",
                    "/kubedist/bin/kubedist-launcher", "--standalone", "--nproc-per-node=2", "--",
                    "/workspace/train.py", "--epochs", "2")
        self.assertEqual(sorted(re.findall(r"^start: RANK=(\d) .* WORLD_SIZE=2 ", r.stdout, re.M)), ["0", "1"],
                         r.stdout + r.stderr)
        self.assertRegex(r.stdout, rf"(?m)^training finished: 2 epochs, .*world size 2, .*torch {pins['torch']}$")


if __name__ == "__main__":
    unittest.main()
