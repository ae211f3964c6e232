#!/usr/bin/env bash
# A real local Kubernetes control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler,
# built from upstream sources by tools.sh, with nodes of one of two kinds:
#   - fake GPU nodes played by kwok (default; KUBEDIST_NODES of them): everything on 127.0.0.1, pods never
#     run anything, thousands of nodes are cheap;
#   - real nodes (KUBEDIST_REAL_NODES=N): N kubelets with containerd, runc, kube-proxy and CoreDNS, running
#     the pods' containers from images built here (images.sh), in network namespaces of their own (nodes.sh).
# Several clusters can run side by side under different names.
#
#   cluster.sh up [NAME]                 start (or reuse) cluster NAME (default: local); prints its kubeconfig
#   cluster.sh down [NAME]               stop it and leave no process behind; keeps nothing but its logs
#   cluster.sh status [NAME]             say whether it is up
#   cluster.sh restart-apiserver [NAME]  stop kube-apiserver and start it again on the same port and data
#   cluster.sh restart-etcd [NAME]       stop etcd and start it again on the same port and data
#   cluster.sh kubeconfig [NAME]         print the kubeconfig path
#   cluster.sh registry [NAME]           print the host's address of the registry of a cluster with real nodes
#                                        (127.0.0.1:PORT; the nodes see it as 10.250.0.1:5000)
#   cluster.sh run-operator NAME BINARY [ARGS...]
#                                        (re)start a kubedist-operator binary against cluster NAME, stopped
#                                        by down like the rest; its log is logs/kubedist-operator.log
#   cluster.sh kueue-up [NAME]           install Kueue's CRDs (from the pinned module) and start its manager as a
#                                        process (no webhooks: nothing the API server calls); stopped by kueue-down
#                                        or down; its log is logs/kueue.log
#   cluster.sh kueue-down [NAME]         stop Kueue's manager (its CRDs and objects stay)
#   cluster.sh kueue-crds [NAME]         install Kueue's CRDs only (no manager): its objects are validated, nothing
#                                        admits
#
# Environment: KUBEDIST_CACHE (default <repo>/.cache), KUBEDIST_NODES (fake nodes, default 4, or 0 with real
# nodes), KUBEDIST_REAL_NODES (real nodes, default 0), KUBEDIST_NODE_GPUS (nvidia.com/gpu each real node
# advertises, default 4), KUBEDIST_POD_CIDR (the addresses kwok gives pods, default 127.100.0.0/16: loopback, where
# the e2e tests' pod runner serves them; the API server refuses loopback addresses in a Service's endpoints, so
# the benchmarks, which never connect to a pod, use others to keep those controllers from retrying in a loop),
# KUBEDIST_PORT_BASE (first of 7 ports, default derived from NAME), KUBEDIST_AUDIT=1 (the API
# server writes an audit log of every write request to logs/audit.log, as the benchmarks count them; every request
# of the ServiceAccounts in namespaces kubedist-audit and kubedist-system is written there always),
# KUBEDIST_KWOK_POD_DELETE=0 (kwok does not finish graceful pod deletions: see write_kwok_config).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${KUBEDIST_CACHE:-$repo/.cache}
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=template.sh
. "$here/template.sh"

cmd=${1:-}
name=${2:-local}
[[ $name =~ ^[a-z0-9][a-z0-9-]*$ ]] || { echo "cluster.sh: bad cluster name '$name'" >&2; exit 2; }
dir="$cache/clusters/$name"
kubeconfig="$dir/kubeconfig"
# The cluster's own binaries: links made at up to the versions it runs (tools.sh keeps each version in a folder of
# its own, so that clusters of different versions, and checkouts of different pins, share one cache). The tests put
# this folder first on their PATH: their kubectl is the cluster's.
bin="$dir/bin"
# A cluster started before clusters had binaries of their own runs the shell's ($cache/bin, tools.sh's links).
[ "$cmd" = up ] || [ -d "$bin" ] || bin="$cache/bin"
# The Kubernetes release a cluster runs: the pinned one, or KUBEDIST_K8S_VERSION at up (the version matrix; tools.sh
# matrix builds those); other commands use the one it was started with.
k8s_version=${KUBEDIST_K8S_VERSION:-$KUBERNETES_VERSION}
[ "$cmd" = up ] || [ ! -f "$dir/k8s-version" ] || k8s_version=$(cat "$dir/k8s-version")
[[ $k8s_version =~ ^v1\.([0-9]+)\.[0-9]+$ ]] ||
  { echo "cluster.sh: KUBEDIST_K8S_VERSION must be a release like v1.36.3, got '$k8s_version'" >&2; exit 2; }
