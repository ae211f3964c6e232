#!/bin/bash
# One short check of the progress channel on a GPU machine (no cluster; never run by ctest). Takes the static
# launcher's path; prints figures; exits 1 if a check fails. Under 2 minutes.
#
#   tests/device/progress_check.sh build/static/kubedist-launcher
#
# Checks:
#   1. progress-bench (tests/bench/launcher/progress_bench.py) with the torch 2.x found here: training steps with and
#      without progress.step each step, and the bare call's cost (STEPS, 3,000 by default; ROUNDS, 3);
#   2. with GPUs: a hang caught with real NCCL: min(2, GPUs) workers do an all_reduce on their GPU every step and
#      report it; on the first attempt the last rank stops at step 5 (a sleep outside the collective, the others
#      wait in the all_reduce); with --hang-timeout=5 the launcher must name it with its stack, restart the group
#      in place, and the job must finish; prints the time from the stuck rank's last step to the restart.
# KUBEDIST_CHECK_PYTHON=PATH picks the interpreter.
set -u -o pipefail

LAUNCHER=${1:?usage: $0 PATH-OF-THE-STATIC-kubedist-launcher}
LAUNCHER=$(readlink -f "$LAUNCHER")
[ -x "$LAUNCHER" ] || { echo "progress_check: $LAUNCHER is not an executable file" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=$(mktemp -d /tmp/kubedist-progress-check.XXXXXX)
trap 'rm -rf "$WORK"' EXIT  # every command below runs under timeout
FAILED=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; FAILED=1; }

# The interpreter: the first with torch 2.x, found without importing torch (its torch/version.py).
torch_version() {
  timeout 20 "$1" -c 'import importlib.util, re
s = importlib.util.find_spec("torch")
for d in (s.submodule_search_locations or []) if s else []:
    try:
        print(re.search(r"__version__\s*=\s*.([0-9][^\x27\x22]*)", open(d + "/version.py").read()).group(1)); break
    except (OSError, AttributeError):
        pass' 2>/dev/null
}
PY=${KUBEDIST_CHECK_PYTHON:-}
if [ -z "$PY" ]; then
  for c in python3 python /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python /opt/venv/bin/python \
           /venv/bin/python /root/.venv/bin/python /usr/local/bin/python3.* /opt/*/bin/python3 /home/*/.venv/bin/python3; do
    p=$(command -v "$c" 2>/dev/null) || continue
    case "$(torch_version "$p")" in [2-9].*) PY=$p; break ;; esac
  done
  [ -n "$PY" ] || { echo "progress_check: no python with torch 2.x here" >&2; exit 2; }
fi
PY=$(command -v "$PY")
GPUS=$(timeout 60 "$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
echo "launcher: $LAUNCHER"
echo "python: $PY, torch $(torch_version "$PY"), GPUs: $GPUS"

# --- 1. the bench ---------------------------------------------------------------------------------------------------
if timeout 80 "$PY" "$HERE/tests/bench/launcher/progress_bench.py" --launcher "$LAUNCHER" --python "$PY" \
     --steps "${STEPS:-3000}" --rounds "${ROUNDS:-3}" >"$WORK/bench.out" 2>&1; then
  cat "$WORK/bench.out"; pass "progress-bench ran"
else
  tail -20 "$WORK/bench.out"; fail "progress-bench"
fi

# --- 2. a hang with real NCCL ---------------------------------------------------------------------------------------
if [ "$GPUS" -ge 1 ] 2>/dev/null; then
  N=$(( GPUS < 2 ? GPUS : 2 ))
  cat >"$WORK/hang.py" <<'EOF'
import os, sys, time, torch, torch.distributed as dist
from kubedist import progress
lr, rank, world = int(os.environ["LOCAL_RANK"]), int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
torch.cuda.set_device(lr)
dist.init_process_group("nccl")
t = torch.ones(1 << 20, device="cuda")
out = open(os.path.join(sys.argv[1], f"steps{rank}"), "a")
for step in range(1, 21):
    if rank == world - 1 and attempt == 0 and step == 5:
        while True:
            time.sleep(1)  # stuck outside the collective; the others wait in all_reduce
    dist.all_reduce(t)
    torch.cuda.synchronize()
    out.write(f"{attempt} {step} {time.time()}\n"); out.flush()
    progress.step(step, total=20)
    time.sleep(0.1)
dist.destroy_process_group()
EOF
  start=$(date +%s.%N)
  timeout 90 "$LAUNCHER" --standalone --nproc-per-node="$N" --max-restarts=1 --hang-timeout=5 --stop-timeout=3 \
    --no-python -- "$PY" "$WORK/hang.py" "$WORK" >"$WORK/hang.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  R=$((N - 1))
  msg=$(grep -o "no step for .*stuck.*" "$WORK/hang.log" | head -1)
  echo "hang: launcher exit $rc after $(awk -v a="$start" -v b="$end" "BEGIN{printf \"%.1f\", b - a}") s; message: ${msg:0:400}"
  last=$(awk '$1 == 0 {t = $3} END {print t}' "$WORK/steps$R" 2>/dev/null)
  resumed=$(awk '$1 == 1 {print $3; exit}' "$WORK/steps$R" 2>/dev/null)
  [ -n "$last" ] && [ -n "$resumed" ] && echo "hang: stuck rank's last step -> first step after the restart: $(awk -v a="$last" -v b="$resumed" "BEGIN{printf \"%.1f\", b - a}") s (hang timeout 5 s)"
  if [ "$rc" = 0 ] && echo "$msg" | grep -q "rank $R .*stuck .* at step 4" && grep -q "^1 20 " "$WORK/steps$R"; then
    pass "a hang with NCCL ($N ranks) caught, named with its stack, restarted in place and finished"
  else
    tail -30 "$WORK/hang.log"; fail "hang with NCCL"
  fi
else
  echo "SKIP the NCCL hang: no GPU"
fi
exit $FAILED
