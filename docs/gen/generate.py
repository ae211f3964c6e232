#!/usr/bin/python3
"""Writes the generated parts of the docs from their sources, so that the docs cannot drift from the code.

A generated part sits between two markers in a Markdown file:
    <!-- BEGIN GENERATED NAME ... -->
    ...
    <!-- END GENERATED NAME -->
and is rewritten whole. The parts and their sources:
    crd-columns, crd-spec, crd-status   crd/kubedist.io_trainingjobs.yaml (types, defaults, validation, descriptions)
    values                              helm/kubedist/values.schema.json and helm/kubedist/values.yaml
    launcher-help                       `kubedist-launcher --help` (only with --launcher)
    operator-help                       `kubedist-operator --help` (only with --operator)

usage: generate.py [--check] [--launcher PATH] [--operator PATH]
    Without --check it rewrites the files; with --check it writes nothing and exits 1, printing a diff, when a
    generated part differs from what its source says now. Either way it exits 1 when a source lacks what the docs
    need: a CRD field or a chart value without a description, or a value in values.yaml the schema does not know.
"""
import difflib
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRD = os.path.join(ROOT, "crd", "kubedist.io_trainingjobs.yaml")
VALUES_SCHEMA = os.path.join(ROOT, "helm", "kubedist", "values.schema.json")
VALUES = os.path.join(ROOT, "helm", "kubedist", "values.yaml")
REFERENCE = os.path.join(ROOT, "docs", "reference", "trainingjob.md")
INSTALL = os.path.join(ROOT, "docs", "install.md")

problems = []


def cell(text):
    """Text fit for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(value):
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)  # YAML's spelling
    return "`" + text.replace("`", "'") + "`"


# --- the CRD ---------------------------------------------------------------------------------------------------

def crd_type(s):
    if s.get("x-kubernetes-int-or-string"):
        return "integer or string"
    t = s.get("type", "")
    if t == "array":
        return "[]" + crd_type(s.get("items", {}))
    if t == "object" and isinstance(s.get("additionalProperties"), dict):
        return "map[string]" + crd_type(s["additionalProperties"])
    if t == "integer" and s.get("format"):
        return f"integer ({s['format']})"
    if t == "string" and s.get("format"):
        return f"string ({s['format']})"
    return t or "any"


def crd_validation(s, required):
    out = []
    if required:
        out.append("required")
    if "enum" in s:
        out.append("one of " + ", ".join(code(v) for v in s["enum"]))
    lo, hi = s.get("minimum"), s.get("maximum")
    if lo is not None and hi is not None:
        out.append(f"{lo} to {hi}")
    elif lo is not None:
        out.append(f">= {lo}")
    elif hi is not None:
        out.append(f"<= {hi}")
    for key, what in (("minLength", "length >= {}"), ("maxLength", "length <= {}"), ("minItems", "items >= {}"),
                      ("maxItems", "items <= {}"), ("pattern", "matches `{}`")):
        if key in s:
            out.append(what.format(s[key]))
    if s.get("x-kubernetes-list-type") == "map":
        out.append("a list keyed by " + ", ".join(code(k) for k in s.get("x-kubernetes-list-map-keys", [])))
    for rule in s.get("x-kubernetes-validations", []):
        out.append("rule: " + rule.get("message", rule["rule"]))
    if s.get("x-kubernetes-preserve-unknown-fields"):
        out.append("further fields kept as given")
    return "; ".join(out)


def crd_rows(path, s, required, rows):
    """One row per field below path, depth first in the schema's order."""
    for name, sub in s.get("properties", {}).items():
        p = f"{path}.{name}"
        if not sub.get("description"):
            problems.append(f"{os.path.relpath(CRD, ROOT)}: {p} has no description")
        default = code(json.dumps(sub["default"]) if not isinstance(sub["default"], str) else sub["default"]) \
            if "default" in sub else ""
        rows.append((p, crd_type(sub), default, crd_validation(sub, name in required), sub.get("description", "")))
        crd_rows(p, sub, set(sub.get("required", [])), rows)
        items = sub.get("items")
        if isinstance(items, dict) and items.get("properties"):
            crd_rows(p + "[]", items, set(items.get("required", [])), rows)


def crd_table(root_name, s):
    rows = []
    crd_rows(root_name, s, set(s.get("required", [])), rows)
    lines = ["| field | type | default | validation | meaning |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {code(p)} | {cell(t)} | {d} | {cell(v)} | {cell(m)} |" for p, t, d, v, m in rows]
    rules = s.get("x-kubernetes-validations", [])
    if rules:
        lines += ["", f"Rules on `{root_name}` as a whole (the API server refuses a job that breaks one):", ""]
        lines += [f"- {rule.get('message', '')} (`{rule['rule']}`)" for rule in rules]
    return "\n".join(lines)


