#!/usr/bin/env bash
# The TrainingJob CRD against the real kube-apiserver: the example is accepted and defaulted, bad specs are
# refused with the schema's own messages, kubectl explain and the printer columns work, and the scale
# subresource obeys [minReplicas, maxReplicas].
set -euo pipefail
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"

apply_crd
new_namespace crd
pass "CRD established"

# The OpenAPI document that kubectl explain reads is published a moment after the CRD is established.
# Output is captured before grep reads it: `producer | grep -q` under pipefail fails when grep's early
# exit kills the producer with SIGPIPE.
explains() { grep -q "$1" <<<"$(kubectl explain trainingjob.spec 2>/dev/null)"; }
eventually 60 "kubectl explain trainingjob.spec describes minReplicas" explains 'Elastic lower bound'
grep -q 'ExitCode' <<<"$(kubectl explain trainingjob.spec.restartPolicy)" || fail "kubectl explain lacks restartPolicy's description"
pass "kubectl explain describes the spec"

kubectl -n "$NS" apply -f "$KUBEDIST_SOURCE_DIR/crd/examples/trainingjob.yaml" >/dev/null || fail "example refused"
table=$(kubectl -n "$NS" get tj resnet 2>&1) || fail "kubectl get tj resnet: $table"
cols=${table%%$'\n'*}
for c in NAME PHASE NODES WORLD SPARES CHECKPOINT RESTARTS AGE; do
  [[ $cols == *"$c"* ]] || fail "kubectl get tj header '$cols' lacks $c"
done
pass "example accepted; kubectl get tj shows: $cols"
kubectl -n "$NS" apply -f "$KUBEDIST_SOURCE_DIR/crd/examples/cpu/trainingjob.yaml" >/dev/null || fail "CPU example refused"
[ "$(kubectl -n "$NS" get tj cpu-demo -o jsonpath='{.spec.replicas} {.spec.nprocPerNode}')" = "2 2" ] ||
  fail "CPU example: replicas or nprocPerNode not as written"
pass "CPU example (crd/examples/cpu) accepted"

# A minimal job gets the documented defaults.
kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: kubedist.io/v1alpha1
kind: TrainingJob
metadata: {name: minimal}
spec:
  template:
    spec:
      containers: [{name: trainer, image: busybox, command: [python, train.py]}]
YAML
got=$(kubectl -n "$NS" get tj minimal -o jsonpath='{.spec.replicas} {.spec.nprocPerNode} {.spec.masterPort} {.spec.maxRestarts} {.spec.backoffLimit} {.spec.restartPolicy} {.spec.suspend} {.spec.cleanPodPolicy} {.spec.spares}')
[ "$got" = "1 auto 29500 3 6 OnFailure false Running 0" ] || fail "defaults: got '$got'"
pass "defaults applied: $got"

# reject NAME PATTERN SPEC-YAML: the API server must refuse the job, with PATTERN in its message.
reject() {
  local name=$1 pattern=$2 spec=$3 out
  if out=$(printf 'apiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: %s}\nspec:\n%s\n' "$name" "$spec" |
    kubectl -n "$NS" create --dry-run=server -f - 2>&1); then
    fail "$name: accepted, expected a refusal matching '$pattern'"
  fi
  grep -qF -- "$pattern" <<<"$out" || fail "$name: refused with '$out', expected '$pattern'"
  pass "$name refused: $(grep -oF -- "$pattern" <<<"$out" | head -n 1)"
}
tmpl='  template: {spec: {containers: [{name: trainer, image: busybox, command: [python, train.py]}]}}'

reject negative-replicas 'spec.replicas in body should be greater than or equal to 1' "  replicas: -1
$tmpl"
reject min-above-max 'minReplicas must be less than or equal to maxReplicas' "  replicas: 3
  minReplicas: 5
  maxReplicas: 2
$tmpl"
reject replicas-above-max 'replicas must be less than or equal to maxReplicas' "  replicas: 5
  maxReplicas: 2
