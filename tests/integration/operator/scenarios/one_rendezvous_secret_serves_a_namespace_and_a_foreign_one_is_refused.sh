#!/usr/bin/env bash
# One rendezvous Secret serves every job of a namespace (each job's secret is derived from it in its pods' init
# container), a job whose running pods an earlier operator gave a Secret of its own keeps that one, a key deleted or
# replaced while jobs run is said on each of them and kept for them (their new pods derive the same secret as their
# running ones), also when it changed while no operator ran (the keys are kept in a keyring Secret), and a Secret
# of the same name that is not the operator's stops new pods with an Event saying so. A key outside 16 to 4096 bytes
# (600 KB here) is neither kept nor derived from: new pods are held with condition PodsRefused and an Event naming the
# namespace, until the key is replaced with a good one.
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
# The keyring Secret the chart makes empty (in the operator's namespace there; in the test's here): the operator
# keeps every namespace key it sees in it too.
kubectl -n "$NS" create secret generic kd-keyring >/dev/null
start_operator --keyring-secret "$NS/kd-keyring"
eventually 30 "old's second pod exists" pods_are old 2
old_init='["/kubedist-launcher","--install","/kubedist/bin"]'  # no secret to derive
old_mount() {
  jp "pod/$1" '{.spec.volumes[?(@.name=="kubedist-rdzv")].secret.secretName} {.spec.containers[0].volumeMounts[?(@.name=="kubedist-rdzv")].mountPath} {.spec.initContainers[0].command} {.spec.containers[0].env[?(@.name=="KUBEDIST_RDZV_SECRET_FILE")].value}'
}
[ "$(old_mount old-node-1)" = "old-rdzv /kubedist/rdzv $old_init /kubedist/rdzv/secret" ] || fail "old's new pod: $(old_mount old-node-1)"
before=$(pod_uid old-node-0)
kubectl -n "$NS" delete pod old-node-0 --wait=false >/dev/null
recreated() { [ "$(pod_uid "$1" 2>/dev/null)" != "$2" ] && [ -n "$(pod_uid "$1" 2>/dev/null)" ]; }
# 60 s, not 30: kwok, playing the kubelets, deletes pods by name and now and then takes the same-named replacement
# too before the operator's cache has shown it; the operator then waits out its 30 s expectation of that create
# before making the pod again (a known gap: expectations are kept by pod name).
eventually 60 "old-node-0 recreated" recreated old-node-0 "$before"
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

# The namespace key deleted, then replaced, while jobs run: each running job says so (one Warning Event naming the
# Secret) and keeps the key its running pods derived their secret from, in a Secret of its own that its new pods mount.
derived() {  # KEY UID: the job's secret as the launcher's init container derives it (contract/signed_line.h)
  python3 -c 'import hmac, hashlib, sys; print(hmac.new(sys.argv[1].encode(), b"kubedist-rdzv-job-1 " + sys.argv[2].encode(), hashlib.sha256).hexdigest())' "$1" "$2"
}
secret_fingerprint() {  # SECRET: what the launcher checks a job's secret against (KUBEDIST_RDZV_SECRET_FINGERPRINT)
  python3 -c 'import hmac, hashlib, sys; print(hmac.new(sys.argv[1].encode(), b"kubedist-rdzv-job-fingerprint-1", hashlib.sha256).hexdigest()[:16])' "$1"
}
expected_of() { jp "pod/$1" '{.spec.containers[0].env[?(@.name=="KUBEDIST_RDZV_SECRET_FINGERPRINT")].value}'; }
fingerprint() {  # KEY: what a pod records of it (annotation kubedist.io/rendezvous-key)
  python3 -c 'import hmac, hashlib, sys; print(hmac.new(sys.argv[1].encode(), b"kubedist-rdzv-fingerprint-1", hashlib.sha256).hexdigest()[:16])' "$1"
}
ns_key() { kubectl -n "$NS" get secret kubedist-rendezvous -o jsonpath='{.data.secret}' | base64 -d; }
secret_of() { kubectl -n "$NS" get secret "$1" -o jsonpath='{.data.secret}' | base64 -d; }
key_of() { jp "pod/$1" '{.metadata.annotations.kubedist\.io/rendezvous-key}'; }
events_of() { kubectl -n "$NS" get events --field-selector "involvedObject.name=$1,reason=RendezvousSecretChanged" -o jsonpath='{range .items[*]}{.type} {.message}{"\n"}{end}'; }
jb=$(jp tj/b '{.metadata.uid}')
key1=$(ns_key)
eventually 30 "a's pods running" all_running a 2
eventually 30 "b's pods running" all_running b 2
for p in a-node-0 a-node-1 b-node-0; do
  [ "$(key_of $p)" = "$(fingerprint "$key1")" ] || fail "$p records key $(key_of $p), not the namespace's"
