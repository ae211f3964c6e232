#!/usr/bin/python3
"""The CRD loads on the oldest Kubernetes release the chart accepts (helm/kubedist/Chart.yaml's kubeVersion).

The API server compiles a new CRD's CEL rules in the environment of its compatibility version, one minor release
below its own (k8s.io/apiserver's cel/environment, DefaultCompatibilityVersion): on 1.34 a rule may use a library
introduced in 1.33 at the latest. Each CEL function and each x-kubernetes-* extension the CRD uses is looked up in
the tables below (the release it became usable in by default, from k8s.io/apiserver's cel/environment/base.go and
the apiextensions CHANGELOG entries); one missing from the tables fails the test until someone adds it with its
release. The version matrix (ctest -L matrix) loads the CRD into the oldest release for real (matrix.*.crd).
"""
import os
import re
import sys

import yaml

SRC = os.environ.get("KUBEDIST_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))

# CEL: function (or namespace.function, or a syntax feature) -> the minor release of Kubernetes 1.x whose base CEL
# environment introduced it (IntroducedVersion).
CEL = {}
for name in ("has size exists all exists_one map filter int uint double string bytes bool type dyn duration timestamp "
             "matches contains startsWith endsWith "  # CEL's own, 1.0 in Kubernetes' environment
             "url isURL getScheme getHost getHostname getPort getEscapedPath getQuery "  # library.URLs
             "find findAll "  # library.Regex
             "isSorted sum min max indexOf lastIndexOf "  # library.Lists v0
             "charAt lowerAscii upperAscii replace split substring trim join").split():  # ext.Strings v0
    CEL[name] = 0
CEL.update({n: 28 for n in "optional.of optional.none optional.ofNonZeroValue hasValue value orValue or .? [? "
            "quantity isQuantity sign isGreaterThan isLessThan compareTo add sub asInteger asApproximateFloat "
            "isInteger".split()})
CEL.update({n: 29 for n in "format quote strings.quote sets.contains sets.equivalent sets.intersects".split()})
CEL.update({n: 30 for n in "ip isIP cidr isCIDR family isUnspecified isLoopback isLinkLocalMulticast "
            "isLinkLocalUnicast isGlobalUnicast containsIP containsCIDR masked prefixLength".split()})
CEL.update({n: 31 for n in "format.named format.dns1123Label format.dns1123Subdomain format.qualifiedName "
            "format.labelValue format.uri format.uuid format.byte format.date format.datetime "
            "validate".split()})
CEL.update({n: 32 for n in "two-variable-comprehension transformList transformMap transformMapEntry".split()})
CEL.update({n: 33 for n in "semver isSemver major minor patch".split()})
CEL.update({n: 34 for n in "distinct flatten lists.range reverse slice sort sortBy".split()})

# The CRD schema's extensions and x-kubernetes-validations' fields -> the release they work in by default.
SCHEMA = {
    "x-kubernetes-int-or-string": 16, "x-kubernetes-preserve-unknown-fields": 16, "x-kubernetes-embedded-resource": 16,
    "x-kubernetes-list-type": 16, "x-kubernetes-list-map-keys": 16, "x-kubernetes-map-type": 17,
    "x-kubernetes-validations": 25,  # beta and on by default in 1.25, GA in 1.29
    "rule": 25, "message": 25, "messageExpression": 27, "reason": 28, "fieldPath": 28, "optionalOldSelf": 30,
}
NAMESPACES = ("optional", "strings", "sets", "format", "lists", "math", "base64")

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def cel_features(rule):
    """What a CEL rule uses: the functions it calls and the newer syntax it relies on."""
    found = set()
    for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\(", rule):
        parts = m.group(1).split(".")
        found.add(".".join(parts[-2:]) if len(parts) >= 2 and parts[-2] in NAMESPACES else parts[-1])
    if re.search(r"\.(all|exists|exists_one|existsOne)\(\s*\w+\s*,\s*\w+\s*,", rule):
        found.add("two-variable-comprehension")
    for syntax in (".?", "[?"):
        if syntax in rule:
            found.add(syntax)
    return found


def walk(node, path, visit):
    if isinstance(node, dict):
        for k, v in node.items():
            visit(path, k, v)
            walk(v, path + [k], visit)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk(v, path + [str(i)], visit)


def usage(crd):
    """(extension or rule field, where) and (CEL feature, rule) pairs of every version's schema."""
    schema_uses, cel_uses = [], []

    def visit(path, key, value):
        if key.startswith("x-kubernetes-"):
            schema_uses.append((key, "/".join(path)))
        if key == "x-kubernetes-validations":
            for v in value:
                schema_uses.extend((field, "/".join(path) + " " + key) for field in v)
                for expr in (v.get("rule", ""), v.get("messageExpression", "")):
                    cel_uses.extend((f, expr) for f in cel_features(expr))

    for version in crd["spec"]["versions"]:
        walk(version.get("schema", {}), [version["name"]], visit)
    return schema_uses, cel_uses


def oldest_minor():
    with open(os.path.join(SRC, "helm", "kubedist", "Chart.yaml")) as f:
        kube_version = yaml.safe_load(f)["kubeVersion"]
    m = re.fullmatch(r">=\s*1\.(\d+)\.0(-0)?", kube_version)
    if not m:
        sys.exit(f"FAIL: Chart.yaml's kubeVersion '{kube_version}' is not '>=1.N.0-0'")
    return int(m.group(1))


def main():
    oldest = oldest_minor()
    with open(os.path.join(SRC, "crd", "kubedist.io_trainingjobs.yaml")) as f:
        crd = yaml.safe_load(f)
    schema_uses, cel_uses = usage(crd)
    check(cel_uses, "the CRD has CEL rules to check")

    for key in sorted({k for k, _ in schema_uses}):
        where = sorted({w for k, w in schema_uses if k == key})
        since = SCHEMA.get(key)
        check(since is not None and since <= oldest,
              f"{key} (used {len(where)} times) works on 1.{oldest} (since 1.{since})" if since is not None else
              f"{key} (at {where[0]}) is not in this test's SCHEMA table: add it with the release it arrived in")
    # New rules compile in the environment of the release before the server's own.
    for feature in sorted({f for f, _ in cel_uses}):
        rule = min(r for f, r in cel_uses if f == feature)
        since = CEL.get(feature)
        check(since is not None and since <= oldest - 1,
              f"CEL {feature} is in 1.{oldest}'s environment for new rules (since 1.{since})" if since is not None else
              f"CEL {feature} (in: {rule}) is not in this test's CEL table: add it with the release that introduced it")

    # The test itself tells a rule that is too new from one that is not.
    check(cel_features("self.all(k, v, v > 0)") == {"all", "two-variable-comprehension"},
          "a two-variable comprehension is recognised")
    check(cel_features("isCIDR(self) && sets.contains(a, b) && self.?x.orValue(1) > 0") >=
          {"isCIDR", "sets.contains", ".?", "orValue"}, "namespaced functions and optional syntax are recognised")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