k8s_minor=${BASH_REMATCH[1]}

if [ -n "${KUBEDIST_PORT_BASE:-}" ]; then
  base=$KUBEDIST_PORT_BASE
else
  # 20000-29990 in steps of 10, from the name, so that clusters of different names rarely collide.
  base=$((20000 + ($(printf '%s' "$name" | cksum | cut -d' ' -f1) % 1000) * 10))
fi
etcd_port=$base
etcd_peer_port=$((base + 1))
apiserver_port=$((base + 2))
kcm_port=$((base + 3))
scheduler_port=$((base + 4))
kwok_port=$((base + 5))
# base + 6: the registry of a cluster with real nodes (nodes.sh)
# base + 7, 8, 9: Kueue's health probes, metrics and (unused, but always served) webhook port (kueue-up)
kueue_health_port=$((base + 7))
kueue_metrics_port=$((base + 8))
kueue_webhook_port=$((base + 9))

log() { printf '[cluster %s] %s\n' "$name" "$*" >&2; }
die() { printf 'cluster.sh: %s\n' "$*" >&2; exit 1; }

kctl() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

pid_of() { cat "$dir/run/$1.pid" 2>/dev/null || true; }
# running PID: the process exists and has not exited. A process that is not our child stays a zombie until this
# machine's init reaps it, which here takes up to 2 s.
running() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}
alive() { local p; p=$(pid_of "$1"); [ -n "$p" ] && running "$p"; }

# start NAME CMD...: runs CMD in its own session (so that stopping it takes its children too), logging to
# $dir/logs/NAME.log.
start() {
  local what=$1
  shift
  setsid "$@" >>"$dir/logs/$what.log" 2>&1 </dev/null &
  echo $! >"$dir/run/$what.pid"
}

# stop NAME: SIGTERM to its process group, SIGKILL after 10 s.
stop() {
  local what=$1 p i
  p=$(pid_of "$what")
  rm -f "$dir/run/$what.pid"
  [ -n "$p" ] || return 0
  kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || return 0
  for i in $(seq 1 100); do
    running "$p" || break
    sleep 0.1
  done
  # What is left of its group (children that outlived it) goes now.
  kill -KILL -- "-$p" 2>/dev/null || true
  kill -KILL "$p" 2>/dev/null || true
  # Reap it when it is our child; otherwise wait until it has exited.
  wait "$p" 2>/dev/null || true
  for i in $(seq 1 50); do
    running "$p" || return 0
    sleep 0.1
  done
}

# A cluster with real nodes runs its control plane inside its own network namespace (nodes.sh); the host
# reaches the API server through a forward on the same port of 127.0.0.1.
pod_cidr=${KUBEDIST_POD_CIDR:-127.100.0.0/16}
[[ $pod_cidr =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$ ]] || die "KUBEDIST_POD_CIDR must be an IPv4 CIDR like 10.200.0.0/16, got '$pod_cidr'"
real_nodes=${KUBEDIST_REAL_NODES:-0}
[ -f "$dir/real-nodes" ] && [ "$cmd" != up ] && real_nodes=$(cat "$dir/real-nodes")
[[ $real_nodes =~ ^[0-9]+$ ]] && [ "$real_nodes" -le 8 ] || die "KUBEDIST_REAL_NODES must be 0 to 8, got '$real_nodes'"
cp_exec=()
if [ "$real_nodes" -gt 0 ]; then
  # shellcheck source=nodes.sh
  . "$here/nodes.sh"
  cp_exec=("${net_exec[@]}")
