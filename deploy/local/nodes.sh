# Real nodes for the local cluster (sourced by cluster.sh when KUBEDIST_REAL_NODES > 0): each node is a real
# kubelet + containerd + runc + kube-proxy, with Debian's CNI plugins, and CoreDNS answers the cluster's names.
#
# Nothing here touches the host's network: the cluster lives in network namespaces of its own.
#
#   netns kd-NAME        "the network": bridge kdbr0 10.250.0.1/24; the control plane (etcd, kube-apiserver,
#                        controller-manager, scheduler), the image registry (10.250.0.1:5000) and CoreDNS
#                        (10.250.0.1:53); routes to each node's pod CIDR
#   netns kd-NAME-wI     node worker-I: eth0 10.250.0.(10+I), default route via 10.250.0.1; its containerd,
#                        kubelet (10250) and kube-proxy (iptables, in this namespace only); pods on bridge cni0,
#                        10.244.I.0/24
#
# The host reaches the API server and the registry through socat on 127.0.0.1 (the kubeconfig's port and
# port base+6). Processes share the host's mount namespace (kubelet and containerd must see each other's
# mounts); every mount they make lies under the node's folders and is removed by nodes_down.
#
# Two kubelets share one kernel, so each has its own cgroup root (/kubedist-NAME-wI in every cgroup v1
# hierarchy), root dir, containerd state and sockets, CNI state and pod CIDR. This machine has cgroup v1
# only: the kubelet is configured with failCgroupV1: false (cgroup v1 is deprecated since Kubernetes 1.35
# and containerd 2.2, still supported).
#
# This machine's root lacks CAP_SYS_RESOURCE (no process may lower its OOM score): containerd is told
# restrict_oom_score_adj and kube-proxy oomScoreAdj 0, else runc fails every sandbox with "failed to update
# /proc/self/oom_score_adj: Permission denied" ("can't get final child's PID from pipe: EOF").
#
# Needs: root, Debian's runc, containernetworking-plugins, iptables, conntrack and socat, and the tools
# containerd, containerd-shim-runc-v2, ctr, kubelet, kube-proxy, coredns and registry (tools.sh).

net_ns="kd-$name"
net_addr=10.250.0.1
registry_port_host=$((base + 6))
registry_addr="$net_addr:5000"
node_base_ip=10  # worker-I is 10.250.0.(10+I)
pod_cidr_prefix=10.244
service_cidr=10.96.0.0/16
cluster_domain=cluster.local
run_root="/run/kubedist/$name"  # sockets want short paths

net_exec=(nsenter --net="/run/netns/$net_ns")
in_net() { "${net_exec[@]}" "$@"; }
node_ns() { echo "kd-$name-w$1"; }
node_name() { echo "worker-$1"; }
node_ip() { echo "10.250.0.$((node_base_ip + $1))"; }
node_dir() { echo "$dir/nodes/$(node_name "$1")"; }
node_run() { echo "$run_root/w$1"; }
in_node() {
  local i=$1
  shift
  nsenter --net="/run/netns/$(node_ns "$i")" "$@"
}

real_nodes_count() { cat "$dir/real-nodes" 2>/dev/null || echo 0; }

# --- the network namespace of the cluster --------------------------------------------------------------

net_up() {
  ip netns add "$net_ns"
  ip -n "$net_ns" link set lo up
  ip -n "$net_ns" link add kdbr0 type bridge
  ip -n "$net_ns" addr add "$net_addr/24" dev kdbr0
  ip -n "$net_ns" link set kdbr0 up
  in_net sysctl -qw net.ipv4.ip_forward=1
}

net_down() {
  ip netns del "$net_ns" 2>/dev/null || true
}

# forward HOSTPORT ADDR:PORT: the host's 127.0.0.1:HOSTPORT reaches ADDR:PORT inside the cluster's network.
forward() {
  local what=$1 hostport=$2 target=$3
  start "$what" socat "TCP-LISTEN:$hostport,bind=127.0.0.1,reuseaddr,fork" \
    "EXEC:nsenter --net=/run/netns/$net_ns socat STDIO TCP\\:${target//:/\\:}"
}

