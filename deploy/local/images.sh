#!/usr/bin/env bash
# kubedist's container images, built for real with Debian's buildah, without pulling anything from a registry:
# a Debian bookworm base made with debootstrap from Debian's mirror, and on it the images below.
#
#   images.sh build                  build what is missing; a second run with nothing changed skips everything
#   images.sh push ADDR [VAR...]     push every image (or those images.env names by VAR) to the plain-http
#                                    registry ADDR (host:port), as ADDR/<name>:<tag>; an image whose content tag
#                                    ADDR already has is skipped
#   images.sh registry-config DIR PORT [ADDR]
#                                    write DIR/config.yml for the distribution registry (tools.sh builds
#                                    $KUBEDIST_CACHE/tools/registry-*/registry): storage under DIR/storage, plain http on
#                                    ADDR:PORT (default ADDR 127.0.0.1), no auth; prints the file's path
#   images.sh serve-registry DIR PORT [ADDR]
#                                    registry-config, then exec `registry serve DIR/config.yml` (foreground);
#                                    first, unless a registry serves DIR already, our images' content tags that
#                                    images.env does not name are untagged and what only they held is collected
#
# The images (names without a registry; a consumer puts its registry in front):
#   kubedist/operator:V-H      deploy/docker/Dockerfile --target operator (non-root 65532, Debian runtime libs)
#   kubedist/launcher:V-H      deploy/docker/Dockerfile --target launcher (FROM scratch: the static launcher alone)
#   kubedist/example-cpu:V-H   crd/examples/cpu/Dockerfile (Debian's python3-torch, pip and train.py), also :latest
#   kubedist/example-torch2:V-H  the same Dockerfile with the torch of deploy/local/torch2-requirements.txt from
#                              PyPI (torch 2.15 and the libraries the tests train with; about 5.2 GB, the first
#                              build downloads it in some minutes), also :latest
#   kubedist/pause:V-H         Kubernetes' build/pause/linux/pause.c (gcc -static -Os), FROM scratch, for the
#                              kubelet's pod sandboxes; also tagged with pause's own version (e.g. :3.10.2)
# V is the project version (CMakeLists.txt), H the first 12 hex digits of a sha256 over the image's inputs
# (Dockerfile, the files it copies, build arguments, base image id; for pause its source, compiler and flags).
# An image whose tag exists is not built again. `build` writes $KUBEDIST_CACHE/images/images.env:
#   KUBEDIST_OPERATOR_IMAGE=kubedist/operator:0.1.0-0123456789ab
#   KUBEDIST_LAUNCHER_IMAGE=...  KUBEDIST_EXAMPLE_CPU_IMAGE=...  KUBEDIST_EXAMPLE_TORCH2_IMAGE=...
#   KUBEDIST_PAUSE_IMAGE=...
# and `push` reads it.
#
# The base, localhost/kubedist/debian:bookworm-H (also :bookworm), is `debootstrap --variant=minbase bookworm`,
# kept while its inputs (suite, mirrors, debootstrap's version) stay the same: `buildah rmi` it to refresh it.
# Environment: PIP_INDEX_URL and PIP_CERT (a CA bundle) reach the torch 2.15 build's pip as this machine's pip
# has them; KUBEDIST_CACHE (default <repo>/.cache), KUBEDIST_DEBIAN_MIRROR (default
# http://deb.debian.org/debian), KUBEDIST_DEBIAN_SECURITY_MIRROR (default http://deb.debian.org/debian-security),
# KUBEDIST_BUILDAH_ISOLATION (how RUN steps run: chroot, the default, or oci).
# Needs root, buildah and debootstrap (setup.sh installs them), and gcc for pause.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${KUBEDIST_CACHE:-$repo/.cache}
images_dir="$cache/images"
env_file="$images_dir/images.env"
mirror=${KUBEDIST_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${KUBEDIST_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
suite=bookworm
# How buildah runs a Dockerfile's RUN steps. chroot needs no OCI runtime and no cgroups (crun refuses this
# machine's hybrid cgroup v1/v2 layout); set oci to use one.
isolation=${KUBEDIST_BUILDAH_ISOLATION:-chroot}
# shellcheck source=versions.sh
. "$here/versions.sh"

log() { printf '[images] %s\n' "$*" >&2; }
die() { printf 'images.sh: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

project_version() { sed -n 's/^project(kubedist VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt"; }

# hash_inputs TEXT FILE-OR-DIR...: 12 hex digits of a sha256 over TEXT and every file's path and content.
hash_inputs() {
  local text=$1
  shift
  {
    printf '%s\n' "$text"
    (cd "$repo" && find "$@" -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z |
      xargs -0 -r sha256sum)
  } | sha256sum | cut -c1-12
}

have_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }
image_id() { buildah inspect --type image --format '{{.FromImageID}}' "$1"; }

# The sources a Dockerfile copies from its context (COPY lines without --from).
copied_sources() {
  sed -n 's/^COPY \([^-][^ ]*\( [^ ]*\)*\) [^ ]*$/\1/p' "$1" | tr ' ' '\n'
}

build_base() {
  local inputs hash name
  inputs="suite=$suite variant=minbase mirror=$mirror security=$security_mirror $(debootstrap --version)"
  # The recipe is an input too: this very function's text.
  hash=$(printf '%s\n' "$inputs" "$(declare -f build_base)" | sha256sum | cut -c1-12)
  name="localhost/kubedist/debian:$suite-$hash"
  if have_image "$name"; then
    log "base $name: up to date (skipped)"
  else
    local root="$images_dir/debootstrap.partial" start=$SECONDS ctr mnt
    rm -rf "$root"
    log "base $name: debootstrap --variant=minbase $suite from $mirror (takes minutes)"
    debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$images_dir/debootstrap.log" 2>&1 ||
      die "debootstrap failed; see $images_dir/debootstrap.log"
    # As Debian's own images: the suite, its updates and security, one sources file; no caches.
    rm -f "$root/etc/apt/sources.list" "$root/etc/hostname"
    cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security_mirror
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    : >"$root/etc/resolv.conf"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/dev/* "$root"/proc/* \
      "$root"/sys/* "$root"/run/*
    ctr=$(buildah from scratch)
    trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT  # also when a step fails
    mnt=$(buildah mount "$ctr")
    tar -C "$root" --numeric-owner -cf - . | tar -C "$mnt" --numeric-owner -xpf -
    buildah umount "$ctr" >/dev/null
    buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd '["bash"]' \
      --label "io.kubedist.inputs=$inputs" "$ctr"
    buildah commit --quiet --rm "$ctr" "$name" >/dev/null
    trap - EXIT
    rm -rf "$root"
    log "base $name: built in $((SECONDS - start))s"
  fi
  buildah tag "$name" "localhost/kubedist/debian:$suite"
  base_image=$name
}

# bud_image VAR NAME DOCKERFILE CONTEXT [BUD ARGS...]: builds NAME:<version>-<hash> unless it exists.
bud_image() {
  local var=$1 name=$2 dockerfile=$3 context=$4
  shift 4
  local rel_context=${context#"$repo"/} sources=() src hash tag
  [ "$context" = "$repo" ] && rel_context=.
  while read -r src; do sources+=("$rel_context/$src"); done < <(copied_sources "$dockerfile")
  hash=$(hash_inputs "$(printf '%s\n' "$@") base=$(image_id "$base_image")" "${dockerfile#"$repo"/}" "${sources[@]}")
  tag="$name:$version-$hash"
  if have_image "localhost/$tag"; then
    log "$tag: up to date (skipped)"
  else
    local start=$SECONDS
    log "$tag: building ($(basename "$(dirname "$dockerfile")")/$(basename "$dockerfile") $*)"
    buildah bud --quiet --layers --force-rm --pull=never --network host --isolation "$isolation" --format oci \
      -f "$dockerfile" -t "localhost/$tag" \
      "$@" "$context" >"$images_dir/$(basename "$name").log" 2>&1 ||
      { tail -20 "$images_dir/$(basename "$name").log" >&2; die "building $tag failed; see $images_dir/$(basename "$name").log"; }
    log "$tag: built in $((SECONDS - start))s"
  fi
  built+=("$var=$tag")
}

pause_source() {
  local modcache
  modcache=$(cd "$here/tools/kubernetes" && go env GOMODCACHE)
  printf '%s' "$modcache/k8s.io/kubernetes@$KUBERNETES_VERSION/build/pause"
}

build_pause() {
  local dir pause_version cflags hash tag
  dir=$(pause_source)
  [ -f "$dir/linux/pause.c" ] ||
    die "no $dir/linux/pause.c: run deploy/local/tools.sh (it downloads k8s.io/kubernetes $KUBERNETES_VERSION)"
  pause_version=$(sed -n 's/^TAG ?= *//p' "$dir/Makefile")
  [ -n "$pause_version" ] || die "no TAG in $dir/Makefile"
  # As build/pause/Makefile, with the Kubernetes version in place of its git revision.
  cflags="-Os -Wall -Werror -static -DVERSION=v$pause_version-$KUBERNETES_VERSION"
  hash=$( {
    printf '%s\n' "$cflags" "$(gcc --version | head -1)" "$(declare -f build_pause)"
    cat "$dir/linux/pause.c"
  } | sha256sum | cut -c1-12)
  tag="kubedist/pause:$version-$hash"
  if have_image "localhost/$tag"; then
    log "$tag: up to date (skipped)"
  else
    local work ctr
    work=$(mktemp -d "$images_dir/pause.XXXXXX")
    # shellcheck disable=SC2086 # cflags is a list of flags
    gcc $cflags -o "$work/pause" "$dir/linux/pause.c"
    strip "$work/pause"
    ctr=$(buildah from scratch)
    trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
    buildah copy --quiet "$ctr" "$work/pause" /pause >/dev/null
    buildah config --user 65535:65535 --entrypoint '["/pause"]' --label "io.kubedist.pause-version=$pause_version" "$ctr"
    buildah commit --quiet --rm --format oci "$ctr" "localhost/$tag" >/dev/null
    trap - EXIT
    rm -rf "$work"
    log "$tag: built (pause $pause_version from k8s.io/kubernetes $KUBERNETES_VERSION)"
  fi
  buildah tag "localhost/$tag" "localhost/kubedist/pause:$pause_version"
  built+=("KUBEDIST_PAUSE_IMAGE=$tag")
}

# Our images that this build superseded (another content tag of the same name, of any project version): removed,
# so that a long-lived machine keeps one of each, not one more (up to 6 GB) per change. Build caches stay.
prune_superseded() {
  local keep=" ${built[*]#*=} " ref
  while read -r ref; do
    [[ $ref =~ ^localhost/(kubedist/[a-z0-9-]+:[0-9.]+-[0-9a-f]{12})$ ]] || continue
    [[ $keep == *" ${BASH_REMATCH[1]} "* ]] && continue
    buildah rmi "$ref" >/dev/null 2>&1 && log "$ref: superseded (removed)"
  done < <(buildah images --format '{{.Name}}:{{.Tag}}')
  return 0
}

cmd_build() {
  command -v buildah >/dev/null && command -v debootstrap >/dev/null ||
    die "buildah and debootstrap are needed (deploy/local/setup.sh installs them)"
  [ "$(id -u)" -eq 0 ] || die "build needs root (debootstrap, buildah's root storage)"
  mkdir -p "$images_dir"
  exec 9>"$images_dir/.lock"
  flock 9  # one build at a time on this machine
  local start=$SECONDS
  version=$(project_version)
  [ -n "$version" ] || die "no project version in $repo/CMakeLists.txt"
  built=()
  build_base
  local bases=(--build-arg "BUILD_BASE=$base_image" --build-arg "RUNTIME_BASE=$base_image")
  bud_image KUBEDIST_OPERATOR_IMAGE kubedist/operator "$repo/deploy/docker/Dockerfile" "$repo" --target operator "${bases[@]}"
  bud_image KUBEDIST_LAUNCHER_IMAGE kubedist/launcher "$repo/deploy/docker/Dockerfile" "$repo" --target launcher "${bases[@]}"
  bud_image KUBEDIST_EXAMPLE_CPU_IMAGE kubedist/example-cpu "$repo/crd/examples/cpu/Dockerfile" "$repo/crd/examples/cpu" \
    --build-arg "BASE=$base_image"
  buildah tag "localhost/${built[-1]#*=}" localhost/kubedist/example-cpu:latest
  local pins
  pins=$(sed -e 's/#.*//' "$here/torch2-requirements.txt" | xargs)
  [ -n "$pins" ] || die "$here/torch2-requirements.txt pins nothing"
  # This machine's pip settings for reaching PyPI (an index of its own, a proxy's CA bundle) go into the build.
  local pip_args=()
  [ -z "${PIP_INDEX_URL:-}" ] || pip_args+=(--build-arg "PIP_INDEX=$PIP_INDEX_URL")
  if [ -n "${PIP_CERT:-}" ]; then
    [ -f "$PIP_CERT" ] || die "PIP_CERT names no file: $PIP_CERT"
    pip_args+=(--volume "$PIP_CERT:/run/kubedist-pip-cert.pem:ro" --build-arg PIP_CERT_FILE=/run/kubedist-pip-cert.pem)
  fi
  bud_image KUBEDIST_EXAMPLE_TORCH2_IMAGE kubedist/example-torch2 "$repo/crd/examples/cpu/Dockerfile" \
    "$repo/crd/examples/cpu" --build-arg "BASE=$base_image" --build-arg "PIP_TORCH=$pins" "${pip_args[@]}"
  buildah tag "localhost/${built[-1]#*=}" localhost/kubedist/example-torch2:latest
  build_pause
  printf '%s\n' "${built[@]}" >"$env_file.partial"
  mv "$env_file.partial" "$env_file"
  prune_superseded
  log "images ready in $((SECONDS - start))s; $env_file:"
  cat "$env_file" >&2
}

# registry_has ADDR NAME TAG: the registry serves that tag's manifest.
registry_has() {
  curl -fsS -o /dev/null -I -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$1/v2/$2/manifests/$3" 2>/dev/null
}

# retag ADDR NAME FROM TO: TO names the very manifest FROM names (the same bytes, so the same digest).
retag() {
  local addr=$1 name=$2 from=$3 to=$4 tmp ctype
  tmp=$(mktemp -d)
  curl -fsS -D "$tmp/headers" -o "$tmp/manifest" -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$addr/v2/$name/manifests/$from"
  ctype=$(sed -n 's/^[Cc]ontent-[Tt]ype: *\([^;[:space:]]*\).*/\1/p' "$tmp/headers" | tail -1)
  curl -fsS -o /dev/null -X PUT -H "Content-Type: $ctype" --data-binary "@$tmp/manifest" \
    "http://$addr/v2/$name/manifests/$to"
  rm -rf "$tmp"
}

# push_one ADDR IMAGE: buildah push, tried up to 3 times. A registry may answer a multi-gigabyte chunked upload
# with a 500 once (CI saw one on the torch 2.15 example's layer); a retry sends only the blobs it still lacks.
# After the last try the registry's log (KUBEDIST_REGISTRY_LOG, set by nodes.sh) and its free space are shown.
push_one() {
  local addr=$1 image=$2 try
  for try in 1 2 3; do
    if [ "$try" -eq 1 ]; then log "$addr/$image: pushing"; else log "$addr/$image: pushing (try $try of 3)"; fi
    if buildah push --quiet --tls-verify=false "localhost/$image" "docker://$addr/$image" >/dev/null; then
      return 0
    fi
    [ "$try" -lt 3 ] && sleep $((try * 5))
  done
  if [ -n "${KUBEDIST_REGISTRY_LOG:-}" ] && [ -f "$KUBEDIST_REGISTRY_LOG" ]; then
    log "the registry's log ($KUBEDIST_REGISTRY_LOG), last 30 lines:"
    tail -n 30 "$KUBEDIST_REGISTRY_LOG" >&2
  fi
  df -h "$cache" >&2 || true
  die "pushing $image to $addr failed 3 times"
}

cmd_push() {
  local addr=${1:-} only=("${@:2}")
  [[ $addr =~ ^[A-Za-z0-9.-]+:[0-9]+$ ]] || die "push needs the registry as HOST:PORT, got '${addr}'"
  [ -f "$env_file" ] || die "no $env_file: run images.sh build first"
  curl -fs -o /dev/null "http://$addr/v2/" || die "no registry answers at http://$addr/v2/"
  local line image name tag start=$SECONDS
  while IFS= read -r line; do
    if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" ${line%%=*} "* ]]; then continue; fi
    image=${line#*=}
    name=${image%:*}
    tag=${image##*:}
    if registry_has "$addr" "$name" "$tag"; then
      log "$addr/$image: present (skipped)"
    else
      push_one "$addr" "$image"
    fi
    case $name in
      kubedist/example-cpu | kubedist/example-torch2) retag "$addr" "$name" "$tag" latest ;;
      kubedist/pause)
        retag "$addr" "$name" "$tag" \
          "$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "io.kubedist.pause-version"}}' "localhost/$image")"
        ;;
    esac
  done <"$env_file"
  log "pushed to $addr in $((SECONDS - start))s"
}

cmd_registry_config() {
  local dir=${1:-} port=${2:-} addr=${3:-127.0.0.1}
  [ -n "$dir" ] && [[ $port =~ ^[0-9]+$ ]] || die "usage: images.sh registry-config DIR PORT [ADDR]"
  mkdir -p "$dir/storage"
  dir=$(cd "$dir" && pwd)
  cat >"$dir/config.yml" <<EOF
# The local image registry (distribution $REGISTRY_VERSION): plain http, no auth, blobs on the file system.
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: $addr:$port
  secret: kubedist-local-registry
EOF
  printf '%s\n' "$dir/config.yml"
}

# prune_registry REGISTRY CONFIG: the content tags (V-H) of our images that the last build's images.env does not
# name are removed from the registry's storage, and `registry garbage-collect` deletes the manifests and blobs only
# they held: a long-lived machine would otherwise keep every image it ever pushed, the torch 2.15 example's 3 GB
# each time its pins change. Only while nothing serves that storage (the registry cannot collect while serving).
prune_registry() {
  local registry=$1 config=$2 dir repos tag_dir name tag keep
  dir=$(dirname "$config")
  repos="$dir/storage/docker/registry/v2/repositories"
  [ -d "$repos/kubedist" ] && [ -f "$env_file" ] || return 0
  if pgrep -f -- "serve $config" >/dev/null; then return 0; fi
  keep=" $(sed 's/^[^=]*=//' "$env_file" | tr '\n' ' ') "
  local removed=0
  local kept_links=" "
  for tag_dir in "$repos"/kubedist/*/_manifests/tags/*; do
    [ -d "$tag_dir" ] || continue
    name=${tag_dir#"$repos/"}
    name=${name%%/_manifests/*}
    tag=${tag_dir##*/}
    [[ $tag =~ ^[0-9.]+-[0-9a-f]{12}$ ]] || continue
    if [[ $keep == *" $name:$tag "* ]]; then
      kept_links+="$name@$(cat "$tag_dir/current/link" 2>/dev/null) "
      continue
    fi
    rm -rf "$tag_dir"
    removed=$((removed + 1))
  done
  # latest and pause's version tag name a pushed image's manifest: kept while it is one of those kept.
  for tag_dir in "$repos"/kubedist/*/_manifests/tags/*; do
    [ -d "$tag_dir" ] && [[ ! ${tag_dir##*/} =~ ^[0-9.]+-[0-9a-f]{12}$ ]] || continue
    name=${tag_dir#"$repos/"}
    name=${name%%/_manifests/*}
    [[ $kept_links == *" $name@$(cat "$tag_dir/current/link" 2>/dev/null) "* ]] && continue
    rm -rf "$tag_dir"
    removed=$((removed + 1))
  done
  [ "$removed" -gt 0 ] || return 0
  OTEL_TRACES_EXPORTER=none "$registry" garbage-collect --delete-untagged "$config" >"$dir/garbage-collect.log" 2>&1 ||
    { log "registry garbage-collect failed (kept everything else; see $dir/garbage-collect.log)"; return 0; }
  log "registry: $removed superseded tags removed and their blobs collected"
}

cmd_serve_registry() {
  local config
  config=$(cmd_registry_config "$@")
  local registry
  # shellcheck source=versions.sh
  registry="$cache/tools/registry-$(. "$here/versions.sh" && echo "$REGISTRY_VERSION")/registry"
  [ -x "$registry" ] || die "no $registry: run deploy/local/tools.sh"
  prune_registry "$registry" "$config"
  # The registry would otherwise try to export traces to an OpenTelemetry collector.
  OTEL_TRACES_EXPORTER=none exec "$registry" serve "$config"
}

case ${1:-} in
  build) cmd_build ;;
  push) shift; cmd_push "$@" ;;
  registry-config) shift; cmd_registry_config "$@" ;;
  serve-registry) shift; cmd_serve_registry "$@" ;;
  *) usage ;;
esac
