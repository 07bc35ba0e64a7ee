#!/usr/bin/env bash
# Device check for calibration, on one machine with an NVIDIA GPU:
#   1. build shardplan and the CUDA benchmarks;
#   2. run the memory, GEMM and attention sweeps (about 4-5 minutes on an H100/H200; capped by timeouts);
#   3. fit a profile (`shardplan calibrate fit`);
#   4. report (a) predicted vs measured time of 20 GEMM shapes that were not in the fit (median error), by the
#      fitted profile and by the shipped one (the shipped table's signed bias is what the validation needs), in
#      bf16 and fp8; (b) predicted vs measured time of one training step of a small GPT in PyTorch (if torch
#      imports); (c) on a Hopper GPU, the published H100 runs validated with the fitted GEMM/attention tables
#      (same GH100 compute die: H100, H200 and H800 share it) next to the shipped ones.
# Without a GPU it builds, then stops before the first GPU call with a clear message (exit 3).
# Usage: kernels/device_check.sh [WORKDIR]   (env: BUILD=build dir, JOBS=parallel build jobs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/device_check_out}
build=${BUILD:-$root/build-device}
jobs=${JOBS:-$(nproc)}
mkdir -p "$work"
export SHARDPLAN_HOME=$root
log() { echo "[device_check $(date +%H:%M:%S)] $*"; }

log "building in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSHARDPLAN_BUILD_TESTS=OFF \
  -DCMAKE_CUDA_COMPILER="${CUDACXX:-/usr/local/cuda/bin/nvcc}" > "$work/cmake.log"
cmake --build "$build" -j "$jobs" --target shardplan shardplan_bench_gemm shardplan_bench_memory \
  shardplan_bench_attention > "$work/build.log"
sp=$build/shardplan

if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > "$work/gpus.txt" 2>&1; then
  log "no NVIDIA GPU visible (nvidia-smi failed): built everything, stopping before the GPU calls"
  exit 3
fi
gpu=$(head -1 "$work/gpus.txt")
log "GPU: $gpu"
case "$gpu" in
  *H200*) base=dgx-h200 ;;
  *H100*) base=dgx-h100 ;;
  *H800*) base=hgx-h800 ;;
  *A100*) base=dgx-a100 ;;
  *B200*) base=dgx-b200 ;;
  *) base=${BASE:?"unknown GPU '$gpu': set BASE to a cluster in hwprofiles/clusters"} ;;
esac

raw=$work/raw.jsonl
rm -f "$raw"
log "memory sweep"
timeout 60 "$build/shardplan_bench_memory" --max-bytes 2G --reps 5 --skip-done "$raw" >> "$raw"
log "GEMM sweep (bf16, fp8 shape cube)"
timeout 150 "$build/shardplan_bench_gemm" --dtypes bf16,fp8 --sizes 256,512,1024,2048,4096,8192,16384 \
  --reps 5 --skip-done "$raw" >> "$raw"
log "attention sweep (reference kernel; rows are recorded, not fitted)"
timeout 60 "$build/shardplan_bench_attention" --seqs 512,1024,2048 --reps 3 --skip-done "$raw" >> "$raw" || \
  log "reference attention sweep stopped early (timeout); its rows so far are kept"
have_torch=0
if python3 -c "import torch; assert torch.cuda.is_available()" 2> /dev/null; then
  have_torch=1
  log "attention sweep through PyTorch SDPA (flash2 / cuDNN)"
  timeout 90 python3 "$root/kernels/attention_torch.py" --skip-done "$raw" >> "$raw" || log "SDPA sweep stopped early"
else
  log "torch not importable: attention tables stay the base profile's"
fi

log "fit"
"$sp" calibrate fit "$raw" --base "$base" --out "$work/profile.yaml" --force | tee "$work/fit.txt"
"$sp" profile diff "$base" "$work/profile.yaml" > "$work/diff.txt" || true

# (a) 20 GEMM shapes of transformer layers, none of them in the fitted cube (all dimensions off its grid).
cat > "$work/heldout.txt" << 'SHAPES'
8192,3072,4096
8192,4096,3072
8192,14336,4096
8192,4096,14336
16384,6144,4096
4096,11008,4096
4096,4096,11008
2048,5120,5120
2048,13824,5120
2048,5120,13824
12288,1536,2048
3000,3000,3000
6144,6144,6144
1536,8192,1536
8192,1152,8192
24576,4096,1024
5120,5120,640
768,3072,768
3072,768,3072
10240,2560,7168
SHAPES
log "held-out GEMMs: measure (bf16, fp8)"
"$build/shardplan_bench_gemm" --dtypes bf16,fp8 --shapes "$work/heldout.txt" --reps 5 > "$work/heldout.jsonl"
for dtype in bf16 fp8; do
  for prof in fitted shipped; do
    src=$work/profile.yaml
    [ "$prof" = shipped ] && src=$base
    "$sp" profile gemm "$src" --dtype "$dtype" --shapes "$work/heldout.txt" > "$work/heldout_pred_${dtype}_$prof.txt" \
      || log "no $dtype prediction from the $prof profile"
  done