fi

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds; dies with WHAT's log tail when it does not.
wait_for() {
  local what=$1 secs=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$what"; then
      tail -n 30 "$dir/logs/$what.log" >&2 || true
      die "$what exited during start-up (log: $dir/logs/$what.log)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -n 30 "$dir/logs/$what.log" >&2 || true
      die "$what not ready after ${secs}s (log: $dir/logs/$what.log)"
    fi
    sleep 0.2
  done
}

make_pki() {
  local pki="$dir/pki"
  # A folder from before the API server's certificate named 10.96.0.1 is made again.
  [ -f "$pki/admin.crt" ] && openssl x509 -in "$pki/apiserver.crt" -noout -text 2>/dev/null | grep -q 10.96.0.1 &&
    return 0
  rm -rf "$pki"
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=kubedist-local-ca" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
      -subj "/CN=kube-apiserver" 2>/dev/null
    # 10.250.0.1 and 10.96.0.1: the API server as real nodes and pods see it (nodes.sh).
    printf 'subjectAltName=IP:127.0.0.1,IP:10.250.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt \
      -days 3650 -extfile apiserver.ext 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr \
      -subj "/O=system:masters/CN=kubernetes-admin" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt \
      -days 3650 -extfile client.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f ./*.csr ./*.ext ca.srl
  )
}

write_kubeconfig() {
  local pki="$dir/pki"
  render_template kubeconfig.yaml name="$name" apiserver_port="$apiserver_port" \
    ca_data="$(base64 -w0 "$pki/ca.crt")" cert_data="$(base64 -w0 "$pki/admin.crt")" \
    key_data="$(base64 -w0 "$pki/admin.key")" >"$kubeconfig.tmp"
  mv "$kubeconfig.tmp" "$kubeconfig"
}

# kwok's configuration: the upstream "fast" node and pod stages (from the kwok module the tools were built
# from), so that fake nodes turn Ready, keep their leases, and scheduled pods turn Running at once. Pods
# are never completed by kwok (only Jobs' pods are): tests decide how a pod ends.
write_kwok_config() {
  local stages
  stages="$(cd "$here/tools/kwok" && go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
  [ -d "$stages" ] || (cd "$here/tools/kwok" && go mod download sigs.k8s.io/kwok)
  {
    # kwok applies its option defaults only when it has no configuration file, so this one sets them all.
    render_template kwok.yaml pod_cidr="$pod_cidr" kwok_port="$kwok_port"
    local pod_delete=pod/fast/pod-delete.yaml
    # Without it pods deleted gracefully on kwok nodes stay terminating. The fault suite's burst turns it off and
    # confirms deletions itself, by uid: kwok deletes pods by name after seeing them deleted, and now and then takes
    # the same-named replacement along, a pod loss no test injected.
    [ "${KUBEDIST_KWOK_POD_DELETE:-1}" != 0 ] || pod_delete=""
    for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
      pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml $pod_delete; do
      printf -- '---\n'
      cat "$stages/$f"
    done
  } >"$dir/kwok.yaml"
}

# etcd on its data folder (up empties it first; restart-etcd keeps it).
start_etcd() {
  start etcd "${cp_exec[@]}" "$bin/etcd" --name "kubedist-$name" --data-dir "$dir/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "kubedist-$name=http://127.0.0.1:$etcd_peer_port" \
    --listen-metrics-urls "" --unsafe-no-fsync --quota-backend-bytes=4294967296 --log-level=warn
  wait_for etcd 60 "${cp_exec[@]}" curl -sf "http://127.0.0.1:$etcd_port/health"
}