# --- certificates -------------------------------------------------------------------------------------

# sign NAME SUBJECT EXTENSIONS: a key and a certificate signed by the cluster's CA, in $dir/pki.
sign() {
  local pki="$dir/pki" n=$1
  [ -f "$pki/$n.crt" ] && return 0
  openssl req -newkey rsa:2048 -nodes -keyout "$pki/$n.key" -out "$pki/$n.csr" -subj "$2" 2>/dev/null
  printf '%s\n' "$3" >"$pki/$n.ext"
  openssl x509 -req -in "$pki/$n.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -out "$pki/$n.crt" -days 3650 -extfile "$pki/$n.ext" 2>/dev/null
  rm -f "$pki/$n.csr" "$pki/$n.ext" "$pki/ca.srl"
}

# kubeconfig_for FILE SERVER CERT: a kubeconfig for the client certificate CERT ($dir/pki/CERT.{crt,key}).
kubeconfig_for() {
  local pki="$dir/pki"
  render_template kubeconfig-files.yaml name="$name" server="$2" pki="$pki" user="$3" >"$1"
}

real_pki() {
  sign kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
  sign kube-proxy "/CN=system:kube-proxy" "extendedKeyUsage=clientAuth"
  local i n
  for i in $(seq 0 $(($(real_nodes_count) - 1))); do
    n=$(node_name "$i")
    sign "$n" "/O=system:nodes/CN=system:node:$n" "extendedKeyUsage=clientAuth"
    sign "$n-serving" "/CN=$n" "subjectAltName=IP:$(node_ip "$i"),DNS:$n
extendedKeyUsage=serverAuth"
  done
}

# --- the registry and CoreDNS, inside the cluster's network ---------------------------------------------

# The registry keeps its blobs under $cache/registry across clusters, so a new cluster pushes nothing it has.
registry_up() {
  start registry "${net_exec[@]}" "$here/images.sh" serve-registry "$cache/registry" "${registry_addr#*:}" \
    "${registry_addr%:*}"
  forward registry-forward "$registry_port_host" "$registry_addr"
  wait_for registry 60 curl -sf "http://127.0.0.1:$registry_port_host/v2/"
}

# The images the nodes run: built (cached by content) and pushed to this cluster's registry.
images_up() {
  "$here/images.sh" build >&2
  KUBEDIST_REGISTRY_LOG="$dir/logs/registry.log" "$here/images.sh" push "127.0.0.1:$registry_port_host" >&2
  # shellcheck disable=SC1091
  . "$cache/images/images.env"
}

coredns_up() {
  kubeconfig_for "$dir/coredns.kubeconfig" "https://127.0.0.1:$apiserver_port" admin
  render_template Corefile cluster_domain="$cluster_domain" net_addr="$net_addr" \
    kubeconfig="$dir/coredns.kubeconfig" name="$name" >"$dir/Corefile"
  start coredns "${net_exec[@]}" "$bin/coredns" -conf "$dir/Corefile"
  wait_for coredns 60 in_net curl -sf "http://$net_addr:8181/ready"
}

# --- one node -------------------------------------------------------------------------------------------

cgroup_root() { echo "kubedist-$name-w$1"; }

