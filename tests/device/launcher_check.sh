#!/bin/bash
# One short check of the static launcher on a GPU machine, beside the torchrun of a torch 2.x found there (no cluster;
# never run by ctest). Takes the launcher's path; prints figures; exits 1 if a check fails. Under 2 minutes.
#
#   tests/device/launcher_check.sh build/all/launcher-sidecar/kubedist-launcher
#
# Checks:
#   1. --nproc-per-node=gpu and =auto start as many workers as that torch's torchrun does (torch.cuda.device_count()),
#      and each worker runs one NCCL all_reduce on its GPU;
#   2. --legacy-launch with the default --local-rank-style=auto passes --local-rank=N (torch 2.x's spelling) to a
#      script that declares only that spelling;
#   3. restart latency, measured as tests/bench/launcher/bench.py does: 2 shell workers, rank 1 writes the time and
#      exits 1, each worker of the next attempt writes its start; crash -> first replacement, median of TRIALS runs
#      of each launcher (torchrun with its default monitor interval, as a user gets it).
# KUBEDIST_CHECK_PYTHON=PATH picks the interpreter (any torch; the expectations follow its version), TRIALS=N (3).
set -u -o pipefail

LAUNCHER=${1:?usage: $0 PATH-OF-THE-STATIC-kubedist-launcher}
LAUNCHER=$(readlink -f "$LAUNCHER")
[ -x "$LAUNCHER" ] || { echo "launcher_check: $LAUNCHER is not an executable file" >&2; exit 2; }
TRIALS=${TRIALS:-3}
WORK=$(mktemp -d /tmp/kubedist-device-check.XXXXXX)
trap 'rm -rf "$WORK"' EXIT  # every command below runs under timeout
FAILED=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; FAILED=1; }

# --- the interpreter: the first with torch 2.x, found without importing torch (its torch/version.py) -----------------
torch_version() {  # the torch version an interpreter would import, "" when it has none
  timeout 20 "$1" - <<'EOF' 2>/dev/null
import importlib.util, re
spec = importlib.util.find_spec("torch")
if spec and spec.submodule_search_locations:
    for d in spec.submodule_search_locations:
        try:
            m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", open(d + "/version.py").read())
        except OSError:
            continue
        if m:
            print(m.group(1))
            break
EOF
}
if [ -n "${KUBEDIST_CHECK_PYTHON:-}" ]; then
  PY=$KUBEDIST_CHECK_PYTHON
  TORCH=$(torch_version "$PY")
  [ -n "$TORCH" ] || { echo "launcher_check: $PY imports no torch" >&2; exit 2; }
else
  PY="" TORCH="" TRIED=()
  for c in python3 python /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python /opt/venv/bin/python \
           /venv/bin/python /root/.venv/bin/python /usr/local/bin/python3.* /opt/*/bin/python3 /opt/*/*/bin/python3 \
           /root/*/bin/python3 /home/*/.venv/bin/python3 /home/*/*/bin/python3; do
    p=$(command -v "$c" 2>/dev/null) || continue
    [ -x "$p" ] || continue
    TRIED+=("$p")
    v=$(torch_version "$p")
    case "$v" in
      [2-9].*) PY=$p TORCH=$v; break ;;
    esac
  done
  [ -n "$PY" ] || { echo "launcher_check: no python with torch 2.x here (tried: ${TRIED[*]:-none})" >&2; exit 2; }
fi
PY=$(command -v "$PY")  # not resolved: a venv's python is a link, and only through it does the venv apply
case "$TORCH" in 1.*) MAJOR=1 ;; *) MAJOR=2 ;; esac
export PYTHON_EXEC=$PY PATH="$(dirname "$PY"):/usr/bin:/bin" OMP_NUM_THREADS=1
TORCHRUN=("$PY" -m torch.distributed.run)
GPUS=$(timeout 60 "$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo "?")
echo "launcher: $LAUNCHER"
echo "python: $PY, torch $TORCH, torch.cuda.device_count() = $GPUS"
echo "nvidia-smi: $(nvidia-smi -L 2>/dev/null | tr '\n' ';' || echo none)"
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset} NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES-unset}"

# --- 1. --nproc-per-node=gpu/auto, beside torchrun; one NCCL all_reduce per worker -----------------------------------
cat > "$WORK/gpu_worker.py" <<'EOF'
import os, torch, torch.distributed as dist
lr, lws = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
if torch.cuda.is_available():
    torch.cuda.set_device(lr)
    dist.init_process_group("nccl")
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    ok = int(t.item()) == dist.get_world_size()
    dist.destroy_process_group()
else:
    ok = True
print(f"WORKER local_rank={lr} local_world_size={lws} world_size={os.environ['WORLD_SIZE']} allreduce_ok={ok}",
      flush=True)
