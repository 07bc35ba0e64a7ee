# Optimizer offload: Llama-3-70B on 16 H100 fits only with it; output names host memory and link traffic.
source "$(dirname "$0")/lib.sh"

S=(--model llama-3-70b --gpu h100-sxm5-80gb --gpus 16 --gbs 64 --seq 8192 --top 1 --quiet --tp 8 --pp 2 --vpp 1)
expect 2 "out of memory (largest item: optimizer)" -- "$BIN" search "${S[@]}"
expect 0 "offload1" -- "$BIN" search "${S[@]}" --optimizer-offload 0,1
expect 2 "--optimizer-offload: '2' is not a fraction in [0, 1]" -- "$BIN" search "${S[@]}" --optimizer-offload 0,2

P=(--model llama-3-70b --gpu h100-sxm5-80gb --gpus 16 --tp 8 --pp 2 --zero 1 --gbs 64 --seq 8192 --recompute full)
expect 0 "optimizer offload 1: host memory" -- "$BIN" predict "${P[@]}" --optimizer-offload 1
expect 0 "--optimizer-offload 0.5" -- "$BIN" search "${S[@]}" --optimizer-offload 0.5 --zero 1 --recompute full
expect 2 "torchtitan does not offload the optimizer to the host" -- "$BIN" predict "${P[@]}" --optimizer-offload 1 \
  --framework torchtitan
expect 2 "optimizer offload needs a sharded optimizer (--zero 1 or more)" -- "$BIN" predict "${P[@]/--zero/--dp}" \
  --zero 0 --optimizer-offload 1
expect 2 "has no host_memory_bw_gbps_per_gpu" -- "$BIN" predict --model llama-3-8b --gpu b200 --gpus 8 --zero 1 \
  --gbs 8 --seq 2048 --optimizer-offload 1
"$BIN" predict "${P[@]}" --optimizer-offload 1 --json >"$tmp/o.json"
if python3 - "$tmp/o.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
o = j["offload"]
assert j["plan"]["optimizer_offload"] == 1 and j["memory"]["optimizer_bytes"] == 0
for k in ["host_bytes", "device_to_host_bytes", "host_to_device_bytes", "cpu_step_s", "transfer_s", "exposed_s",
          "host_link_gbps_used"]:
    assert o[k] > 0, k
assert abs(o["host_bytes"] / o["host_to_device_bytes"] - 8) < 1e-9  # 16 B on the host per 2 B copied back
PY
then echo "ok: predict --json offload"; else echo "FAIL: predict --json offload"; fails=$((fails + 1)); fi
finish