start_apiserver() {
  local pki="$dir/pki" mode=()
  if [ "$real_nodes" -gt 0 ]; then
    # Pods reach it as 10.96.0.1 (the kubernetes Service), nodes as 10.250.0.1; it reaches kubelets with
    # a client certificate, and pods get their ServiceAccount tokens.
    mode=(--bind-address=0.0.0.0 --advertise-address="$net_addr"
      --kubelet-client-certificate="$pki/kubelet-client.crt" --kubelet-client-key="$pki/kubelet-client.key"
      --kubelet-preferred-address-types=InternalIP --enable-admission-plugins=NodeRestriction)
  else
    # kwok's pods need no tokens; without this admission plugin a pod in a fresh namespace is not refused
    # while its default ServiceAccount is still being created. Nothing reaches the API server through the
    # kubernetes Service here, and since 1.37 its endpoint reconciler refuses a loopback address: none keeps it.
    mode=(--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --disable-admission-plugins=ServiceAccount
      --endpoint-reconciler-type=none)
  fi
  # The audit policy written at up (see there): logs/audit.log.
  if [ -f "$dir/audit-policy.yaml" ]; then
    mode+=(--audit-policy-file="$dir/audit-policy.yaml" --audit-log-path="$dir/logs/audit.log"
      --audit-log-maxsize=0 --audit-log-format=json)
  fi
  start kube-apiserver "${cp_exec[@]}" "$bin/kube-apiserver" "${mode[@]}" --secure-port="$apiserver_port" \
    "${gates[@]}" ${runtime_config:+"--runtime-config=$runtime_config"} \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --service-account-issuer="https://kubernetes.default.svc" \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 \
    --authorization-mode=Node,RBAC \
    --allow-privileged=true \
    --enable-priority-and-fairness=false \
    --profiling=false
  wait_for kube-apiserver 120 kctl get --raw /readyz
}

# Gang scheduling through the Workload API (KEP-4671): Workloads, PodGroups and pods' schedulingGroup in the API
# server, the GangScheduling plugin in the scheduler. 1.37 serves scheduling.k8s.io/v1beta1 behind the beta gate
# GenericWorkload (off by default, as is a beta API; the scheduler's plugin follows that gate); 1.36 serves
# v1alpha2 behind the alpha gates GenericWorkload and GangScheduling. 1.35's v1alpha1 is older than any version the
# operator knows, and 1.34 has none: those run without (a gang job fails saying why).
feature_gates="" runtime_config=""
if [ "$k8s_minor" -ge 37 ]; then
  feature_gates=GenericWorkload=true runtime_config=scheduling.k8s.io/v1beta1=true
elif [ "$k8s_minor" -eq 36 ]; then
  feature_gates=GenericWorkload=true,GangScheduling=true runtime_config=scheduling.k8s.io/v1alpha2=true
fi
gates=(${feature_gates:+"--feature-gates=$feature_gates"})
# The controller-manager's controllers: all but node IPAM and the bootstrap-token ones, and before 1.37 (which no longer
# has them) the cloud provider's; naming a controller a release does not know is an error.
kcm_controllers='*,-nodeipam,-bootstrapsigner,-tokencleaner'
[ "$k8s_minor" -ge 37 ] || kcm_controllers+=',-cloud-node-lifecycle,-service-lb-controller,-route'

start_scheduler() {
  start kube-scheduler "${cp_exec[@]}" "$bin/kube-scheduler" \
    --kubeconfig="$kubeconfig" --authentication-kubeconfig="$kubeconfig" \
    --authorization-kubeconfig="$kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$scheduler_port" --leader-elect=false "${gates[@]}"
  wait_for kube-scheduler 60 "${cp_exec[@]}" curl -skf "https://127.0.0.1:$scheduler_port/healthz"
}

