#!/usr/bin/env bash
# One rendezvous Secret serves every job of a namespace (each job's secret is derived from it in its pods' init
# container), a job whose running pods an earlier operator gave a Secret of its own keeps that one, and a Secret of the
# same name that is not the operator's stops new pods with an Event saying so.
# usage: one_rendezvous_secret_serves_a_namespace_and_a_foreign_one_is_refused.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario rdzvsecret

ns_secrets() { kubectl -n "$NS" get secrets -l kubedist.io/rendezvous-secret=namespace --no-headers 2>/dev/null | wc -l; }

# A job as an earlier operator left it: its own Secret old-rdzv, owned by the job and labelled with its name, and a
# running pod that mounts it. The operator reads no Secret but the namespace's: the pods that mount old-rdzv tell it
# that the job keeps that one.
job_yaml old 2 | kubectl -n "$NS" apply -f - >/dev/null
uid=$(jp tj/old '{.metadata.uid}')
kubectl -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: old-rdzv
  labels: {kubedist.io/job-name: old}
  ownerReferences: [{apiVersion: kubedist.io/v1alpha1, kind: TrainingJob, name: old, uid: "$uid", controller: true}]
stringData: {secret: 00112233445566778899aabbccddeeff}
---
apiVersion: v1
kind: Pod
metadata:
  name: old-node-0
  labels: {kubedist.io/job-name: old, kubedist.io/node-rank: "0"}
  ownerReferences: [{apiVersion: kubedist.io/v1alpha1, kind: TrainingJob, name: old, uid: "$uid", controller: true}]
spec:
  hostname: old-node-0
  subdomain: old
  restartPolicy: Never
  containers:
  - name: trainer
    image: busybox
    command: [/kubedist/bin/kubedist-launcher, --no-python, --, python, train.py]
    env: [{name: KUBEDIST_RDZV_SECRET_FILE, value: /kubedist/rdzv/secret}]
    volumeMounts: [{name: kubedist-rdzv, mountPath: /kubedist/rdzv, readOnly: true}]
  volumes: [{name: kubedist-rdzv, secret: {secretName: old-rdzv}}]
YAML
eventually 30 "old-node-0 running" all_running old 1
start_operator
eventually 30 "old's second pod exists" pods_are old 2
old_init='["/kubedist-launcher","--install","/kubedist/bin"]'  # no secret to derive
old_mount() {
  jp "pod/$1" '{.spec.volumes[?(@.name=="kubedist-rdzv")].secret.secretName} {.spec.containers[0].volumeMounts[?(@.name=="kubedist-rdzv")].mountPath} {.spec.initContainers[0].command} {.spec.containers[0].env[?(@.name=="KUBEDIST_RDZV_SECRET_FILE")].value}'
}
[ "$(old_mount old-node-1)" = "old-rdzv /kubedist/rdzv $old_init /kubedist/rdzv/secret" ] || fail "old's new pod: $(old_mount old-node-1)"
before=$(pod_uid old-node-0)
kubectl -n "$NS" delete pod old-node-0 --wait=false >/dev/null
recreated() { [ "$(pod_uid old-node-0 2>/dev/null)" != "$before" ] && [ -n "$(pod_uid old-node-0 2>/dev/null)" ]; }
eventually 30 "old-node-0 recreated" recreated
[ "$(old_mount old-node-0)" = "old-rdzv /kubedist/rdzv $old_init /kubedist/rdzv/secret" ] || fail "old's recreated pod: $(old_mount old-node-0)"
[ "$(ns_secrets)" = 0 ] || fail "a namespace Secret was made for a job that has its own"
pass "a job whose running pods mount their own Secret from an earlier operator keeps mounting it in new and recreated pods"

for j in a b; do job_yaml "$j" 2 | kubectl -n "$NS" apply -f - >/dev/null; done
eventually 30 "a's pods" pods_are a 2
eventually 30 "b's pods" pods_are b 2
[ "$(ns_secrets)" = 1 ] || fail "$(ns_secrets) namespace Secrets"
[ "$(kubectl -n "$NS" get secrets -l kubedist.io/job-name -o name)" = secret/old-rdzv ] ||
  fail "per-job Secrets: $(kubectl -n "$NS" get secrets -l kubedist.io/job-name -o name)"
ja=$(jp tj/a '{.metadata.uid}')
[ "$(jp pod/a-node-1 '{.spec.initContainers[0].command[6]}' 2>&1)" = "$ja" ] || fail "a's init container derives for another uid"
pass "two more jobs: one Secret kubedist-rendezvous for the namespace, no Secret per job; each pod derives its own job's"

# Somebody else's Secret of the same name: new pods could not sign, so none are made, and the job says why.
stop_operator
kubectl -n "$NS" delete secret kubedist-rendezvous >/dev/null
kubectl -n "$NS" create secret generic kubedist-rendezvous --from-literal=secret=not-the-operators-secret >/dev/null
start_operator
job_yaml c 1 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "RendezvousSecretConflict event" has_event c RendezvousSecretConflict
msg=$(kubectl -n "$NS" get events --field-selector involvedObject.name=c,reason=RendezvousSecretConflict -o jsonpath='{.items[0].message}')
grep -q "Secret kubedist-rendezvous in namespace $NS is not the operator's" <<<"$msg" || fail "event message: $msg"
[ "$(pod_count c)" = 0 ] || fail "c got pods without a secret to sign with"
pass "a foreign Secret kubedist-rendezvous: no pods, Event RendezvousSecretConflict: $msg"
kubectl -n "$NS" delete secret kubedist-rendezvous >/dev/null
eventually 90 "c's pod once the foreign Secret is gone" pods_are c 1
[ "$(ns_secrets)" = 1 ] || fail "no namespace Secret after the foreign one went"
pass "with the foreign Secret gone, the operator makes its own and c gets its pod"