done
python3 - "$work/heldout.jsonl" "$work" << 'PY' | tee "$work/report_gemm.txt"
import json, os, statistics, sys
meas = {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    if j.get("record") == "result":
        p = j["params"]
        meas[(p["dtype"], p["m"], p["n"], p["k"])] = j["time_s"]
for dtype in ("bf16", "fp8"):
    for prof in ("fitted", "shipped"):
        path = os.path.join(sys.argv[2], f"heldout_pred_{dtype}_{prof}.txt")
        if not os.path.exists(path):
            continue
        errs = []
        print(f"(a) held-out {dtype} GEMMs, {prof} profile: m n k measured_us predicted_us error")
        for line in open(path):
            if line.startswith("#"):
                continue
            m, n, k, pred_us = line.split()
            key = (dtype, int(m), int(n), int(k))
            if key not in meas:
                continue
            t = meas[key] * 1e6
            e = (float(pred_us) - t) / t
            errs.append(e)
            print(f"  {m:>6} {n:>6} {k:>6} {t:10.1f} {float(pred_us):10.1f} {100 * e:+6.1f}%")
        if errs:
            print(f"(a) {dtype} {prof}: median |error| {100 * statistics.median(abs(e) for e in errs):.1f}%, "
                  f"median signed {100 * statistics.median(errs):+.1f}% over {len(errs)} shapes "
                  f"(negative: the profile predicts faster than measured)")
PY

# (b) one training step of a small GPT.
if [ "$have_torch" = 1 ]; then
  log "small GPT training step in PyTorch"
  measured=$(python3 "$root/kernels/gpt_step.py" "$work/gpt_config.json" | awk '/^step_s/ {print $2}')
  if "$sp" predict --model "$work/gpt_config.json" --system "$work/profile.yaml" --gpus 1 --tp 1 --pp 1 --dp 1 \
      --mbs 4 --gbs 4 --seq 2048 --precision bf16 --json > "$work/gpt_predict.json"; then
    python3 - "$work/gpt_predict.json" "$measured" << 'PY' | tee "$work/report_gpt.txt"
import json, sys
pred = json.load(open(sys.argv[1]))["time"]["step_s"]
meas = float(sys.argv[2])
print(f"(b) small GPT step: measured {meas * 1e3:.1f} ms, predicted {pred * 1e3:.1f} ms, "
      f"error {100 * (pred - meas) / meas:+.1f}% (goal <= 15%)")
PY
  else
    log "(b) shardplan predict failed on the GPT config (see above); measured step ${measured}s"
  fi
else
  log "(b) skipped: torch is not importable on this machine"
fi
# (c) Hopper: the fitted tables on the published H100 rows (the runs file has no H200 rows, and validate applies a
# profile to runs on its own GPU name, so the fitted overrides are re-based onto the H100 cluster).
case "$base" in
  dgx-h100|dgx-h200|hgx-h800)
    sed -e "s/^inherits: .*/inherits: dgx-h100/" -e "s/^name: .*/name: h100-with-fitted-hopper-tables/" \
      "$work/profile.yaml" > "$work/h100_fitted.yaml"
    runs=$root/tests/validation/published_runs.yaml
    "$sp" validate --runs "$runs" --json > "$work/validate_shipped.json"
    if "$sp" validate --runs "$runs" --system "$work/h100_fitted.yaml" --json > "$work/validate_fitted.json"; then
      python3 - "$work/validate_shipped.json" "$work/validate_fitted.json" << 'PY' | tee "$work/report_validate.txt"
import json, sys
def groups(path):
    runs = [r for r in json.load(open(path))["runs"] if not r["skipped"] and "h100" in r["id"]]
    out = {}
    for r in runs:
        out.setdefault(r["framework"], []).append(r["error_pct"])
    return out
a, b = groups(sys.argv[1]), groups(sys.argv[2])
print("(c) H100 rows, throughput error by framework: shipped tables -> fitted Hopper tables (MAPE, bias)")
for fw in sorted(a):
    m = lambda v: (sum(abs(x) for x in v) / len(v), sum(v) / len(v))
    (ma, ba), (mb, bb) = m(a[fw]), m(b.get(fw, a[fw]))
    print(f"  {fw:14s} {len(a[fw]):3d} runs  {ma:5.1f}% ({ba:+5.1f}%) -> {mb:5.1f}% ({bb:+5.1f}%)")
PY
    else
      log "(c) validate with the re-based profile failed (see above)"
    fi
    ;;
esac
log "done; outputs in $work"