EOF
workers() {  # "<number of workers> <all all_reduce ok>" from the WORKER lines of a run's output
  awk '/WORKER /{n++; if ($0 !~ /allreduce_ok=True/) bad=1} END{print n+0, (bad ? "no" : "yes")}' "$1"
}
for mode in gpu auto; do
  timeout 90 "$LAUNCHER" --standalone "--nproc-per-node=$mode" --redirects=1 --tee=1 "$WORK/gpu_worker.py" >"$WORK/k-$mode" 2>&1
  krc=$?
  timeout 90 "${TORCHRUN[@]}" --standalone "--nproc_per_node=$mode" --redirects=1 --tee=1 "$WORK/gpu_worker.py" >"$WORK/t-$mode" 2>&1
  trc=$?
  read -r kn kok < <(workers "$WORK/k-$mode")
  read -r tn tok < <(workers "$WORK/t-$mode")
  echo "nproc-per-node=$mode: kubedist $kn workers (exit $krc, all_reduce ok: $kok), torchrun $tn (exit $trc, $tok)"
  if [ "$mode" = gpu ] && [ "$GPUS" = 0 ]; then
    # Without a GPU, torchrun 2.x falls back to 1 worker, with a warning; ours refuses with one line (exit 2).
    grep -q "no GPU visible" "$WORK/k-$mode" && pass "nproc-per-node=gpu without a GPU: a one-line refusal" ||
      { fail "nproc-per-node=gpu without a GPU"; tail -5 "$WORK/k-$mode"; }
    continue
  fi
  if [ "$krc" = 0 ] && [ "$kok" = yes ] && [ "$kn" = "$tn" ] && { [ "$GPUS" = 0 ] || [ "$kn" = "$GPUS" ]; }; then
    pass "nproc-per-node=$mode: $kn workers, as torchrun"
  else
    fail "nproc-per-node=$mode"; tail -5 "$WORK/k-$mode"; tail -3 "$WORK/t-$mode"
  fi
done

# --- 2. --local-rank-style=auto ---------------------------------------------------------------------------------------
[ "$MAJOR" = 2 ] && WANT="--local-rank" || WANT="--local_rank"
cat > "$WORK/legacy.py" <<EOF
import argparse
p = argparse.ArgumentParser()
p.add_argument("$WANT", type=int, required=True)
print(f"LEGACY local rank {p.parse_args().local_rank}", flush=True)
EOF
timeout 60 "$LAUNCHER" --legacy-launch --nproc-per-node=2 --redirects=1 --tee=1 "$WORK/legacy.py" >"$WORK/legacy" 2>&1
rc=$?
chosen=$(grep -o -- "--local-rank-style=auto: .*" "$WORK/legacy" | head -1)
echo "legacy launch: exit $rc; $chosen"
if [ "$rc" = 0 ] && [ "$(grep -c '^.*LEGACY local rank' "$WORK/legacy")" = 2 ] && grep -q -- "passing $WANT=N" "$WORK/legacy"
then pass "local-rank-style=auto passes $WANT with torch $TORCH"
else fail "local-rank-style=auto with torch $TORCH (wanted $WANT)"; tail -5 "$WORK/legacy"
fi

# --- 3. restart latency -----------------------------------------------------------------------------------------------
cat > "$WORK/crash.sh" <<'EOF'
#!/bin/sh
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
  if [ "$RANK" = 1 ]; then date +%s.%N > "$BENCH_DIR/crash"; exit 1; fi
  exec sleep 60
fi
date +%s.%N >> "$BENCH_DIR/restart"
EOF
chmod +x "$WORK/crash.sh"
recovery() {  # one trial: the launcher's command line -> seconds from crash to the first replacement, or "x"
  local d; d=$(mktemp -d "$WORK/r.XXXX")
  # bench.py's flags (Debian's torchrun 1.13 needs --redirects with --tee).
  BENCH_DIR=$d timeout 60 "$@" --standalone --nproc_per_node=2 --redirects=1 --tee=1 --max_restarts=1 --no_python \
    "$WORK/crash.sh" \
    >/dev/null 2>&1
  if [ -s "$d/crash" ] && [ -s "$d/restart" ]; then
    awk -v c="$(cat "$d/crash")" 'NR==1||$1<m{m=$1} END{printf "%.4f\n", m-c}' "$d/restart"
  else echo x; fi
}
median() { tr ' ' '\n' | grep -v '^x$' | grep . | sort -g | awk '{a[NR]=$1} END{if(NR==0) print "nan"; else if(NR%2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2]+a[NR/2+1])/2}'; }
K=() T=()
for _ in $(seq "$TRIALS"); do K+=("$(recovery "$LAUNCHER")"); T+=("$(recovery "${TORCHRUN[@]}")"); done
km=$(echo "${K[*]}" | median) tm=$(echo "${T[*]}" | median)
echo "restart, crash -> replacement started (s), $TRIALS trials: kubedist ${K[*]}; torchrun ${T[*]}"
echo "restart median: kubedist $km s, torchrun $tm s, torchrun/kubedist $(awk -v k="$km" -v t="$tm" 'BEGIN{if (k>0) printf "%.1fx", t/k; else print "n/a"}')"
[ "$km" != nan ] && pass "restart latency measured" || fail "no kubedist restart completed"

echo "$( [ "$FAILED" = 0 ] && echo ALL PASSED || echo SOME FAILED ) in ${SECONDS}s"
exit "$FAILED"