up() {
  local fake=${KUBEDIST_NODES:-4} needed=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)
  if [ "$real_nodes" -gt 0 ]; then
    fake=${KUBEDIST_NODES:-0}
    needed+=(kubelet kube-proxy containerd containerd-shim-runc-v2 ctr coredns registry)
    [ "$(id -u)" -eq 0 ] || die "real nodes need root (network namespaces, cgroups, containers)"
  fi
  if [ -f "$kubeconfig" ] && [ "$(cat "$dir/real-nodes" 2>/dev/null || echo 0)" = "$real_nodes" ] &&
    [ "$(cat "$dir/k8s-version" 2>/dev/null)" = "$k8s_version" ] &&
    status >/dev/null 2>&1 && kctl get --raw /readyz >/dev/null 2>&1; then
    log "already up"
    # Images rebuilt since it came up (a changed operator, launcher or example) reach its registry: the build is
    # cached by content, and the push sends only what the registry lacks.
    [ "$real_nodes" -eq 0 ] || images_up
    echo "$kubeconfig"
    return 0
  fi
  # A half-started or crashed cluster of this name: clear it away first (as it was started).
  "$0" down "$name" >/dev/null 2>&1 || true
  mkdir -p "$dir/run" "$dir/logs"
  link_tools
  for b in "${needed[@]}"; do
    [ -x "$bin/$b" ] || die "$(readlink "$bin/$b") is missing: run deploy/local/tools.sh (or setup.sh) first$(
      [ "$k8s_version" = "$KUBERNETES_VERSION" ] || echo "; Kubernetes $k8s_version: tools.sh matrix")"
  done
  local ports=("$etcd_port" "$etcd_peer_port" "$apiserver_port" "$kcm_port" "$scheduler_port" "$kwok_port")
  [ "$real_nodes" -eq 0 ] || ports=("$apiserver_port" "$registry_port_host")
  for p in "${ports[@]}"; do
    port_free "$p" || die "port $p on 127.0.0.1 is in use; set KUBEDIST_PORT_BASE to another range"
  done
  echo "$real_nodes" >"$dir/real-nodes"
  rm -f "$dir/audit-policy.yaml" "$dir/logs/audit.log"
  # The API server audits the tests' operators always, every other write with KUBEDIST_AUDIT=1 (the template says).
  local writes=None
  [ "${KUBEDIST_AUDIT:-0}" != 1 ] || writes=Metadata
  render_template audit-policy.yaml writes="$writes" >"$dir/audit-policy.yaml"
  make_pki
  write_kubeconfig
  write_kwok_config
  local pki="$dir/pki" t0=$SECONDS
  if [ "$real_nodes" -gt 0 ]; then
    real_pki
    net_up
    forward apiserver-forward "$apiserver_port" "127.0.0.1:$apiserver_port"
  fi

  rm -rf "$dir/etcd-data"
  start_etcd

  start_apiserver

  start kube-controller-manager "${cp_exec[@]}" "$bin/kube-controller-manager" \
    --kubeconfig="$kubeconfig" --authentication-kubeconfig="$kubeconfig" \
    --authorization-kubeconfig="$kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$kcm_port" --leader-elect=false \
    --root-ca-file="$pki/ca.crt" --service-account-private-key-file="$pki/sa.key" \
    --use-service-account-credentials=false \
    --controllers="$kcm_controllers" \
    --node-monitor-grace-period=60s "${gates[@]}"
  start_scheduler
  wait_for kube-controller-manager 60 "${cp_exec[@]}" curl -skf "https://127.0.0.1:$kcm_port/healthz"
  if [ "$fake" -gt 0 ]; then
    start kwok "${cp_exec[@]}" "$bin/kwok" --kubeconfig="$kubeconfig" --config="$dir/kwok.yaml"
    wait_for kwok 60 "${cp_exec[@]}" curl -sf "http://127.0.0.1:$kwok_port/healthz"
    add_nodes "$fake"
    wait_for kwok 60 all_nodes_ready "$fake"
  fi
  if [ "$real_nodes" -gt 0 ]; then
    real_up "$real_nodes"
  fi
  log "up in $((SECONDS - t0))s: $fake fake GPU nodes, $real_nodes real nodes; KUBECONFIG=$kubeconfig"
  echo "$kubeconfig"
}

# link_tools: $bin's links to this cluster's versions of every tool, and the Kubernetes release in k8s-version.
link_tools() {
  local b
  rm -rf "$bin"
  mkdir -p "$bin"
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
    ln -s "$cache/tools/kubernetes-$k8s_version/$b" "$bin/$b"
  done
  ln -s "$cache/tools/etcd-$ETCD_VERSION/etcd" "$bin/etcd"
  for b in kwok kwokctl; do ln -s "$cache/tools/kwok-$KWOK_VERSION/$b" "$bin/$b"; done
  ln -s "$cache/tools/helm-$HELM_VERSION/helm" "$bin/helm"
  ln -s "$cache/tools/registry-$REGISTRY_VERSION/registry" "$bin/registry"
  for b in containerd containerd-shim-runc-v2 ctr; do ln -s "$cache/tools/containerd-$CONTAINERD_VERSION/$b" "$bin/$b"; done
  ln -s "$cache/tools/coredns-$COREDNS_VERSION/coredns" "$bin/coredns"
  ln -s "$cache/tools/kueue-$KUEUE_VERSION/kueue" "$bin/kueue"
  echo "$k8s_version" >"$dir/k8s-version"
}