def crd_parts():
    with open(CRD) as f:
        crd = yaml.safe_load(f)
    version = crd["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]
    columns = ["| column | from | meaning |", "| --- | --- | --- |"]
    for c in version.get("additionalPrinterColumns", []):
        columns.append(f"| {c['name'].upper()} | `{c['jsonPath']}` | {cell(c.get('description', ''))} |")
    return {
        "crd-columns": "\n".join(columns),
        "crd-spec": crd_table("spec", schema["properties"]["spec"]),
        "crd-status": crd_table("status", schema["properties"]["status"]),
    }


# --- the chart's values ---------------------------------------------------------------------------------------

def value_paths(values, schema, prefix=""):
    """The paths of values.yaml, down to the values the schema describes as a whole (resources, nodeSelector)."""
    for k, v in values.items():
        p = prefix + k
        yield p
        sub = schema.get("properties", {}).get(k, {})
        if isinstance(v, dict) and sub.get("properties"):
            yield from value_paths(v, sub, p + ".")


def lookup(values, path):
    v = values
    for part in path.split("."):
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    return v


def schema_rows(s, values, prefix, rows):
    for name, sub in s.get("properties", {}).items():
        p = prefix + name
        if not sub.get("description"):
            problems.append(f"{os.path.relpath(VALUES_SCHEMA, ROOT)}: {p} has no description")
        if sub.get("properties"):
            schema_rows(sub, values, p + ".", rows)
            continue
        checks = []
        if "enum" in sub:
            checks.append("one of " + ", ".join(code(v) for v in sub["enum"]))
        if "minimum" in sub and "maximum" in sub:
            checks.append(f"{sub['minimum']} to {sub['maximum']}")
        elif "minimum" in sub:
            checks.append(f">= {sub['minimum']}")
        if "minLength" in sub:
            checks.append("not empty")
        if "pattern" in sub:
            checks.append(f"matches `{sub['pattern']}`")
        default = lookup(values, p)
        shown = code(json.dumps(default, separators=(", ", ": "))) if not isinstance(default, str) else \
            (code(default) if default else '`""`')
        kinds = {bool: "boolean", str: "string", int: "integer", float: "number"}
        typ = sub.get("type") or " or ".join(dict.fromkeys(kinds.get(type(v), "any") for v in sub.get("enum", [])))
        rows.append(f"| `{p}` | {typ} | {shown} | {cell('; '.join(checks))} | "
                    f"{cell(sub.get('description', ''))} |")


def schema_paths(s, prefix=""):
    for name, sub in s.get("properties", {}).items():
        yield prefix + name
        yield from schema_paths(sub, prefix + name + ".")


def values_part():
    with open(VALUES_SCHEMA) as f:
        schema = json.load(f)
    with open(VALUES) as f:
        values = yaml.safe_load(f)
    known = set(schema_paths(schema))
    for p in value_paths(values, schema):
        if p not in known:
            problems.append(f"helm/kubedist/values.yaml: {p} is not in values.schema.json (give it a type and a "
                            "description there)")
    for p in known:
        if lookup(values, p) is None:
            problems.append(f"helm/kubedist/values.schema.json: {p} has no default in values.yaml")
    rows = ["| value | type | default | allowed | meaning |", "| --- | --- | --- | --- | --- |"]
    schema_rows(schema, values, "", rows)
    return "\n".join(rows)


# --- the programs' --help ---------------------------------------------------------------------------------------

def help_part(binary):
    p = subprocess.run([binary, "--help"], capture_output=True, text=True)
    text = (p.stdout or p.stderr).rstrip()
    if not text:
        problems.append(f"{binary} --help printed nothing (exit {p.returncode})")
    return "```\n" + text + "\n```"


# --- writing ----------------------------------------------------------------------------------------------------

MARK = re.compile(r"(<!-- BEGIN GENERATED ([a-z-]+)[^>]*-->\n)(.*?)(<!-- END GENERATED \2 -->)", re.S)


def fill(path, parts, seen):
    with open(path) as f:
        old = f.read()

    def sub(m):
        name = m.group(2)
        if name not in parts:
            return m.group(0)
        seen.add(name)
        return m.group(1) + parts[name] + "\n" + m.group(4)

    return old, MARK.sub(sub, old)


def main(argv):
    check = "--check" in argv
    parts = {}
    parts.update(crd_parts())
    parts["values"] = values_part()
    for flag, name in (("--launcher", "launcher-help"), ("--operator", "operator-help")):
        if flag in argv:
            i = argv.index(flag)
            if i + 1 >= len(argv):
                sys.exit(f"generate.py: {flag} needs the program's path")
            parts[name] = help_part(argv[i + 1])
    seen, drift = set(), False
    for path in (REFERENCE, INSTALL):
        if not os.path.exists(path):
            continue
        old, new = fill(path, parts, seen)
        if old == new:
            continue
        if check:
            drift = True
            rel = os.path.relpath(path, ROOT)
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       "a/" + rel, "b/" + rel))
        else:
            with open(path, "w") as f:
                f.write(new)
            print(f"generate.py: wrote {os.path.relpath(path, ROOT)}")
    for name in sorted(set(parts) - seen):
        problems.append(f"no file holds the generated part {name} (<!-- BEGIN GENERATED {name} -->)")
    for p in problems:
        print("generate.py: " + p)
    if drift:
        print("generate.py: the docs differ from their sources; run docs/gen/generate.py "
              "--launcher BUILD/launcher-sidecar/kubedist-launcher --operator BUILD/operator/kubedist-operator")
    return 1 if drift or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
