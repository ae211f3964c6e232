#!/usr/bin/env bash
# Invalid specs fail once without a retry loop.
# usage: invalid_specs_fail_once_without_a_retry_loop.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario badspec

start_operator
# The schema cannot require a command; the operator must refuse to run the image's entrypoint.
kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: kubedist.io/v1alpha1
kind: TrainingJob
metadata: {name: nocmd}
spec:
  replicas: 2
  template: {spec: {containers: [{name: trainer, image: busybox}]}}
YAML
eventually 30 "nocmd Failed" phase_is nocmd Failed
got=$(jp tj/nocmd '{.status.conditions[?(@.type=="Failed")].reason}: {.status.conditions[?(@.type=="Failed")].message}')
[[ $got == "InvalidSpec: spec.template.spec.containers[0] (trainer): command is required"* ]] || fail "condition: $got"
eventually 10 "InvalidSpec event" has_event nocmd InvalidSpec
[ "$(pod_count nocmd)" -eq 0 ] || fail "pods were created for an invalid job"
pass "no command: Failed condition '$got' and an Event, no pods"
# A template the API server itself rejects when creating a pod.
job_yaml badpod 1 | sed 's/image: busybox/image: busybox, resources: {limits: {cpu: "1"}, requests: {cpu: "2"}}/' |
  kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "badpod Failed" phase_is badpod Failed
got=$(jp tj/badpod '{.status.conditions[?(@.type=="Failed")].message}')
[[ $got == *"the API server rejected pod badpod-node-0"* ]] || fail "condition: $got"
pass "a pod the API server rejects: Failed condition '$got'"
before=$(grep -c 'nocmd\|badpod' "$OP_LOG" || true)
sleep 3  # measuring that nothing happens needs a quiet interval, not a condition
after=$(grep -c 'nocmd\|badpod' "$OP_LOG" || true)
[ "$after" -eq "$before" ] || fail "invalid jobs keep being worked on: $before -> $after log lines"
[ "$(kubectl -n "$NS" get events --field-selector involvedObject.name=nocmd,reason=InvalidSpec -o jsonpath='{.items[*].count}')" = 1 ] ||
  fail "InvalidSpec reported more than once"
kill -0 "$OP_PID" || fail "operator crashed"
pass "no hot loop: invalid jobs are reported once and left alone"

# Templates only the API server refuses as pods (two containers named trainer, an env name with '='):
# Failed once with the server's own message, and nothing retried until the spec changes.
kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: kubedist.io/v1alpha1
kind: TrainingJob
metadata: {name: dup}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - {name: trainer, image: busybox, command: [python, a.py]}
      - {name: trainer, image: busybox, command: [sleep, "10"]}
---
apiVersion: kubedist.io/v1alpha1
kind: TrainingJob
metadata: {name: noname}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - {name: trainer, image: busybox, command: [python, a.py], env: [{name: "A=B", value: x}]}
YAML
eventually 30 "dup Failed" phase_is dup Failed
eventually 30 "noname Failed" phase_is noname Failed
got=$(jp tj/dup '{.status.conditions[?(@.type=="Failed")].message}')
[[ $got == *'the API server rejected pod dup-node-0: '*'spec.containers[1].name: Duplicate value: "trainer"'* ]] ||
  fail "dup condition: $got"
got=$(jp tj/noname '{.status.conditions[?(@.type=="Failed")].message}')
[[ $got == *'spec.containers[0].env[0].name: Invalid value: "A=B"'* ]] || fail "noname condition: $got"
pass "templates the API server refuses as pods: Failed with its message ($got)"
reconciles() { curl -sf "http://127.0.0.1:$OP_PORT/metrics" | awk '/^kubedist_reconcile_duration_seconds_count/ {n += $2} END {print n + 0}'; }
event_rows() { kubectl -n "$NS" get events --field-selector "involvedObject.name=$1" --no-headers 2>/dev/null | wc -l; }
rows_dup=$(event_rows dup) rows_noname=$(event_rows noname)
status_dup=$(jp tj/dup '{.status}')
before=$(reconciles)
for i in 1 2 3; do kubectl -n "$NS" annotate tj dup noname --overwrite "poke=$i" >/dev/null; done
grew() { [ "$(reconciles)" -ge $((before + 2)) ]; }
eventually 30 "the operator reconciles the poked jobs again" grew
[ "$(event_rows dup)" -eq "$rows_dup" ] && [ "$(event_rows noname)" -eq "$rows_noname" ] ||
  fail "a rejected job was retried: events $rows_dup -> $(event_rows dup), $rows_noname -> $(event_rows noname)"
[ "$(jp tj/dup '{.status}')" = "$status_dup" ] || fail "dup's status changed without a spec change"
! has_event dup SpecFixed || fail "SpecFixed without a spec change"
[ "$(pod_count dup)" -eq 0 ] || fail "pods of a rejected template exist"
pass "reconciled again without a spec change: no retry, no new Event, the status unchanged"
kubectl -n "$NS" patch tj noname --type=json \
  -p '[{"op":"replace","path":"/spec/template/spec/containers/0/env/0/name","value":"X"}]' >/dev/null
eventually 30 "noname runs once its spec is fixed" all_running noname 2
has_event noname SpecFixed || fail "no SpecFixed Event"
pass "fixing the spec (a new generation) starts the job"

# Several containers and none named trainer: the schema refuses it, naming the rule.
out=$(job_yaml twomain 1 | sed 's/containers: \[{name: trainer,/containers: [{name: side, image: busybox, command: [sleep, "1"]}, {name: main,/' |
  kubectl -n "$NS" apply -f - 2>&1) && fail "a template with two containers and no trainer was accepted"
[[ $out == *"the one that runs under the launcher must be named trainer"* ]] || fail "refusal: $out"
pass "two containers, none named trainer: refused by the schema ($out)"
job_yaml solo 1 | sed 's/name: trainer,/name: main,/' | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "a single container named main runs" all_running solo 1
cmd=$(jp pod/solo-node-0 '{.spec.containers[0].command[0]}')
[ "$cmd" = /kubedist/bin/kubedist-launcher ] || fail "the only container was not wrapped: $cmd"
pass "a pod's only container runs under the launcher whatever its name"
