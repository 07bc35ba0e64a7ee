# shardplan predict: table and JSON output on a bundled model and cluster, and the --gpu standard system.
source "$(dirname "$0")/lib.sh"

expect 0 "throughput:" -- "$BIN" predict --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 64 --seq 4096 --mbs 1 \
  --recompute full
expect 0 "step time" -- "$BIN" predict --model llama-2-70b --gpu h100-sxm5-80gb --gpus 64 --tp 8 --pp 2 --gbs 256 \
  --seq 4096 --nic-gbps 400
expect 0 "" -- "$BIN" predict --model gpt3-175b --system dgx-a100 --gpus 1024 --tp 8 --pp 16 --vpp 3 --gbs 1536 \
  --seq 2048 --recompute selective --precision fp16

# JSON contract keys (design.md).
"$BIN" predict --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 64 --seq 4096 --recompute full --json >"$tmp/p.json"
if python3 - "$tmp/p.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema_version"] == 1
for k in ["version", "model", "system"]: assert k in j["context"], k
for k in ["tp", "pp", "vpp", "dp", "cp", "ep", "zero", "sequence_parallel", "micro_batch", "global_batch", "recompute",
          "precision"]:
    assert k in j["plan"], k
for k in ["total_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "other_bytes",
          "capacity_bytes", "fits"]:
    assert k in j["memory"], k
for k in ["step_s", "compute_s", "exposed_comm_s", "bubble_s", "optimizer_s"]: assert k in j["time"], k
for k in ["tokens_per_s", "tokens_per_s_per_gpu", "mfu", "hfu"]: assert k in j["throughput"], k
t = j["time"]
parts = t["compute_s"] + t["exposed_comm_s"] + t["bubble_s"] + t["optimizer_s"]
assert abs(parts - t["step_s"]) < 1e-9 * t["step_s"], (parts, t["step_s"])
m = j["memory"]
parts = m["weights_bytes"] + m["gradients_bytes"] + m["optimizer_bytes"] + m["activations_bytes"] + m["other_bytes"]
assert abs(parts - m["total_bytes"]) < 1
tp = j["throughput"]
assert abs(tp["tokens_per_s"] - 64 * 4096 / t["step_s"]) < 1e-6 * tp["tokens_per_s"]
PY
then echo "ok: predict --json contract"; else echo "FAIL: predict --json contract"; fails=$((fails + 1)); fi

# A power cap slows compute-bound kernels; above the TDP it is refused.
step_s='import json,sys; print(json.load(sys.stdin)["time"]["step_s"])'
full=$("$BIN" predict --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 64 --seq 4096 --recompute full --json \
  | python3 -c "$step_s")
capped=$("$BIN" predict --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 64 --seq 4096 --recompute full \
  --power-limit-w 500 --json | python3 -c "$step_s")
python3 -c "import sys; sys.exit(0 if float('$capped') > float('$full') else 1)" && echo \
  "ok: power cap slows the step" || { echo "FAIL: power cap"; fails=$((fails + 1)); }
expect 2 "power limit 800 W is outside (0, 700] W" -- "$BIN" predict --model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 \
  --power-limit-w 800

# The framework profiles behind --framework, and one profile's traits.
expect 0 "megatron-lm-legacy" -- "$BIN" profile framework
expect 0 "pp_deferred_grad_bytes" -- "$BIN" profile framework torchtitan
expect 0 '"fsdp_unsharded_param_bytes": "2"' -- "$BIN" profile framework torchtitan --json
expect 2 "did you mean 'torchtitan'" -- "$BIN" profile framework torchtitn

# A plan that does not fit exits 2 and says which item is largest.
expect 2 "out of memory" -- "$BIN" predict --model llama-3-70b --system dgx-h100 --gpus 8 --gbs 8 --seq 8192 --zero 0
finish
