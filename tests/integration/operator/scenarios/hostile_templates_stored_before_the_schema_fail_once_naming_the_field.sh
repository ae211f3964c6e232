#!/usr/bin/env bash
# Templates the schema refuses today but an API server stored before (a CRD without the template's types and CEL
# rules): field types the operator reads (a number as env[].name or a port's name, a string as containerPort, a
# number as a label value) and templates that reach for the namespace's rendezvous key or the operator's volumes. The
# operator's own check (trainingjob/api/template_check.cc) fails each once, InvalidSpec naming the field, with one
# Event and no pod, keeps every job in its cache, and runs a good job beside them. A job of 1.3 MB is refused the same
# way (its template over the operator's bound of 256 KiB).
# usage: hostile_templates_stored_before_the_schema_fail_once_naming_the_field.sh OPERATOR_BINARY   (KUBECONFIG,
# KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario hostile

# The CRD as an earlier release had it: the pod template unchecked. The real one is back whatever happens.
trap 'rc=$?; apply_crd; (exit $rc); cleanup' EXIT
/usr/bin/python3 - "$KUBEDIST_SOURCE_DIR/crd/kubedist.io_trainingjobs.yaml" <<'PY' | kubectl apply --server-side --force-conflicts -f - >/dev/null
import json, sys, yaml
crd = yaml.safe_load(open(sys.argv[1]))
spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
spec["template"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
print(json.dumps(crd))
PY
kubectl wait --for=condition=Established --timeout=60s crd/trainingjobs.kubedist.io >/dev/null

# hostile NAME CONTAINER-EXTRA [POD-EXTRA] [TEMPLATE-METADATA]
hostile() {
  printf 'apiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: %s}\nspec:\n  replicas: 2\n' "$1"
  printf '  template: {%sspec: {containers: [{name: trainer, image: busybox, command: [python, t.py]%s}]%s}}\n' \
    "${4:-}" "$2" "${3:-}"
}
declare -A want=(
  [envnum]='spec.template.spec.containers[0].env[0].name: must be a string, got 5'
  [portstr]='spec.template.spec.containers[0].ports[0].containerPort: must be an integer, got "29500"'
  [portname]='spec.template.spec.containers[0].ports[0].name: must be a string, got 1'
  [labelnum]='spec.template.metadata.labels.tier: must be a string, got 1'
  [keyvolume]='spec.template.spec.volumes[0].secret.secretName: the template may not use Secret kubedist-rendezvous'
  [keyenv]='spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name: the template may not use Secret kubedist-rendezvous'
  [opmount]='spec.template.spec.containers[0].volumeMounts[0].name: volume "kubedist-rendezvous" is the operator'"'"'s'
  [big]='spec.template: over 262144 bytes; the operator keeps it for every pod it makes: keep large data (environment values, files) in a ConfigMap or a volume'
)
{
  hostile envnum ', env: [{name: 5, value: x}]'
  echo ---
  hostile portstr ', ports: [{containerPort: "29500"}]'
  echo ---
  hostile portname ', ports: [{name: 1, containerPort: 80}]'
  echo ---
  hostile labelnum '' '' 'metadata: {labels: {tier: 1}}, '
  echo ---
  hostile keyvolume ', volumeMounts: [{name: key, mountPath: /key}]' ', volumes: [{name: key, secret: {secretName: kubedist-rendezvous}}]'
  echo ---
  hostile keyenv ', env: [{name: K, valueFrom: {secretKeyRef: {name: kubedist-rendezvous, key: secret}}}]'
  echo ---
  hostile opmount ', volumeMounts: [{name: kubedist-rendezvous, mountPath: /key}]'
} | kubectl -n "$NS" apply -f - >/dev/null
apply_crd
# The schema refuses such a template now.
out=$(hostile fresh ', env: [{name: 5, value: x}]' | kubectl -n "$NS" apply -f - 2>&1) && fail "the schema took env[].name 5"
pass "the schema refuses them today: ${out:0:140}"

# A job of 1.3 MB, which any schema takes (it cannot bound bytes) and the API server stores: the operator refuses it
# before holding its template. (kubectl create: apply's last-applied annotation could not hold it.)
/usr/bin/python3 - <<'PY' | kubectl -n "$NS" create -f - >/dev/null
import json
print(json.dumps({"apiVersion": "kubedist.io/v1alpha1", "kind": "TrainingJob", "metadata": {"name": "big"},
                  "spec": {"replicas": 2, "template": {"spec": {"containers": [{
                      "name": "trainer", "image": "busybox", "command": ["python", "t.py"],
                      "env": [{"name": "BLOB", "value": "x" * (1300 * 1024)}]}]}}}}))
PY
start_operator
job_yaml good 2 | kubectl -n "$NS" apply -f - >/dev/null
for job in "${!want[@]}"; do
  eventually 30 "$job Failed" phase_is "$job" Failed
  got=$(jp "tj/$job" '{.status.conditions[?(@.type=="Failed")].reason}: {.status.conditions[?(@.type=="Failed")].message}')
  [ "$got" = "InvalidSpec: ${want[$job]}" ] || [[ $got == "InvalidSpec: ${want[$job]}"* ]] || fail "$job: '$got', want '${want[$job]}'"
  [ "$(pod_count "$job")" -eq 0 ] || fail "$job: pods were created"
  pass "$job: Failed, $got"
done
eventually 60 "the good job's pods run beside them" all_running good 2
rows() { kubectl -n "$NS" get events --field-selector reason=InvalidSpec -o jsonpath='{range .items[*]}{.count}{"\n"}{end}'; }
[ "$(rows | wc -l)" -eq "${#want[@]}" ] && [ "$(rows | sort -u)" = 1 ] ||
  fail "InvalidSpec Events: want one per job, got counts $(rows | tr '\n' ' ')"
kill -0 "$OP_PID" || fail "the operator died"
! grep -q 'skipping malformed object' "$OP_LOG" || fail "the cache dropped a job: $(grep 'skipping malformed' "$OP_LOG")"
pass "one InvalidSpec Event each, every job kept in the cache, no pod, and a good job runs"
