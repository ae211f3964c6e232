#!/usr/bin/env bash
# Writes the Go module that builds one Kubernetes release's commands (tools.sh): DIR/go.mod, go.sum and tools.go
# for k8s.io/kubernetes VERSION. k8s.io/kubernetes names its staging modules (k8s.io/api, k8s.io/client-go, ...)
# at v0.0.0 and replaces them with folders of its own tree, so a module that requires it must replace each with the
# release's tag (v1.X.Y -> v0.X.Y); the list is read from that release's own go.mod. For a maintainer moving a pin
# (versions.sh says which folder pins which version):
#
#   deploy/local/pin-kubernetes.sh v1.37.2 deploy/local/tools/kubernetes
#   deploy/local/pin-kubernetes.sh v1.34.4 deploy/local/tools/kubernetes-1.34
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: pin-kubernetes.sh VERSION DIR" >&2; exit 2; }
version=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "pin-kubernetes.sh: '$version' is no release like v1.37.2" >&2; exit 2; }
staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
mkdir -p "$dir"
cd "$dir"

upstream_mod=$(cd / && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$version" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -f "$upstream_mod" ] || { echo "pin-kubernetes.sh: no go.mod for k8s.io/kubernetes@$version" >&2; exit 1; }
# The release's language version and GODEBUG defaults, which a main module decides for what it builds.
go_lines=$(grep -E '^(go|godebug) ' "$upstream_mod")
staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$upstream_mod" | sort -u)
[ -n "$staging" ] || { echo "pin-kubernetes.sh: $upstream_mod replaces no staging module" >&2; exit 1; }

{
  printf '// Tools module: builds the real Kubernetes control-plane binaries for local tests.\n'
  printf 'module kubedist.io/tools/%s\n\n%s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' \
    "$(basename "$dir")" "$go_lines" "$version"
  for m in $staging; do printf '\t%s => %s %s\n' "$m" "$m" "$staging_version"; done
  printf ')\n'
} >go.mod
# The same commands for every release.
[ "$(cd "$here/tools/kubernetes" && pwd)" = "$(pwd)" ] || cp "$here/tools/kubernetes/tools.go" tools.go
rm -f go.sum
go mod tidy
echo "pinned k8s.io/kubernetes $version in $dir" >&2
