#!/usr/bin/env bash
# cluster.sh's node faults (node-power-loss, node-restart, node-link) refuse, with one line naming the fix, a
# cluster without real nodes, a node number it does not have and a link state that is neither up nor down, before
# touching anything.
set -euo pipefail
src=${KUBEDIST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
pass() { printf 'ok: %s\n' "$*"; }

cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
mkdir -p "$cache/clusters/two"
echo 2 >"$cache/clusters/two/real-nodes"  # what up writes for a cluster of two real nodes

expect() {  # expect MESSAGE ARGS...: cluster.sh ARGS exits 1 saying MESSAGE
  local want=$1 out rc=0
  shift
  out=$(KUBEDIST_CACHE=$cache "$src/deploy/local/cluster.sh" "$@" 2>&1) || rc=$?
  [ $rc -eq 1 ] || fail "cluster.sh $*: exit $rc, want 1 ($out)"
  [ "$out" = "$want" ] || fail "cluster.sh $*: said '$out', want '$want'"
  pass "cluster.sh $* -> $want"
}
expect "cluster.sh: node-power-loss: cluster kwok-only has no real nodes" node-power-loss kwok-only 0
expect "cluster.sh: node-restart needs a node number from 0 to 1, got '2'" node-restart two 2
expect "cluster.sh: node-power-loss needs a node number from 0 to 1, got ''" node-power-loss two
expect "cluster.sh: node-link needs a node number from 0 to 1, got 'w1'" node-link two w1 down
expect "cluster.sh: node-link needs up or down, got 'sideways'" node-link two 1 sideways
[ ! -e "$cache/clusters/kwok-only" ] || fail "a refused command left $cache/clusters/kwok-only behind"
pass "nothing is created by a refused command"