$tmpl"
reject string-replicas 'spec.replicas in body must be of type integer: "string"' "  replicas: four
$tmpl"
reject missing-template 'spec.template: Required value' "  replicas: 2"
reject no-containers 'spec.template.spec.containers: Required value' "  template: {spec: {}}"
reject bad-nproc 'nprocPerNode must be an integer from 1 to 1024, or one of auto, gpu, cpu' "  nprocPerNode: tpu
$tmpl"
reject zero-nproc 'nprocPerNode must be an integer from 1 to 1024, or one of auto, gpu, cpu' "  nprocPerNode: 0
$tmpl"
reject bad-restart-policy 'spec.restartPolicy: Unsupported value: "Always"' "  restartPolicy: Always
$tmpl"
reject bad-port 'spec.masterPort in body should be less than or equal to 65534' "  masterPort: 70000
$tmpl"
reject negative-spares 'spec.spares in body should be greater than or equal to 0' "  replicas: 2
  spares: -1
$tmpl"
reject too-many-spares 'spec.spares in body should be less than or equal to 64' "  replicas: 2
  spares: 65
$tmpl"
reject spares-of-one-node 'spares need a job of 2 or more nodes' "  replicas: 1
  spares: 1
$tmpl"
reject spares-of-an-elastic-job-of-one-node 'spares need a job of 2 or more nodes' "  replicas: 1
  maxReplicas: 1
  spares: 2
$tmpl"
reject checkpoint-without-claim 'spec.checkpoint.claimName: Required value' "  checkpoint: {everySteps: 100}
$tmpl"
reject checkpoint-claim-not-a-name 'spec.checkpoint.claimName in body should match' "  checkpoint: {claimName: My_Claim}
$tmpl"
reject checkpoint-every-zero-steps 'spec.checkpoint.everySteps in body should be greater than or equal to 1' "  checkpoint: {claimName: ckpt, everySteps: 0}
$tmpl"
reject checkpoint-under-kubedist "paths under /kubedist are the operator's" "  checkpoint: {claimName: ckpt, mountPath: /kubedist/bin}
$tmpl"
reject checkpoint-keep-too-many 'spec.checkpoint.keep in body should be less than or equal to 100' "  checkpoint: {claimName: ckpt, keep: 101}
$tmpl"
reject topology-key-with-a-space 'spec.placement.topologyKey in body should match' "  placement: {topologyKey: my rack}
$tmpl"
reject topology-key-too-long 'spec.placement.topologyKey: Too long' "  placement: {topologyKey: $(printf 'r%.0s' $(seq 1 400))}
$tmpl"

# Hostile templates: the types of what the operator reads, and the namespace's rendezvous key and the operator's
# volumes kept from job authors (the operator checks the same itself: trainingjob/api/template_check.cc).
# tmpl_with CONTAINER-EXTRA [POD-EXTRA]: a template whose trainer has CONTAINER-EXTRA fields, its pod POD-EXTRA.
tmpl_with() {
  printf '  template: {spec: {containers: [{name: trainer, image: busybox, command: [python, train.py]%s}]%s}}' "$1" "${2:-}"
}
reject env-name-number 'env[0].name in body must be of type string' "$(tmpl_with ', env: [{name: 5, value: x}]')"
reject env-without-name 'env[0].name: Required value' "$(tmpl_with ', env: [{value: x}]')"
reject port-string 'ports[0].containerPort in body must be of type integer' "$(tmpl_with ', ports: [{containerPort: "80"}]')"
reject volume-name-number 'volumes[0].name in body must be of type string' "$(tmpl_with '' ', volumes: [{name: 7, emptyDir: {}}]')"
reject mount-path-number 'volumeMounts[0].mountPath in body must be of type string' \
  "$(tmpl_with ', volumeMounts: [{name: data, mountPath: 1}]' ', volumes: [{name: data, emptyDir: {}}]')"
reject rdzv-secret-volume 'the template may not use Secret kubedist-rendezvous' \
  "$(tmpl_with '' ', volumes: [{name: key, secret: {secretName: kubedist-rendezvous}}]')"
