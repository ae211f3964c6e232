#!/usr/bin/env python3
"""Runs one scenario of the version matrix and records its outcome for the support table.

usage: record.py RESULTS.jsonl K8S_VERSION SCENARIO -- COMMAND [ARGS...]

COMMAND runs against the cluster KUBECONFIG names; its output passes through (ctest shows it) and is kept beside
RESULTS.jsonl as <version>/<scenario>.log. One JSON line is appended to RESULTS.jsonl: the release the matrix asked
for, the one the API server reports, the scenario, whether it passed, its duration, and the gang API the scenario
reports ("gang API: <group/version or none>", a line the gang scenario prints). The exit status is COMMAND's.
"""
import datetime
import json
import os
import re
import subprocess
import sys
import time


def server_version():
    out = subprocess.run(["kubectl", "version", "-o", "json"], capture_output=True, text=True)
    try:
        return json.loads(out.stdout)["serverVersion"]["gitVersion"]
    except (ValueError, KeyError):
        return "unreachable"


def main(argv):
    if len(argv) < 6 or argv[4] != "--":
        print("usage: record.py RESULTS.jsonl K8S_VERSION SCENARIO -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    results, version, scenario, command = argv[1], argv[2], argv[3], argv[5:]
    log_path = os.path.join(os.path.dirname(results), version, scenario + ".log")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    server = server_version()
    start = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        output = []
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            log.write(line)
            output.append(line)
        rc = proc.wait()
    gang = re.findall(r"gang API: (\S+)", "".join(output))
    record = {
        "version": version,
        "server": server,
        "scenario": scenario,
        "passed": rc == 0,
        "seconds": round(time.monotonic() - start, 1),
        "gang_api": gang[-1] if gang else None,
        "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "log": os.path.relpath(log_path, os.path.dirname(results)),
    }
    with open(results, "a") as f:
        f.write(json.dumps(record) + "\n")
    if server != version:
        print(f"record.py: the matrix asked for {version}, the API server reports {server}", file=sys.stderr)
        return rc or 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
