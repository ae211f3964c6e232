#!/usr/bin/env bash
# Builds the pinned upstream tools (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet,
# kube-proxy, etcd, kwok, kwokctl, helm, the distribution registry, containerd, coredns, kueue) from the Go module proxy
# with the ordinary go client, once per version: the binaries
# are kept under $KUBEDIST_CACHE/tools/<tool>-<version>/ and linked into $KUBEDIST_CACHE/bin. A second run
# only checks that they are there. Go's own build and module caches make a rebuild after a clean cheap.
# cluster.sh and the tests use the versioned folders (so several versions coexist); $KUBEDIST_CACHE/bin is for a
# shell's PATH (KUBEDIST_TOOLS_LINK=0 leaves it as it is, for a second checkout sharing the cache).
#
#   tools.sh          the pinned tools (versions.sh)
#   tools.sh bench    also what only the benchmarks run (Kubeflow's Training Operator)
#   tools.sh matrix [VERSION...]
#                     also the control planes of KUBERNETES_MATRIX_VERSIONS, or of the VERSIONs named among them
#                     (kube-apiserver, -controller-manager, -scheduler and kubectl of each; ctest -L matrix), one
#                     release after the other, 6 to 10 minutes of 2 cores each
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${KUBEDIST_CACHE:-$repo/.cache}
# shellcheck source=versions.sh
. "$here/versions.sh"

export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false"
mkdir -p "$cache/bin" "$cache/tools"

log() { printf '[tools] %s\n' "$*" >&2; }

# require_pin MODULE_DIR MODULE VERSION: the go.mod must pin what versions.sh says.
require_pin() {
  if ! grep -qE "^(require )?[[:space:]]*$2 $3\$" "$1/go.mod"; then
    echo "tools: $1/go.mod does not pin $2 $3 (versions.sh); keep them in step" >&2
    exit 1
  fi
}

# build NAME VERSION MODULE_DIR LDFLAGS BINARY=PACKAGE...
build() {
  local name=$1 version=$2 moddir=$3 ldflags=$4
  shift 4
  local dest="$cache/tools/$name-$version" missing=() spec bin
  for spec in "$@"; do
    bin=${spec%%=*}
    [ -x "$dest/$bin" ] || missing+=("$spec")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "building $name $version (${missing[*]%%=*}); the first build takes a while"
    local start=$SECONDS
    mkdir -p "$dest"
    for spec in "${missing[@]}"; do
      bin=${spec%%=*}
      (cd "$moddir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$dest/$bin.partial" "${spec#*=}")
      mv "$dest/$bin.partial" "$dest/$bin"
    done
    log "built $name $version in $((SECONDS - start))s"
  fi
  [ "${KUBEDIST_TOOLS_LINK:-1}" = 0 ] && return 0
  for spec in "$@"; do
    bin=${spec%%=*}
    ln -sfn "$dest/$bin" "$cache/bin/$bin"
  done
}

