#!/usr/bin/env bash
# deploy/local/templates: render_template fills in values literally and refuses, naming the placeholder, a template
# it cannot fill; every template the scripts name exists and every template is used.
set -euo pipefail
src=${KUBEDIST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
pass() { printf 'ok: %s\n' "$*"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
template_dir=$work
# shellcheck source=../../../deploy/local/template.sh
. "$src/deploy/local/template.sh"

printf 'a: ${x}\nb: "${y}" ${x}\nc: $HOME $(date) ${not a placeholder}\n' >"$work/t.yaml"
got=$(render_template t.yaml x='1&2\1/${y}' y='$(id) `id`')
want=$'a: 1&2\\1/${y}\nb: "$(id) `id`" 1&2\\1/${y}\nc: $HOME $(date) ${not a placeholder}'
[ "$got" = "$want" ] || fail "values are not filled in literally: got '$got'"
pass "values are filled in literally, each placeholder wherever it occurs, and nothing else is expanded"

[ "$(render_template t.yaml x=1 y=2 unused=3 | head -1)" = "a: 1" ] || fail "an unused value was refused"
pass "a value the template does not use is ignored"

expect_error() {  # expect_error MESSAGE ARGS...: render_template ARGS fails, printing MESSAGE
  local want=$1 out
  shift
  if out=$(render_template "$@" 2>&1 >/dev/null); then fail "render_template $* succeeded"; fi
  [[ $out == *"$want"* ]] || fail "render_template $*: said '$out', expected '$want'"
}
expect_error 'render_template: t.yaml: no value for ${y}' t.yaml x=1
pass "a placeholder without a value is an error naming it"
expect_error 'render_template: no template' nope.yaml x=1
pass "an unknown template is an error"
expect_error '"x" is not NAME=VALUE' t.yaml x y=1
expect_error '"1x=2" is not NAME=VALUE' t.yaml 1x=2 x=1 y=1
pass "an argument that is not NAME=VALUE is an error"

# The scripts and the templates folder agree: each name used exists, each file is used.
template_dir=$src/deploy/local/templates
used=$(grep -ho '^[[:space:]]*render_template [A-Za-z0-9_.-]*' "$src"/deploy/local/*.sh | awk '{print $2}' | sort -u)
present=$(cd "$template_dir" && ls | sort)
[ -n "$used" ] || fail "no render_template call found in deploy/local"
[ "$used" = "$present" ] || fail "templates used ($(echo $used)) and present ($(echo $present)) differ"
pass "every template the scripts render exists, and every template is rendered"