add_nodes() {
  local n=$1 i
  for i in $(seq 0 $((n - 1))); do
    render_template kwok-node.yaml i="$i"
  done | kctl apply -f - >/dev/null
}

all_nodes_ready() {
  local want=$1 ready
  ready=$(kctl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    grep -c '^True$' || true)
  [ "$ready" -ge "$want" ]
}

down_quiet() {
  local what
  # The operator (started by demo.sh into the same run folder) goes first, then the nodes, the store last.
  stop kubedist-operator
  stop kueue
  stop kwok
  [ "$real_nodes" -eq 0 ] || real_down
  for what in kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop "$what"
  done
  [ "$real_nodes" -eq 0 ] || { stop apiserver-forward; net_down; }
  rm -rf "$dir/etcd-data" "$dir/run" "$dir/real-nodes"
}

down() {
  if [ ! -d "$dir" ]; then
    log "not up"
    return 0
  fi
  down_quiet
  log "down"
}

status() {
  local what state=0 parts=(etcd kube-apiserver kube-controller-manager kube-scheduler) i
  [ "$real_nodes" -gt 0 ] && [ ! -f "$dir/run/kwok.pid" ] || parts+=(kwok)
  if [ "$real_nodes" -gt 0 ]; then
    parts+=(apiserver-forward registry registry-forward coredns)
    for i in $(seq 0 $((real_nodes - 1))); do parts+=("containerd-w$i" "kubelet-w$i" "kube-proxy-w$i"); done
  fi
  for what in "${parts[@]}"; do
    if alive "$what"; then echo "$what: running (pid $(pid_of "$what"))"; else echo "$what: stopped"; state=1; fi
  done
  return $state
}

restart_apiserver() {
  alive kube-apiserver || die "kube-apiserver of cluster $name is not running"
  stop kube-apiserver
  log "kube-apiserver stopped; starting it again"
  start_apiserver
  # kube-scheduler can exit on an API server restart ("Scheduler cache is corrupted"); in a real cluster
  # the kubelet restarts its static pod, here we start a fresh one so the cluster schedules again.
  stop kube-scheduler
  start_scheduler
  log "kube-apiserver back"
}

# etcd stopped (SIGTERM) and started again on the same data: the API server's requests fail meanwhile and its
# watches resume from etcd's revision (the fault suite's control-plane scenario, tests/faults/).
restart_etcd() {
  alive etcd || die "etcd of cluster $name is not running"
  stop etcd
  log "etcd stopped; starting it again"
  start_etcd
  wait_for kube-apiserver 60 kctl get --raw /readyz
  log "etcd back"
}

run_operator() {
  [ -f "$kubeconfig" ] && alive kube-apiserver || die "cluster $name is not up"
  stop kubedist-operator
  start kubedist-operator "$@" --kubeconfig="$kubeconfig"
  sleep 0.5
  alive kubedist-operator || { tail -n 20 "$dir/logs/kubedist-operator.log" >&2; die "the operator exited at start"; }
  log "operator running (pid $(pid_of kubedist-operator), log $dir/logs/kubedist-operator.log)"
}