done
kubectl -n "$NS" delete secret kubedist-rendezvous >/dev/null
for j in a b; do eventually 30 "RendezvousSecretChanged on $j" has_event $j RendezvousSecretChanged; done
msg=$(events_of a)
grep -q "^Warning Secret kubedist-rendezvous in namespace $NS was deleted while the job ran" <<<"$msg" || fail "event: $msg"
grep -q "Secret a-rdzv" <<<"$msg" || fail "event names no Secret of a's own: $msg"
! grep -q -e "$key1" -e "$(derived "$key1" "$ja")" <<<"$msg" || fail "the event shows a secret: $msg"
[ "$(secret_of a-rdzv)" = "$(derived "$key1" "$ja")" ] || fail "a-rdzv does not hold the secret a's running pods derived"
[ "$(secret_of b-rdzv)" = "$(derived "$key1" "$jb")" ] || fail "b-rdzv does not hold the secret b's running pods derived"
[ "$(jp secret/a-rdzv '{.metadata.ownerReferences[0].uid}')" = "$ja" ] || fail "a-rdzv is not owned by a"
[ "$(jp tj/a '{.status.rendezvousSecret}')" = a-rdzv ] || fail "a's status: $(jp tj/a '{.status.rendezvousSecret}')"
before=$(pod_uid a-node-0)
kubectl -n "$NS" delete pod a-node-0 --wait=false >/dev/null
eventually 60 "a-node-0 recreated" recreated a-node-0 "$before"
[ "$(old_mount a-node-0)" = "a-rdzv /kubedist/rdzv $old_init /kubedist/rdzv/secret" ] || fail "a's recreated node 0: $(old_mount a-node-0)"
[ -z "$(key_of a-node-0)" ] || fail "a's recreated node 0 records a namespace key"
[ "$(expected_of a-node-0)" = "$(secret_fingerprint "$(derived "$key1" "$ja")")" ] ||
  fail "a's recreated node 0 is not told the fingerprint of the secret in a-rdzv: '$(expected_of a-node-0)'"
[ -z "$(expected_of old-node-0)" ] || fail "old's pod, on an earlier operator's Secret, is told a fingerprint"
# a-rdzv itself deleted by a tenant while a runs: the operator makes it again before a's next new pod mounts it.
kubectl -n "$NS" delete secret a-rdzv >/dev/null
before=$(pod_uid a-node-1)
kubectl -n "$NS" delete pod a-node-1 --wait=false >/dev/null
eventually 60 "a-node-1 recreated" recreated a-node-1 "$before"
eventually 30 "a-rdzv made again" kubectl -n "$NS" get secret a-rdzv
[ "$(secret_of a-rdzv)" = "$(derived "$key1" "$ja")" ] || fail "a-rdzv was made again with another secret"
[ "$(jp tj/a '{.status.rendezvousSecretKey}')" = "$(fingerprint "$key1")" ] || fail "a's status: $(jp tj/a '{.status.rendezvousSecretKey}')"
# a-rdzv replaced by a tenant's own before the operator makes it again: the operator cannot read it and takes the
# AlreadyExists, but a's next pod is told the fingerprint of the secret the operator wrote, which the tenant's is
# not, so its launcher refuses it (launcher.integration.rdzv_auth) rather than sign with a secret the tenant chose.
kubectl -n "$NS" delete secret a-rdzv >/dev/null
kubectl -n "$NS" create secret generic a-rdzv --from-literal=secret=a-secret-of-the-tenants-choosing >/dev/null
before=$(pod_uid a-node-1)
kubectl -n "$NS" delete pod a-node-1 --wait=false >/dev/null
eventually 60 "a-node-1 recreated" recreated a-node-1 "$before"
[ "$(secret_of a-rdzv)" = a-secret-of-the-tenants-choosing ] || fail "the operator overwrote a Secret it may not read"
[ "$(expected_of a-node-1)" = "$(secret_fingerprint "$(derived "$key1" "$ja")")" ] &&
  [ "$(expected_of a-node-1)" != "$(secret_fingerprint a-secret-of-the-tenants-choosing)" ] ||
  fail "a's new pod is not told the operator's fingerprint: '$(expected_of a-node-1)'"
