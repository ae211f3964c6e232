#!/usr/bin/env python3
"""The Kubernetes support table, from the version matrix's last run (record.py's results.jsonl).

usage: support_table.py RESULTS.jsonl [--update FILE]

Prints a Markdown table: each release (newest first), what was tested on it, the gang scheduling API the operator
used there, and the result, from the latest record of each (release, scenario). With --update, the table also
replaces what lies between the markers <!-- support-table:begin --> and <!-- support-table:end --> in FILE (the
docs page; see docs/kubernetes-versions.md). Exits non-zero when there is nothing to tabulate or a marker is missing.
"""
import json
import re
import sys

# What each scenario shows, in the table's words, in the order they are listed.
SCENARIOS = {
    "crd": "CRD (schema, CEL rules, scale subresource)",
    "succeed": "a job to Running and Succeeded",
    "elastic": "elastic shrink and grow",
    "launcher": "in-place restart counts",
    "kueue": "Kueue admission",
    "gang": "gang scheduling",
}
BEGIN = "<!-- support-table:begin -->"
END = "<!-- support-table:end -->"


def version_key(v):
    return tuple(int(x) for x in re.findall(r"\d+", v))


def latest(records):
    last = {}
    for r in records:
        last[(r["version"], r["scenario"])] = r
    return last


def table(records):
    last = latest(records)
    versions = sorted({v for v, _ in last}, key=version_key, reverse=True)
    lines = ["| Kubernetes | tested | gang API used | result |", "| --- | --- | --- | --- |"]
    for v in versions:
        runs = [last[(v, s)] for s in SCENARIOS if (v, s) in last]
        runs += [r for (rv, s), r in last.items() if rv == v and s not in SCENARIOS]
        tested = []
        for r in runs:
            what = SCENARIOS.get(r["scenario"], r["scenario"])
            if r["scenario"] == "gang" and r.get("gang_api") == "none":
                what = "a gang job fails saying why (no Workload API the operator knows)"
            tested.append(what)
        gang = next((r.get("gang_api") for r in runs if r["scenario"] == "gang"), None) or "not run"
        failed = [r["scenario"] for r in runs if not r["passed"]]
        day = max(r["finished"] for r in runs)[:10]
        minutes = sum(r["seconds"] for r in runs) / 60
        result = (f"pass ({len(runs)} of {len(runs)})" if not failed else
                  f"**fail**: {', '.join(failed)} ({len(runs) - len(failed)} of {len(runs)} passed)")
        server = {r["server"] for r in runs}
        release = v if server == {v} else f"{v} (server reported {', '.join(sorted(server))})"
        lines.append(f"| {release} | {', '.join(tested)} | {'`' + gang + '`' if '/' in gang else gang} | "
                     f"{result}, {day}, {minutes:.0f} min |")
    return "\n".join(lines)


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--update"):
        print("usage: support_table.py RESULTS.jsonl [--update FILE]", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print(f"support_table.py: cannot read {argv[1]}: {e}", file=sys.stderr)
        return 1
    if not records:
        print(f"support_table.py: {argv[1]} has no results (run ctest -L matrix first)", file=sys.stderr)
        return 1
    text = table(records)
    print(text)
    if len(argv) == 4:
        with open(argv[3]) as f:
            doc = f.read()
        if BEGIN not in doc or END not in doc or doc.index(BEGIN) > doc.index(END):
            print(f"support_table.py: {argv[3]} lacks the markers {BEGIN} ... {END}", file=sys.stderr)
            return 1
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(argv[3], "w") as f:
            f.write(f"{head}{BEGIN}\n{text}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
