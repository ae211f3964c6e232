#!/usr/bin/python3
"""support_table.py: the latest record of each (release, scenario) decides its row, newest release first; a failed
scenario is named; a gang scenario on a release without the Workload API says so; --update replaces only what lies
between the markers; no results or no markers is an error."""
import json
import os
import subprocess
import sys
import tempfile

SRC = os.environ.get("KUBEDIST_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
SCRIPT = os.path.join(SRC, "tests", "matrix", "support_table.py")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def rec(version, scenario, passed=True, gang=None, server=None, finished="2026-12-04T10:00:00Z", seconds=60):
    return {"version": version, "server": server or version, "scenario": scenario, "passed": passed,
            "seconds": seconds, "gang_api": gang, "finished": finished, "log": "x.log"}


def run(records, *args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "results.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        p = subprocess.run([sys.executable, SCRIPT, path, *args], capture_output=True, text=True)
        return p


records = [
    rec("v1.34.4", "succeed", passed=False),
    rec("v1.34.4", "gang", gang="none"),
    rec("v1.37.2", "succeed"),
    rec("v1.37.2", "gang", gang="scheduling.k8s.io/v1beta1", finished="2026-12-05T09:00:00Z"),
    rec("v1.34.4", "succeed", passed=True, finished="2026-12-04T11:00:00Z"),  # the rerun counts
    rec("v1.36.3", "kueue", passed=False, server="v1.36.3"),
]
p = run(records)
rows = [line for line in p.stdout.splitlines() if line.startswith("| v")]
check(p.returncode == 0 and [r.split(" |")[0] for r in rows] == ["| v1.37.2", "| v1.36.3", "| v1.34.4"],
      f"one row per release, newest first: {rows}")
check("`scheduling.k8s.io/v1beta1`" in rows[0] and "pass (2 of 2), 2026-12-05, 2 min" in rows[0],
      f"1.37's row names the gang API, the count and the last day: {rows[0]}")
check("**fail**: kueue (0 of 1 passed)" in rows[1], f"a failed scenario is named: {rows[1]}")
check("pass (2 of 2)" in rows[2] and "a gang job fails saying why (no Workload API the operator knows)" in rows[2]
      and "| none |" in rows[2], f"the latest record wins, and a release without the Workload API says so: {rows[2]}")

p = run([rec("v1.35.4", "succeed", server="v1.36.3")])
check("v1.35.4 (server reported v1.36.3)" in p.stdout, "a server of another release than asked is shown")

with tempfile.TemporaryDirectory() as d:
    doc = os.path.join(d, "doc.md")
    with open(doc, "w") as f:
        f.write("# title\nbefore\n<!-- support-table:begin -->\nold table\n<!-- support-table:end -->\nafter\n")
    p = run(records, "--update", doc)
    with open(doc) as f:
        text = f.read()
    check(p.returncode == 0 and text.startswith("# title\nbefore\n<!-- support-table:begin -->\n| Kubernetes |")
          and "old table" not in text and text.endswith("<!-- support-table:end -->\nafter\n"),
          "--update replaces only the table between the markers")
    with open(doc, "w") as f:
        f.write("no markers\n")
    p = run(records, "--update", doc)
    check(p.returncode != 0 and "lacks the markers" in p.stderr, f"a file without markers is refused: {p.stderr}")

p = run([])
check(p.returncode != 0 and "has no results" in p.stderr, f"no results is an error: {p.stderr.strip()}")
p = run(records, "--bogus")
check(p.returncode == 2 and "usage" in p.stderr, "a wrong argument prints the usage")
sys.exit(1 if failures else 0)