pass "the namespace key deleted while a and b run: one Warning RendezvousSecretChanged each naming it; a-rdzv and b-rdzv hold the secrets their running pods derived from the old key, and a's recreated node 0 mounts a-rdzv; a-rdzv deleted, then made again before a's next new pod; each new pod told the fingerprint of the secret the operator wrote, also when a tenant's a-rdzv came first: $msg"

job_yaml d 1 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "d's pod" all_running d 1
[ "$(ns_secrets)" = 1 ] || fail "no new namespace Secret for a new job"
key2=$(ns_key)
[ "$key2" != "$key1" ] || fail "the deleted key came back"
[ "$(key_of d-node-0)" = "$(fingerprint "$key2")" ] || fail "d-node-0 records $(key_of d-node-0)"
jd=$(jp tj/d '{.metadata.uid}')
[ "$(jp pod/d-node-0 '{.spec.initContainers[0].command[6]}')" = "$jd" ] || fail "d's init container derives for another uid"
kubectl -n "$NS" patch secret kubedist-rendezvous --type=merge -p '{"stringData": {"secret": "a-replaced-key-of-a-tenant"}}' >/dev/null
eventually 30 "RendezvousSecretChanged on d" has_event d RendezvousSecretChanged
msg=$(events_of d)
grep -q "^Warning Secret kubedist-rendezvous in namespace $NS was replaced while the job ran" <<<"$msg" || fail "event: $msg"
[ "$(secret_of d-rdzv)" = "$(derived "$key2" "$jd")" ] || fail "d-rdzv does not hold the secret d's node 0 derived"
before=$(pod_uid d-node-0)
kubectl -n "$NS" delete pod d-node-0 --wait=false >/dev/null
eventually 60 "d-node-0 recreated" recreated d-node-0 "$before"
[ "$(old_mount d-node-0)" = "d-rdzv /kubedist/rdzv $old_init /kubedist/rdzv/secret" ] || fail "d's recreated pod: $(old_mount d-node-0)"
[ "$(events_of a | wc -l)" = 1 ] || fail "a was told again: $(events_of a)"
[ "$(ns_key)" = a-replaced-key-of-a-tenant ] || fail "the operator changed the replaced key"
pass "the namespace key replaced while d runs: d says so, d-rdzv holds the secret d's node 0 derived from the key before, d's recreated pod mounts it; a, already on its own Secret, is not told again"

# The key replaced while no operator runs: the operator started after it reads the keys the earlier one kept in the
# keyring, so the running job still gets the secret its pods derived, as when the operator saw the change.
job_yaml e 1 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "e's pod" all_running e 1
[ "$(key_of e-node-0)" = "$(fingerprint a-replaced-key-of-a-tenant)" ] || fail "e-node-0 records $(key_of e-node-0)"
je=$(jp tj/e '{.metadata.uid}')
keyring_entries() { kubectl -n "$NS" get secret kd-keyring -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}'; }
for key in "$key1" "$key2" a-replaced-key-of-a-tenant; do
  grep -q "$NS.$(fingerprint "$key") " <<<"$(keyring_entries)" || fail "the keyring lacks a key the operator saw: $(keyring_entries)"