reject rdzv-secret-projected 'the template may not use Secret kubedist-rendezvous' \
  "$(tmpl_with '' ', volumes: [{name: key, projected: {sources: [{secret: {name: kubedist-rendezvous}}]}}]')"
reject rdzv-secret-env 'the template may not use Secret kubedist-rendezvous' \
  "$(tmpl_with ', env: [{name: K, valueFrom: {secretKeyRef: {name: kubedist-rendezvous, key: secret}}}]')"
reject rdzv-secret-envfrom 'the template may not use Secret kubedist-rendezvous' \
  "$(tmpl_with ', envFrom: [{secretRef: {name: kubedist-rendezvous}}]')"
reject rdzv-secret-init-env 'the template may not use Secret kubedist-rendezvous' \
  "$(tmpl_with '' ', initContainers: [{name: peek, image: x, env: [{name: K, valueFrom: {secretKeyRef: {name: kubedist-rendezvous, key: secret}}}]}]')"
reject mounts-operator-volume 'a container of the template may not mount them' \
  "$(tmpl_with ', volumeMounts: [{name: kubedist-rendezvous, mountPath: /key}]')"
reject init-mounts-operator-volume 'a container of the template may not mount them' \
  "$(tmpl_with '' ', initContainers: [{name: peek, image: x, volumeMounts: [{name: kubedist-bin, mountPath: /b}]}]')"
reject mount-under-kubedist "mount paths /kubedist/bin, /kubedist/rdzv, /kubedist/rendezvous and /kubedist/podinfo are the operator's" \
  "$(tmpl_with ', volumeMounts: [{name: data, mountPath: /kubedist/bin}]' ', volumes: [{name: data, emptyDir: {}}]')"
reject reserved-volume-name 'volume names kubedist-bin, kubedist-rendezvous, kubedist-rdzv and kubedist-podinfo are reserved' \
  "$(tmpl_with '' ', volumes: [{name: kubedist-rdzv, emptyDir: {}}]')"
reject reserved-podinfo-name 'kubedist-podinfo are reserved' "$(tmpl_with '' ', volumes: [{name: kubedist-podinfo, emptyDir: {}}]')"
reject mount-under-podinfo "/kubedist/podinfo are the operator's" \
  "$(tmpl_with ', volumeMounts: [{name: data, mountPath: /kubedist/podinfo/x}]' ', volumes: [{name: data, emptyDir: {}}]')"
reject reserved-init-name 'the init container name kubedist-launcher is the operator' \
  "$(tmpl_with '' ', initContainers: [{name: kubedist-launcher, image: x}]')"
printf 'apiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: other-secret}\nspec:\n%s\n' \
  "$(tmpl_with ', env: [{name: K, valueFrom: {secretKeyRef: {name: wandb, key: token}}}], volumeMounts: [{name: s, mountPath: /kubedistx}]' ', volumes: [{name: s, secret: {secretName: wandb}}]')" |
  kubectl -n "$NS" create --dry-run=server -f - >/dev/null || fail "a template using a Secret of its own was refused"
pass "a template may use Secrets of its own and mount paths beside /kubedist"

# The scale subresource: inside [min, max] it works, outside the CEL rule refuses it.
kubectl -n "$NS" scale tj/resnet --replicas=3 >/dev/null || fail "kubectl scale to 3 (within 1..4) refused"
[ "$(kubectl -n "$NS" get tj resnet -o jsonpath='{.spec.replicas}')" = 3 ] || fail "scale did not set spec.replicas"
if out=$(kubectl -n "$NS" scale tj/resnet --replicas=9 2>&1); then fail "scale to 9 above maxReplicas 4 accepted"; fi
grep -qF 'replicas must be less than or equal to maxReplicas' <<<"$out" || fail "scale to 9 refused with '$out'"
pass "kubectl scale honours [minReplicas, maxReplicas]"
echo "crd_test: all checks passed"
