#!/usr/bin/env bash
# Everything a fresh machine needs for kubedist's build, demo and tests, installed idempotently:
# Debian's packages (only when one is missing), then the upstream tool binaries (tools.sh, cached) and torch 2.x
# beside Debian's torch 1.13 (torch2.sh, cached).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

packages=(
  cmake make g++ pkg-config git curl openssl ca-certificates iproute2
  libcpprest-dev nlohmann-json3-dev libyaml-cpp-dev libssl-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev googletest
  python3-torch python3-yaml python3-venv
  prometheus
  # the images (images.sh) and the real nodes (nodes.sh)
  buildah debootstrap
  runc containernetworking-plugins iptables conntrack socat util-linux
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing Debian packages: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v go >/dev/null || {
  echo "setup: the go command is needed to build the local control plane (Go 1.26 or newer)" >&2
  exit 1
}
/usr/bin/python3 -c 'import torch' || { echo "setup: /usr/bin/python3 cannot import torch" >&2; exit 1; }

"$here/tools.sh"
"$here/torch2.sh"
