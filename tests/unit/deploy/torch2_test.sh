#!/usr/bin/env bash
# deploy/local/torch2.sh without installing anything: where the torch 2.x environment lives, that a ready one (its
# stamp matching the pins) is left as it is, and that a wrong argument is one usage line.
set -euo pipefail
src=${KUBEDIST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
pass() { printf 'ok: %s\n' "$*"; }
script=$src/deploy/local/torch2.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

torch=$(sed -n 's/^torch==//p' "$src/deploy/local/torch2-requirements.txt")
[ -n "$torch" ] || fail "torch2-requirements.txt pins no torch"
got=$(HOME=$work XDG_CACHE_HOME='' KUBEDIST_TORCH2_VENV='' "$script" python)
[ "$got" = "$work/.cache/kubedist/torch-$torch/bin/python" ] || fail "default place: $got"
got=$(KUBEDIST_TORCH2_VENV=$work/elsewhere "$script" python)
[ "$got" = "$work/elsewhere/bin/python" ] || fail "KUBEDIST_TORCH2_VENV: $got"
pass "the environment is ~/.cache/kubedist/torch-$torch unless KUBEDIST_TORCH2_VENV names another place"

# A ready environment: an interpreter and the stamp of the current pins. Nothing may run pip (the fake
# interpreter records any call).
mkdir -p "$work/ready/bin"
printf '#!/bin/sh\necho "$*" >>%s/calls\n' "$work" >"$work/ready/bin/python"
chmod +x "$work/ready/bin/python"
# The stamp as torch2.sh writes it: the pins and its recipe's line.
recipe=$(sed -n 's/^recipe="\(.*\)"$/\1/p' "$src/deploy/local/torch2.sh")
[ -n "$recipe" ] || fail "torch2.sh names no recipe=\"...\" line"
{ cat "$src/deploy/local/torch2-requirements.txt"; echo "$recipe"; } | sha256sum | cut -d' ' -f1 >"$work/ready/.kubedist-requirements"
out=$(KUBEDIST_TORCH2_VENV=$work/ready "$script" 2>&1)
[ -z "$out" ] && [ ! -e "$work/calls" ] || fail "a ready environment was touched: '$out' $(cat "$work/calls" 2>/dev/null)"
pass "a ready environment whose stamp matches the pins is left as it is, silently"

# Pins changed since: installed again (here the fake interpreter takes the pip call and the check).
echo stale >"$work/ready/.kubedist-requirements"
KUBEDIST_TORCH2_VENV=$work/ready "$script" 2>/dev/null || true
grep -q -- "-m pip install --disable-pip-version-check --no-cache-dir -q -r $src/deploy/local/torch2-requirements.txt" "$work/calls" ||
  fail "changed pins did not reinstall: $(cat "$work/calls" 2>/dev/null)"
pass "changed pins install the requirements again"

set +e
out=$("$script" bogus 2>&1)
code=$?
set -e
[ "$code" = 2 ] && [ "$out" = "usage: torch2.sh [python]" ] || fail "a wrong argument: exit $code, '$out'"
pass "a wrong argument is one usage line and exit 2"
