#!/usr/bin/env bash
# torch 2.x for the tests, beside Debian's python3-torch 1.13: a virtual environment of Debian's python3 with the pins
# of torch2-requirements.txt from PyPI (the CUDA wheel and its nvidia-* packages, about 4.7 GB; it runs on CPU with
# gloo), less triton (1 GB), which compiles GPU kernels only, and with no copy of the wheels in pip's cache. Kept
# outside the checkout, like Go's build cache, so that a fresh clone (CI's) finds it ready; installed again only when
# the pins or this recipe change (pip then fetches only what changed).
#
#   torch2.sh           install it, or check that it is there (no output then)
#   torch2.sh python    print its interpreter's path (what the tests run workers with), installing nothing
#
# KUBEDIST_TORCH2_VENV names another place for it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
requirements=$here/torch2-requirements.txt
torch=$(sed -n 's/^torch==\([^ ]*\).*/\1/p' "$requirements")
[ -n "$torch" ] || { echo "torch2: $requirements pins no torch==VERSION" >&2; exit 1; }
venv=${KUBEDIST_TORCH2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kubedist/torch-$torch}

if [ "${1:-}" = python ]; then
  echo "$venv/bin/python"
  exit 0
fi
[ $# -eq 0 ] || { echo "usage: torch2.sh [python]" >&2; exit 2; }

# The stamp: the pins and this recipe, so that a venv made by an earlier recipe is brought to this one.
recipe="recipe 2: --no-cache-dir, triton uninstalled"
want=$( { cat "$requirements"; echo "$recipe"; } | sha256sum | cut -d' ' -f1)
stamp=$venv/.kubedist-requirements
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
start=$SECONDS
echo "[torch2] installing $(grep -v '^#' "$requirements" | tr '\n' ' ')into $venv (about 4.7 GB the first time)" >&2
mkdir -p "$(dirname "$venv")"
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-cache-dir -q -r "$requirements"
"$venv/bin/python" -m pip uninstall --disable-pip-version-check --yes -q triton
"$venv/bin/python" -c "import torch, torch.distributed as d; assert torch.__version__.split('+')[0] == '$torch', torch.__version__; assert d.is_gloo_available()"
echo "$want" >"$stamp"
echo "[torch2] torch $torch ready in $((SECONDS - start))s" >&2
