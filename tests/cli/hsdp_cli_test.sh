# Hybrid sharding, ZeRO++, parameter/activation offload and NVMe: flags, search axes, JSON, plan files, emitters.
source "$(dirname "$0")/lib.sh"

H=(--model llama-3-8b --gpu h100-sxm5-80gb --gpus 16 --gbs 32 --seq 4096)
# HSDP: Megatron's partial distributed optimizer, torchtitan's 2-D FSDP mesh, DeepSpeed MiCS.
expect 0 "optimizer states" -- "$BIN" predict "${H[@]}" --tp 2 --zero 1 --dp-shard 4
expect 2 "hybrid sharding in megatron-lm runs at zero 1" -- "$BIN" predict "${H[@]}" --zero 3 --dp-shard 8
expect 2 "must divide dp (16)" -- "$BIN" predict "${H[@]}" --zero 1 --dp-shard 3
expect 2 "megatron-lm-legacy does not shard hybrid" -- "$BIN" predict "${H[@]}" --zero 1 --dp-shard 8 \
  --framework megatron-lm-legacy
expect 0 "hsdp8" -- "$BIN" search "${H[@]}" --framework torchtitan --dp-shard 0,8 --top 40 --quiet --tp 1 --pp 1 --cp 1
expect 2 "--dp-shard: 'x' is not an integer" -- "$BIN" search "${H[@]}" --dp-shard 0,x --quiet
"$BIN" search "${H[@]}" --framework torchtitan --dp-shard 8 --zero 3 --tp 1 --pp 1 --cp 1 --quiet --top 1 \
  --emit torchtitan-toml --out "$tmp/hsdp.toml" >/dev/null 2>&1
expect 0 "data_parallel_replicate_degree = 2" -- cat "$tmp/hsdp.toml"
expect 0 "data_parallel_shard_degree = 8" -- cat "$tmp/hsdp.toml"
"$BIN" search "${H[@]}" --framework megatron-lm --dp-shard 4 --zero 1 --tp 2 --pp 1 --cp 1 --quiet --top 1 \
  --emit megatron --out "$tmp/hsdp.sh" >/dev/null 2>&1
expect 0 "--num-distributed-optimizer-instances \"2\"" -- cat "$tmp/hsdp.sh"

# ZeRO++ with DeepSpeed ZeRO-3 only.
D=("${H[@]}" --framework megatron-deepspeed --zero 3)
expect 0 "step" -- "$BIN" predict "${D[@]}" --zeropp qwz+hpz8+qgz
expect 2 "ZeRO++ (qwz) runs with ZeRO-3 only" -- "$BIN" predict "${D[@]/--zero/--mbs}" --zero 1 --zeropp qwz
expect 2 "is DeepSpeed's; megatron-lm does not offer it" -- "$BIN" predict "${H[@]}" --zeropp qwz
expect 2 "--zeropp: 'qxz' is not a ZeRO++ part" -- "$BIN" predict "${D[@]}" --zeropp qxz
expect 0 "zpp:qwz+hpz8" -- "$BIN" search "${D[@]}" --zeropp off,qwz+hpz8 --tp 1 --pp 1 --cp 1 --top 40 --quiet
"$BIN" search "${D[@]}" --zeropp qwz+hpz8+qgz --tp 1 --pp 1 --cp 1 --quiet --top 1 --emit deepspeed \
  --out "$tmp/zpp.sh" >/dev/null 2>&1
expect 0 '"zero_hpz_partition_size": 8' -- cat "$tmp/zpp.sh"
expect 0 '"zero_quantized_gradients": true' -- cat "$tmp/zpp.sh"

# Parameter offload, NVMe, activation offload.
expect 0 "offload (optimizer 1, parameters): host memory" -- "$BIN" predict "${D[@]}" --optimizer-offload 1 \
  --param-offload
expect 2 "modelled with DeepSpeed's optimizer offload" -- "$BIN" predict "${D[@]}" --param-offload
expect 0 "NVMe" -- "$BIN" predict "${D[@]}" --optimizer-offload 1 --param-offload --offload-device nvme
expect 2 "does not state them" -- "$BIN" predict --model llama-3-8b --gpu b200 --gpus 8 --gbs 8 --seq 2048 \
  --framework megatron-deepspeed --zero 3 --optimizer-offload 1 --offload-device nvme
expect 0 "offload (parameters)" -- "$BIN" predict "${H[@]}" --framework torchtitan --zero 3 --param-offload
expect 0 "offload (activations of 8 layers)" -- "$BIN" predict "${H[@]}" --zero 1 --recompute none \
  --activation-offload-layers 8
expect 2 "refuses CPU offloading with activation recompute" -- "$BIN" predict "${H[@]}" --zero 1 --recompute full \
  --activation-offload-layers 8
"$BIN" predict "${D[@]}" --optimizer-offload 1 --param-offload --offload-device nvme --json >"$tmp/p.json"
"$BIN" predict --plan "$tmp/p.json" --json >"$tmp/q.json"
if python3 - "$tmp/p.json" "$tmp/q.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for j in (a, b):
    assert j["plan"]["param_offload"] is True and j["plan"]["offload_device"] == "nvme", j["plan"]
    assert j["memory"]["weights_bytes"] == 0 and j["offload"]["nvme_bytes"] > 0
    assert j["offload"]["layer_transfer_bytes"] > 0 and "host_transfer_s" in j["time"]
assert abs(a["time"]["step_s"] - b["time"]["step_s"]) < 1e-9  # the plan file round-trips
PY
then echo "ok: offload JSON and plan round trip"
else echo "FAIL: offload JSON and plan round trip"; fails=$((fails + 1)); fi
"$BIN" search "${D[@]}" --optimizer-offload 1 --param-offload on --tp 1 --pp 1 --cp 1 --quiet --top 1 \
  --emit deepspeed --out "$tmp/off.sh" >/dev/null 2>&1
expect 0 '"offload_param"' -- cat "$tmp/off.sh"
finish