# k8s_module VERSION: the module folder that pins Kubernetes VERSION (versions.sh).
k8s_module() {
  local minor=${1#v1.}
  if [ "$1" = "$KUBERNETES_VERSION" ]; then echo "$here/tools/kubernetes"; else echo "$here/tools/kubernetes-1.${minor%%.*}"; fi
}

# k8s_ldflags VERSION: what `kubectl version` and the version endpoint report, as a release build sets it.
k8s_ldflags() {
  local minor=${1#v1.}
  minor=${minor%%.*}
  echo "-X k8s.io/component-base/version.gitVersion=$1 \
-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
-X k8s.io/component-base/version.gitTreeState=clean \
-X k8s.io/client-go/pkg/version.gitVersion=$1 \
-X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
}

for v in $KUBERNETES_VERSION $KUBERNETES_MATRIX_VERSIONS; do
  require_pin "$(k8s_module "$v")" k8s.io/kubernetes "$v"
done
require_pin "$here/tools/etcd" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
require_pin "$here/tools/kwok" sigs.k8s.io/kwok "$KWOK_VERSION"
require_pin "$here/tools/helm" helm.sh/helm/v4 "$HELM_VERSION"
require_pin "$here/tools/registry" github.com/distribution/distribution/v3 "$REGISTRY_VERSION"
require_pin "$here/tools/containerd" github.com/containerd/containerd/v2 "$CONTAINERD_VERSION"
require_pin "$here/tools/coredns" github.com/coredns/coredns "$COREDNS_VERSION"
require_pin "$here/tools/kueue" sigs.k8s.io/kueue "$KUEUE_VERSION"
require_pin "$here/tools/kubeflow" github.com/kubeflow/training-operator "$KUBEFLOW_TRAINING_OPERATOR_VERSION"

build etcd "$ETCD_VERSION" "$here/tools/etcd" "" etcd=go.etcd.io/etcd/server/v3
build kubernetes "$KUBERNETES_VERSION" "$here/tools/kubernetes" "$(k8s_ldflags "$KUBERNETES_VERSION")" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
  kubectl=k8s.io/kubernetes/cmd/kubectl \
  kubelet=k8s.io/kubernetes/cmd/kubelet \
  kube-proxy=k8s.io/kubernetes/cmd/kube-proxy
build kwok "$KWOK_VERSION" "$here/tools/kwok" \
  "" \
  kwok=sigs.k8s.io/kwok/cmd/kwok kwokctl=sigs.k8s.io/kwok/cmd/kwokctl
build helm "$HELM_VERSION" "$here/tools/helm" \
  "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
  helm=helm.sh/helm/v4/cmd/helm
build registry "$REGISTRY_VERSION" "$here/tools/registry" \
  "-X github.com/distribution/distribution/v3/version.version=$REGISTRY_VERSION" \
  registry=github.com/distribution/distribution/v3/cmd/registry
# The real nodes' container runtime (runc itself is Debian's). No btrfs, devmapper or zfs snapshotters: the
# nodes use overlayfs, and the btrfs one would need C headers Debian's base does not have.
GOFLAGS="$GOFLAGS -tags=no_btrfs,no_devmapper,no_zfs" build containerd "$CONTAINERD_VERSION" "$here/tools/containerd" \
  "-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
  containerd=github.com/containerd/containerd/v2/cmd/containerd \
  containerd-shim-runc-v2=github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  ctr=github.com/containerd/containerd/v2/cmd/ctr
build coredns "$COREDNS_VERSION" "$here/tools/coredns" "" coredns=github.com/coredns/coredns
# Kueue's manager: its CRDs come from the same module (cluster.sh kueue-crds).
build kueue "$KUEUE_VERSION" "$here/tools/kueue" "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
  kueue=sigs.k8s.io/kueue/cmd/kueue
# `tools.sh bench`: also what only the benchmarks run (tests/bench/operator/bench.py --compare).
if [ "${1:-}" = bench ]; then
  build kubeflow "$KUBEFLOW_TRAINING_OPERATOR_VERSION" "$here/tools/kubeflow" "" \
    training-operator=github.com/kubeflow/training-operator/cmd/training-operator.v1
fi
# `tools.sh matrix`: the control planes of the version matrix (fake nodes only: no kubelet or kube-proxy), never
# linked into $cache/bin; cluster.sh runs one with KUBEDIST_K8S_VERSION.
if [ "${1:-}" = matrix ]; then
  matrix_versions=("${@:2}")
  [ ${#matrix_versions[@]} -gt 0 ] || read -ra matrix_versions <<<"$KUBERNETES_MATRIX_VERSIONS"
  for v in "${matrix_versions[@]}"; do
    [[ " $KUBERNETES_MATRIX_VERSIONS " == *" $v "* ]] ||
      { echo "tools: $v is not in KUBERNETES_MATRIX_VERSIONS ($KUBERNETES_MATRIX_VERSIONS)" >&2; exit 2; }
  done
  for v in "${matrix_versions[@]}"; do
    KUBEDIST_TOOLS_LINK=0 build kubernetes "$v" "$(k8s_module "$v")" "$(k8s_ldflags "$v")" \
      kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
      kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
      kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
      kubectl=k8s.io/kubernetes/cmd/kubectl
  done
fi
log "tools ready in $cache/bin"