# Every cgroup v1 hierarchy gets the node's root; cpuset children start empty, so they inherit the parent's.
cgroups_up() {
  local root h
  root=$(cgroup_root "$1")
  for h in /sys/fs/cgroup/*/; do
    [ -f "$h/cgroup.procs" ] || continue
    mkdir -p "$h$root"
  done
  if [ -d /sys/fs/cgroup/cpuset ]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$root/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$root/cpuset.mems"
  fi
}

# Kills whatever still runs in the node's cgroups (containers), then removes them, deepest first.
cgroups_down() {
  local root h pass
  root=$(cgroup_root "$1")
  for pass in 1 2 3 4 5; do
    local left=0
    for h in /sys/fs/cgroup/*/; do
      [ -d "$h$root" ] || continue
      while read -r p; do
        kill -KILL "$p" 2>/dev/null && left=1
      done < <(find "$h$root" -name cgroup.procs -exec cat {} + 2>/dev/null)
    done
    [ $left -eq 0 ] && break
    sleep 0.2
  done
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h$root" ] || continue
    find "$h$root" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

node_net_up() {
  local i=$1 ns ip
  ns=$(node_ns "$i")
  ip=$(node_ip "$i")
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  # A node started again after a power loss (node_restart) may find its old link still there, kept by a namespace
  # that outlived its name: deleting one end of the pair deletes both.
  ip -n "$net_ns" link del "w$i" 2>/dev/null || true
  ip -n "$net_ns" link add "w$i" type veth peer name eth0 netns "$ns"
  ip -n "$net_ns" link set "w$i" master kdbr0 up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "$net_addr"
  # replace: a node started again after a power loss (node_restart) finds its route still there.
  ip -n "$net_ns" route replace "$pod_cidr_prefix.$i.0/24" via "$ip"
  in_node "$i" sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
}

write_node_config() {
  local i=$1 d r n ip pki="$dir/pki"
  d=$(node_dir "$i")
  r=$(node_run "$i")
  n=$(node_name "$i")
  ip=$(node_ip "$i")
  mkdir -p "$d/cni" "$d/certs.d/$registry_addr" "$d/containerd" "$r"

  render_template cni.conflist ipam_dir="$d/cni-ipam" pod_subnet="$pod_cidr_prefix.$i.0/24" \
    >"$d/cni/10-kubedist.conflist"

  # The registry speaks plain HTTP on the cluster's network.
  render_template registry-hosts.toml registry_addr="$registry_addr" >"$d/certs.d/$registry_addr/hosts.toml"

  render_template containerd.toml root="$d/containerd" state="$r/containerd" run="$r" \
    pause_image="$registry_addr/$KUBEDIST_PAUSE_IMAGE" certs_dir="$d/certs.d" cni_dir="$d/cni" >"$d/containerd.toml"

  kubeconfig_for "$d/kubelet.kubeconfig" "https://$net_addr:$apiserver_port" "$n"
  kubeconfig_for "$d/kube-proxy.kubeconfig" "https://$net_addr:$apiserver_port" kube-proxy
  printf 'nameserver %s\n' "$net_addr" >"$d/resolv.conf"

  render_template kubelet.yaml cgroup_root="$(cgroup_root "$i")" ip="$ip" pki="$pki" node="$n" \
    cluster_dns="$net_addr" cluster_domain="$cluster_domain" node_dir="$d" run="$r" >"$d/kubelet.yaml"

  render_template kube-proxy.yaml kubeconfig="$d/kube-proxy.kubeconfig" node="$n" \
    cluster_cidr="$pod_cidr_prefix.0.0/16" ip="$ip" >"$d/kube-proxy.yaml"
}

# Our images that a later build superseded, removed from node I's containerd before its kubelet starts: the kubelet's
# image GC waits for a full disk (kubelet.yaml), so a long-lived machine would keep every torch 2.15 example image
# it ever pulled, 5 GB each.
prune_node_images() {
  local ctr=("$bin/ctr" --address "$(node_run "$1")/containerd.sock" -n k8s.io) wanted=" " keep=" " line ref digest
  while IFS= read -r line; do wanted+="$registry_addr/${line#*=} "; done <"$cache/images/images.env"
  # ctr images ls: REF TYPE DIGEST SIZE PLATFORMS LABELS. Kept: the manifests images.env names, what our other
  # tags name (:latest, pause's version: the kubelet moves them when it pulls them again) and any other registry's.
  while read -r ref _ digest _; do
    if [[ $wanted == *" $ref "* || ($ref == "$registry_addr/kubedist/"*:* && ! $ref =~ @ &&
          ! $ref =~ :[0-9.]+-[0-9a-f]{12}$) || ($ref != "$registry_addr/kubedist/"* && $ref != sha256:*) ]]; then
      keep+="$digest "
    fi
  done < <("${ctr[@]}" images ls | tail -n +2)
  # The rest of ours, with the kubelet's image-id references (sha256:<config>) to them, the last that keep layers.
  while read -r ref _ digest _; do
    [[ ($ref == "$registry_addr/kubedist/"* || $ref =~ ^sha256:[0-9a-f]{64}$) && $keep != *" $digest "* ]] || continue
    "${ctr[@]}" images rm --sync "$ref" >/dev/null || continue
    [[ $ref == sha256:* ]] || log "worker-$1: $ref superseded (removed)"
  done < <("${ctr[@]}" images ls | tail -n +2)
  return 0
}

node_up() {
  local i=$1 d r n what
  d=$(node_dir "$i")
  r=$(node_run "$i")
  n=$(node_name "$i")
  cgroups_up "$i"
  node_net_up "$i"
  # This start's logs alone (configs_strict reads them); the previous start's stay as .1.
  for what in "containerd-w$i" "kubelet-w$i" "kube-proxy-w$i"; do
    [ -f "$dir/logs/$what.log" ] && mv "$dir/logs/$what.log" "$dir/logs/$what.log.1"
  done
  write_node_config "$i"
  local ns_exec=(nsenter --net="/run/netns/$(node_ns "$i")")
  start "containerd-w$i" "${ns_exec[@]}" "$bin/containerd" --config "$d/containerd.toml"
  wait_for "containerd-w$i" 60 "$bin/ctr" --address "$r/containerd.sock" version
  prune_node_images "$i"
  start "kubelet-w$i" "${ns_exec[@]}" "$bin/kubelet" --config="$d/kubelet.yaml" \
    --kubeconfig="$d/kubelet.kubeconfig" --root-dir="$d/kubelet" --hostname-override="$n" \
    --node-ip="$(node_ip "$i")" --node-labels="kubedist.io/local-node=real" --v=1
  start "kube-proxy-w$i" "${ns_exec[@]}" "$bin/kube-proxy" --config="$d/kube-proxy.yaml"
}

# The kubelet and kube-proxy fall back to lenient decoding of their configuration files: a misspelt field
# would be ignored, so it is an error here.
configs_strict() {
  local what
  for what in "kubelet-w$1" "kube-proxy-w$1"; do
    if grep -h "strict decoding error" "$dir/logs/$what.log"; then
      die "$what: its configuration has a field it does not know (log: $dir/logs/$what.log)"
    fi
  done
}

node_ready() {
  [ "$(kctl get node "$(node_name "$1")" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# nvidia.com/gpu as an extended resource through the node's status, the documented way ("Advertise Extended
# Resources for a Node"); the kubelet derives allocatable. A kubelet restart zeroes it, so up sets it again.
advertise_gpus() {
  local n
  n=$(node_name "$1")
  kctl patch node "$n" --subresource=status --type=json \
    -p "[{\"op\":\"add\",\"path\":\"/status/capacity/nvidia.com~1gpu\",\"value\":\"${KUBEDIST_NODE_GPUS:-4}\"}]" >/dev/null
}

gpus_advertised() {
  [ "$(kctl get node "$(node_name "$1")" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')" = \
    "${KUBEDIST_NODE_GPUS:-4}" ]
}

# Unmounts everything a node's kubelet, containerd and shims left under its folders, deepest first.
unmount_under() {
  local prefix
  for prefix in "$@"; do
    findmnt -rn -o TARGET | awk -v p="$prefix" 'index($0, p) == 1' | sort -r | while read -r m; do
      umount -l "$m" 2>/dev/null || true
    done
  done
}

node_down() {
  local i=$1 d r
  d=$(node_dir "$i")
  r=$(node_run "$i")
  stop "kube-proxy-w$i"
  stop "kubelet-w$i"
  cgroups_down "$i"
  stop "containerd-w$i"
  pkill -KILL -f -- "-address $r/containerd.sock" 2>/dev/null || true
  unmount_under "$d/" "$r/"
  ip netns del "$(node_ns "$i")" 2>/dev/null || true
  # Pods and their state go; the image store (containerd root) stays for the next start.
  rm -rf "$d/kubelet" "$d/cni-ipam" "$d/pod-logs" "$r"
}

# --- faults (tests/e2e/real) -------------------------------------------------------------------------------

# node_power_loss I: worker-I loses its power: every process of it killed at once (kubelet, kube-proxy, containerd,
# the shims, every container in its cgroups), and its link to the network down (its address answers nothing any
# more). Nothing is cleaned up, as nothing would be; node_restart brings it back.
node_power_loss() {
  local i=$1 r root h what p victims=() pass
  r=$(node_run "$i")
  root=$(cgroup_root "$i")
  [ -d "/run/netns" ] && ip netns list | grep -qw "$(node_ns "$i")" || die "worker-$i is not up"
  for what in "kubelet-w$i" "kube-proxy-w$i" "containerd-w$i"; do
    p=$(pid_of "$what")
    [ -n "$p" ] && victims+=("-$p")
  done
  while read -r p; do victims+=("$p"); done < <(pgrep -f -- "-address $r/containerd.sock" || true)
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h$root" ] || continue
    while read -r p; do victims+=("$p"); done < <(find "$h$root" -name cgroup.procs -exec cat {} + 2>/dev/null)
  done
  # The link first: a node without power sends nothing more, not even the FIN of its dying connections.
  ip -n "$net_ns" link set "w$i" down
  kill -KILL -- "${victims[@]}" 2>/dev/null || true
  # Whatever forked between the listing and the kill.
  for pass in 1 2 3; do
    for h in /sys/fs/cgroup/*/; do
      [ -d "$h$root" ] || continue
      find "$h$root" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    done
  done
  log "worker-$i lost its power: ${#victims[@]} processes killed at once, its link down"
}

# node_restart I: worker-I starts again after a power loss: what the dead processes left is cleared (node_down),
# and the node comes up as up brings it (its Node object is the same; its pods are gone).
node_restart() {
  local i=$1
  # What up read when it pushed the images: the pause image the node's containerd is configured with.
  # shellcheck disable=SC1091
  . "$cache/images/images.env"
  node_down "$i"
  node_up "$i"
  wait_for "kubelet-w$i" 180 node_ready "$i"
  configs_strict "$i"
  advertise_gpus "$i"
  wait_for "kubelet-w$i" 60 gpus_advertised "$i"
  log "worker-$i is up again"
}

# node_link I up|down: worker-I's link to the network (a cut cable, a dead switch port); its processes run on.
node_link() {
  case "$2" in up | down) ;; *) die "node-link needs up or down, got '$2'" ;; esac
  ip -n "$net_ns" link set "w$1" "$2"
  log "worker-$1's link is $2"
}

# --- the whole set ----------------------------------------------------------------------------------------

real_up() {
  local n=$1 i
  registry_up
  images_up
  coredns_up
  for i in $(seq 0 $((n - 1))); do node_up "$i"; done
  for i in $(seq 0 $((n - 1))); do
    wait_for "kubelet-w$i" 180 node_ready "$i"
    configs_strict "$i"
    advertise_gpus "$i"
  done
  for i in $(seq 0 $((n - 1))); do wait_for "kubelet-w$i" 60 gpus_advertised "$i"; done
}

real_down() {
  local n i
  n=$(real_nodes_count)
  for i in $(seq 0 $((n - 1))); do node_down "$i"; done
  stop coredns
  stop registry-forward
  stop registry
  rm -rf "$run_root"
}
