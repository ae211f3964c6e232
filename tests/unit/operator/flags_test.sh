#!/usr/bin/env bash
# kubedist-operator refuses bad flags and unusable configuration with one clear line and a non-zero exit,
# before touching any network. Usage: flags_test.sh OPERATOR_BINARY
set -uo pipefail
op=$1
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# expect RC PATTERN ARGS...: running the operator with ARGS exits RC and says PATTERN.
expect() {
  local rc=$1 pattern=$2 out got
  shift 2
  out=$(KUBECONFIG= HOME=/nonexistent KUBERNETES_SERVICE_HOST= timeout 10 "$op" "$@" 2>&1)
  got=$?
  [ "$got" -eq "$rc" ] || fail "$*: exit $got, want $rc ($out)"
  grep -qF -- "$pattern" <<<"$out" || fail "$*: output lacks '$pattern': $out"
  printf 'ok: %s -> exit %s, "%s"\n' "$*" "$rc" "$pattern"
}

expect 0 "usage: kubedist-operator" --help
expect 2 "unknown flag --bogus" --bogus
expect 2 "--workers must be an integer from 1 to 64, got \"0\"" --workers 0
expect 2 "--workers must be an integer from 1 to 64, got \"many\"" --workers=many
expect 2 "--workers needs a value" --workers
expect 2 "--log-level must be debug, info, warn or error, got \"loud\"" --log-level loud
expect 2 "--leader-elect must be true or false, got \"maybe\"" --leader-elect=maybe
expect 2 "--leader-election-lease-seconds must be an integer from 3 to 3600" --leader-election-lease-seconds 1
expect 2 "--launcher-image must not be empty" --launcher-image=
expect 2 "--launcher-metrics-port must be a port number from 0 (off) to 65535, got \"70000\"" --launcher-metrics-port 70000
expect 2 "--watch-nodes must be true or false, got \"often\"" --watch-nodes=often
expect 2 "--unschedulable-grace must be a whole number of seconds from 1s to 24h (e.g. 30s, 2m), got \"soon\"" --unschedulable-grace soon
expect 2 "--unschedulable-grace must be a whole number of seconds from 1s to 24h (e.g. 30s, 2m), got \"1500ms\"" --unschedulable-grace=1500ms
expect 2 "--node-lost-grace must be a whole number of seconds from 1s to 24h (e.g. 30s, 2m), got \"0s\"" --node-lost-grace=0s
expect 2 "--node-lost-grace needs a value" --node-lost-grace
expect 2 "--launcher-poll-interval must be 0 (off) or a duration from 100ms to 1h (e.g. 10s), got \"5h\"" --launcher-poll-interval=5h
expect 2 "--launcher-poll-interval must be 0 (off) or a duration from 100ms to 1h (e.g. 10s), got \"10ms\"" --launcher-poll-interval=10ms
expect 2 "--gang-scheduling must be per-job, all or off, got \"sometimes\"" --gang-scheduling sometimes
expect 2 "--avoid-node-after-failures must be an integer from 0 (never) to 1000, got \"-1\"" --avoid-node-after-failures=-1
expect 2 "--avoid-node-after-failures must be an integer from 0 (never) to 1000, got \"twice\"" --avoid-node-after-failures twice
expect 2 "--avoid-node-after-failures needs a value" --avoid-node-after-failures
expect 2 "--taint-avoided-nodes must be true or false, got \"yes\"" --taint-avoided-nodes=yes
expect 2 "--avoided-taint-ttl must be a whole number of seconds from 1s to 10080m (e.g. 60m), got \"0s\"" --avoided-taint-ttl=0s
expect 2 "--avoided-taint-ttl must be a whole number of seconds from 1s to 10080m (e.g. 60m), got \"1h\"" --avoided-taint-ttl=1h
expect 2 "--max-tainted-nodes must be an integer from 1 to 1000, got \"0\"" --max-tainted-nodes=0
expect 2 "--node-loss-limit must be an integer from 0 (no bound) to 1000000, got \"-1\"" --node-loss-limit=-1
expect 2 "--node-loss-limit needs a value" --node-loss-limit
expect 2 "--keyring-secret must be a Secret's NAMESPACE/NAME: \"kd-keyring\" has no '/'" --keyring-secret kd-keyring
expect 2 "--keyring-secret must be a Secret's NAMESPACE/NAME: \"Kube_System\" is no namespace name (a DNS label)" --keyring-secret=Kube_System/kd-keyring
expect 2 "--keyring-secret must be a Secret's NAMESPACE/NAME: \"a/b\" is no Secret name (a DNS subdomain)" --keyring-secret=ns/a/b
expect 2 "--keyring-secret needs a value" --keyring-secret
expect 2 "--taint-avoided-nodes needs the node watch: --watch-nodes (on by default only without --namespace)" \
  --namespace team-a --taint-avoided-nodes
expect 2 "--taint-avoided-nodes needs the node watch: --watch-nodes (on by default only without --namespace)" \
  --taint-avoided-nodes --watch-nodes=false
expect 2 "--gang-scheduling needs a value" --gang-scheduling
expect 2 "--network-policy-per-job must be true or false, got \"on\"" --network-policy-per-job=on
expect 2 "--network-policy-ingress must be a JSON array of NetworkPolicy ingress rules: not JSON, got \"[{from\"" \
  --network-policy-per-job --network-policy-ingress '[{from'
expect 2 "--network-policy-ingress must be a JSON array of NetworkPolicy ingress rules: not a JSON array" \
  --network-policy-per-job --network-policy-ingress '{"from": []}'
expect 2 "--network-policy-ingress must be a JSON array of NetworkPolicy ingress rules: rule 1 has \"to\" (a rule has only from and ports)" \
  --network-policy-per-job --network-policy-ingress '[{"from": []}, {"to": []}]'
expect 2 "--network-policy-ingress must be a JSON array of NetworkPolicy ingress rules: rule 0: ports is not an array" \
  --network-policy-per-job --network-policy-ingress '[{"ports": 9402}]'
expect 2 "--network-policy-ingress must be a JSON array of NetworkPolicy ingress rules: rule 0: an item of from is not an object" \
  --network-policy-per-job --network-policy-ingress '[{"from": ["monitoring"]}]'
expect 2 "--network-policy-ingress needs --network-policy-per-job" --network-policy-ingress '[{"from": [{}]}]'
# Good values pass the flag checks and fail later, at the (missing) kubeconfig.
expect 1 "kubeconfig: cannot read /nonexistent/kubeconfig" --kubeconfig /nonexistent/kubeconfig --watch-nodes \
  --unschedulable-grace=2m --node-lost-grace 3s --launcher-poll-interval=0 --gang-scheduling=all \
  --avoid-node-after-failures=0 --taint-avoided-nodes --keyring-secret=kubedist-system/kd-keyring \
  --network-policy-per-job --network-policy-ingress='[{"from": [{"podSelector": {}}], "ports": [{"port": "rendezvous"}]}]'
expect 1 "kubeconfig: cannot read /nonexistent/kubeconfig" --kubeconfig /nonexistent/kubeconfig
expect 1 "kubeconfig: cannot read /nonexistent/.kube/config"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf 'current-context: x\n' >"$tmp"
expect 1 "kubeconfig has no context \"x\"" --kubeconfig "$tmp"