done
stop_operator
kubectl -n "$NS" patch secret kubedist-rendezvous --type=merge -p '{"stringData": {"secret": "replaced-while-down"}}' >/dev/null
start_operator --keyring-secret "$NS/kd-keyring"
eventually 30 "RendezvousSecretChanged on e" has_event e RendezvousSecretChanged
msg=$(events_of e)
grep -q "which the operator kept for the job in Secret e-rdzv" <<<"$msg" || fail "event: $msg"
[ "$(secret_of e-rdzv)" = "$(derived a-replaced-key-of-a-tenant "$je")" ] || fail "e-rdzv does not hold the secret e's node 0 derived"
[ "$(jp tj/e '{.status.rendezvousKeyLost}')" = "" ] || fail "e's status says its key was lost"
pass "the namespace key replaced while no operator ran: the next one read the old key from its keyring Secret ($(keyring_entries | wc -w) entries), said so on e and gave e-rdzv the secret e's node 0 derived: $msg"

# Somebody else's Secret of the same name: new pods could not sign, so none are made, and the job says why.
stop_operator
kubectl -n "$NS" delete secret kubedist-rendezvous >/dev/null
kubectl -n "$NS" create secret generic kubedist-rendezvous --from-literal=secret=not-the-operators-secret >/dev/null
start_operator --keyring-secret "$NS/kd-keyring"
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

# The operator's Secret given a key of 600 KB: kept nowhere (not in the keyring), derived from by no pod; a new job
# is held with condition PodsRefused (reason RendezvousKeyInvalid) and an Event naming the namespace, and gets its pod
# once the key is replaced with a good one.
huge=$(mktemp)
/usr/bin/python3 -c 'import json; print(json.dumps({"stringData": {"secret": "k" * 600 * 1024}}))' >"$huge"
kubectl -n "$NS" patch secret kubedist-rendezvous --type=merge --patch-file "$huge" >/dev/null
rm -f "$huge"
entries_before=$(keyring_entries | wc -w)
job_yaml f 1 | kubectl -n "$NS" apply -f - >/dev/null
held() { [ "$(jp tj/f '{.status.conditions[?(@.type=="PodsRefused")].reason}')" = RendezvousKeyInvalid ]; }
eventually 30 "f held with PodsRefused RendezvousKeyInvalid" held
eventually 10 "RendezvousKeyInvalid event" has_event f RendezvousKeyInvalid
msg=$(kubectl -n "$NS" get events --field-selector involvedObject.name=f,reason=RendezvousKeyInvalid -o jsonpath='{.items[0].message}')
[ "$msg" = "new pods held: Secret kubedist-rendezvous in namespace $NS holds a key of 614400 bytes: replace it with one of 16 to 4096 bytes, or delete it and the operator makes one" ] ||
  fail "event message: $msg"
[ "$(pod_count f)" = 0 ] || fail "f got a pod deriving from a key of 600 KB"
[ "$(keyring_entries | wc -w)" = "$entries_before" ] || fail "the 600 KB key went into the keyring: $(keyring_entries | wc -w) entries"
pass "a namespace key of 600 KB: f holds its pods (PodsRefused RendezvousKeyInvalid), the keyring is untouched: $msg"
kubectl -n "$NS" patch secret kubedist-rendezvous --type=merge -p '{"stringData": {"secret": "a-good-key-after-the-huge-one"}}' >/dev/null
eventually 30 "f's pod once the key is good" pods_are f 1
[ "$(jp tj/f '{.status.conditions[?(@.type=="PodsRefused")].status}')" = False ] || fail "f's PodsRefused: $(jp tj/f '{.status.conditions}')"
[ "$(key_of f-node-0)" = "$(fingerprint a-good-key-after-the-huge-one)" ] || fail "f-node-0 records $(key_of f-node-0)"
pass "the key replaced with a good one: f gets its pod, deriving from it, and PodsRefused turns False"
