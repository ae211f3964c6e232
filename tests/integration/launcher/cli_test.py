"""The launcher's command line as users meet it: legacy torch.distributed.launch scripts, the interpreter, the
environment it reads, log directories. Real processes, real /usr/bin/python3 (no torch import: fast)."""
import os
import textwrap
import unittest

from harness import LauncherTest

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

    def test_dash_style_is_the_default_and_runs_a_torch_2_script(self):
        for extra in ([], ["--local-rank-style=dash"]):
            l = self.launch(["--legacy-launch", *extra, "--nproc-per-node=2", "--tee=1",
                             self.legacy_script("--local-rank"), "y"])
            self.assertEqual(l.wait(), 0, l.stderr())
            self.assertEqual(sorted(l.stdout().splitlines()),
                             ["[rank 0]: local rank 0 rest y", "[rank 1]: local rank 1 rest y"])

    def test_the_style_comes_from_pet_env_too(self):
        l = self.launch([self.legacy_script("--local_rank")],
                        env={"PET_LEGACY_LAUNCH": "1", "PET_LOCAL_RANK_STYLE": "underscore"})
        self.assertEqual(l.wait(), 0, l.stderr())
        self.assertEqual(l.stdout(), "local rank 0 rest\n")

    def test_a_torch_1_script_rejects_the_default_dash_spelling(self):
        # Why the flag exists: argparse knows only the spelling the script declared.
        l = self.launch(["--legacy-launch", self.legacy_script("--local_rank")])
        self.assertEqual(l.wait(), 2)
        self.assertIn("old_style.py: error: the following arguments are required: --local_rank", l.stderr())

    def test_bad_local_rank_styles_are_one_line_errors(self):
        cases = [(["--legacy-launch", "--local-rank-style=snake"], {}, "--local-rank-style: expected dash"),
                 (["--legacy-launch", "--local-rank-style"], {}, "--local-rank-style needs a value"),
                 (["--legacy-launch"], {"PET_LOCAL_RANK_STYLE": "--local_rank"}, "PET_LOCAL_RANK_STYLE: expected"),
                 (["--local-rank-style=underscore"], {}, "only applies with --legacy-launch")]
        for args, env, fragment in cases:
            tail = [] if args[-1] == "--local-rank-style" else [self.legacy_script("--local_rank")]
            l = self.launch(args + tail, env=env)
            self.assertEqual(l.wait(), 2, args)
            self.assertEqual(l.stderr().count("\n"), 1, l.stderr())
            self.assertTrue(l.stderr().startswith("kubedist-launcher: "), l.stderr())
            self.assertIn(fragment, l.stderr())
            self.assertEqual(l.stdout(), "")


if __name__ == "__main__":
    unittest.main()