# Kueue (sigs.k8s.io/kueue, built by tools.sh) against this cluster, the way the TrainingJobs' admission is tested.
# Its webhooks are not registered with the API server (Kueue's own defaulting and validation of its objects is then
# skipped: the tests write complete objects), and its certificate management is off (it would want those webhook
# configurations): the webhook server it always starts and its metrics get a self-signed certificate. Its
# on-demand visibility API (an aggregated API server with certificates of its own) is off.
# Kueue's CRDs, from the pinned module: enough for its objects to be accepted (and validated) by the API server.
kueue_crds() {
  [ -f "$kubeconfig" ] && alive kube-apiserver || die "cluster $name is not up"
  local moddir crds
  moddir=$(cd "$here/tools/kueue" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/kueue) || moddir=""
  [ -n "$moddir" ] || die "Kueue's module is not in the Go module cache: run deploy/local/setup.sh"
  crds="$moddir/config/components/crd/bases"
  kctl apply --server-side --force-conflicts -f "$crds" >/dev/null
  kctl wait --for=condition=Established --timeout=60s -f "$crds" >/dev/null
}

kueue_up() {
  [ -f "$kubeconfig" ] && alive kube-apiserver || die "cluster $name is not up"
  [ "$real_nodes" -eq 0 ] || die "kueue-up runs against clusters with fake nodes only"
  local kdir="$dir/kueue"
  kueue_crds
  kctl get namespace kueue-system >/dev/null 2>&1 || kctl create namespace kueue-system >/dev/null
  alive kueue && return 0
  mkdir -p "$kdir/certs"
  if [ ! -f "$kdir/certs/tls.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=kueue-webhook -addext subjectAltName=IP:127.0.0.1 \
      -keyout "$kdir/certs/tls.key" -out "$kdir/certs/tls.crt" 2>/dev/null
  fi
  render_template kueue-config.yaml health_port="$kueue_health_port" metrics_port="$kueue_metrics_port" \
    webhook_port="$kueue_webhook_port" cert_dir="$kdir/certs" >"$kdir/config.yaml"
  # Without its certificate management Kueue reads a metrics certificate from the fixed path
  # /etc/kueue/metrics/certs (where its chart mounts cert-manager's): it gets ours there through an overlay on /etc
  # in a mount namespace of its own, and the host's /etc stays as it is.
  rm -rf "$kdir/etc" "$kdir/etc-work"
  mkdir -p "$kdir/etc/kueue/metrics" "$kdir/etc-work"
  cp -r "$kdir/certs" "$kdir/etc/kueue/metrics/certs"
  start kueue unshare --mount --propagation private sh -c \
    'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/etc,workdir=$1/etc-work" /etc && shift && exec "$@"' \
    sh "$kdir" "$bin/kueue" --config="$kdir/config.yaml" --kubeconfig="$kubeconfig" \
    --feature-gates=VisibilityOnDemand=false
  wait_for kueue 120 curl -fsS "http://127.0.0.1:$kueue_health_port/readyz"
  log "kueue running (pid $(pid_of kueue), log $dir/logs/kueue.log)"
}

case "$cmd" in
  up) up ;;
  kueue-up) kueue_up ;;
  kueue-crds) kueue_crds ;;
  kueue-down) stop kueue ;;
  run-operator)
    shift 2
    [ $# -ge 1 ] || die "run-operator needs the operator binary"
    run_operator "$@"
    ;;
  down) down ;;
  status) status ;;
  restart-apiserver) restart_apiserver ;;
  restart-etcd) restart_etcd ;;
  node-power-loss | node-restart | node-link)
    [ "$real_nodes" -gt 0 ] || die "$cmd: cluster $name has no real nodes"
    [[ ${3:-} =~ ^[0-9]$ ]] && [ "$3" -lt "$real_nodes" ] || die "$cmd needs a node number from 0 to $((real_nodes - 1)), got '${3:-}'"
    case "$cmd" in
      node-power-loss) node_power_loss "$3" ;;
      node-restart) node_restart "$3" ;;
      node-link) node_link "$3" "${4:-}" ;;
    esac
    ;;
  kubeconfig) echo "$kubeconfig" ;;
  registry) echo "127.0.0.1:$((base + 6))" ;;  # nodes.sh's registry_port_host
  *)
    echo "usage: cluster.sh up|down|status|restart-apiserver|restart-etcd|kubeconfig|registry|kueue-up|kueue-down|kueue-crds [NAME]" >&2
    echo "       cluster.sh node-power-loss|node-restart NAME I; cluster.sh node-link NAME I up|down (real nodes)" >&2
    exit 2
    ;;
esac
