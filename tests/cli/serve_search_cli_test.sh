#!/usr/bin/env bash
# serve search --mode agg|disagg|both, --objective, several --gpu types and serve predict's shared flags: the default
# is the aggregated search unchanged; disaggregated plans print
# as xPyD with each pool's launch arguments; bad input exits 2 naming the flag.
source "$(dirname "$0")/lib.sh"

S=(serve search --model llama-3-8b --gpu h100-sxm5-80gb --gpus 8)
"$BIN" "${S[@]}" --tpot-ms 20 >"$tmp/default.txt" 2>&1
"$BIN" "${S[@]}" --tpot-ms 20 --mode agg >"$tmp/agg.txt" 2>&1
cmp -s "$tmp/default.txt" "$tmp/agg.txt" && echo "ok: --mode agg is the default" \
  || { echo "FAIL: --mode agg differs from the default"; fails=$((fails + 1)); }

expect 0 "--disaggregation-mode prefill" -- "$BIN" "${S[@]}" --engine sglang --input-len 8192 --output-len 256 \
  --tpot-ms 20 --mode disagg
expect 0 "prefill_cannot_keep_up" -- "$BIN" "${S[@]}" --input-len 8192 --output-len 256 --mode disagg
expect 0 "\"kv_role\":\"kv_consumer\"" -- "$BIN" "${S[@]}" --input-len 8192 --output-len 256 --tpot-ms 20 \
  --mode disagg
expect 0 "trtllm-serve disaggregated" -- "$BIN" "${S[@]}" --engine trtllm --input-len 8192 --output-len 256 \
  --tpot-ms 20 --mode both
expect 0 "aggregated: evaluated" -- "$BIN" "${S[@]}" --mode both
expect 2 "no plan meets the targets" -- "$BIN" "${S[@]}" --mode disagg --tpot-ms 0.1
expect 2 "--mode: expected agg, disagg or both, got 'xpyd'" -- "$BIN" "${S[@]}" --mode xpyd
# One GPU: no room for two pools.
expect 2 "pools_exceed_gpus" -- "$BIN" serve search --model llama-3-8b --gpu h100-sxm5-80gb --gpus 1 --mode disagg

"$BIN" "${S[@]}" --input-len 8192 --output-len 256 --tpot-ms 20 --mode both --json |
  python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["context"]["mode"] == "both", j["context"]
assert "rejected" in j["disagg"] and "rejected" in j["agg"]
r = j["results"]
assert r and all(r[i]["output_tokens_per_s_per_gpu"] >= r[i + 1]["output_tokens_per_s_per_gpu"]
                 for i in range(len(r) - 1))
d = [x for x in r if x["mode"] == "disagg"]
assert d, "no disaggregated plan in the top ten"
for x in d:
    used = x["prefill"]["gpus"] + x["decode"]["gpus"]
    assert used == x["gpus_used"] and used + x["idle_gpus"] == 8, x
    assert x["concurrency"] == x["decode"]["workers"] * x["decode"]["attention_dp"] * x["decode"]["batch"]
    assert set(x["engine_args"]) == {"prefill", "decode", "router"}
    assert x["kv_transfer"]["bytes_per_request"] > 0 and x["kv_transfer"]["exposed_s"] > 0, x
' && echo "ok: --mode both --json" || { echo "FAIL: --mode both --json"; fails=$((fails + 1)); }

# --objective per-gpu is the default and leaves the output unchanged.
"$BIN" "${S[@]}" --tpot-ms 20 --objective per-gpu >"$tmp/pergpu.txt" 2>&1
cmp -s "$tmp/default.txt" "$tmp/pergpu.txt" && echo "ok: --objective per-gpu is the default" \
  || { echo "FAIL: --objective per-gpu differs from the default"; fails=$((fails + 1)); }
expect 2 "--objective per-dollar needs a price" -- "$BIN" "${S[@]}" --objective per-dollar
expect 2 "--objective: expected per-gpu, per-dollar or throughput, got 'cheap'" -- "$BIN" "${S[@]}" --objective cheap
expect 0 '$/Mtok' -- "$BIN" "${S[@]}" --tpot-ms 20 --gpu-hour-price 2 --objective per-dollar
M=(serve search --model llama-3-8b --gpus 8 --tpot-ms 20)
expect 2 "--price: no price for GPU 'b200'" -- "$BIN" "${M[@]}" --gpu h100-sxm5-80gb,b200 --price h100-sxm5-80gb=2
expect 2 "--gpu-hour-price: 2 GPU types" -- "$BIN" "${M[@]}" --gpu h100-sxm5-80gb,b200 --gpu-hour-price 2
expect 2 "--price: 'a100' is not one of --gpu" -- "$BIN" "${M[@]}" --gpu h100-sxm5-80gb,b200 \
  --price h100-sxm5-80gb=2,b200=5,a100=1
expect 2 "--price names --gpu types" -- "$BIN" "${M[@]}" --system dgx-h100 --price h100=2
expect 2 "--gpu: 'b200' is listed twice" -- "$BIN" "${M[@]}" --gpu b200,b200
expect 0 "best plan, on " -- "$BIN" "${M[@]}" --gpu h100-sxm5-80gb,b200 --price h100-sxm5-80gb=2,b200=5 \
  --objective per-dollar --mode both
# Several GPU types rank together: per dollar, $/Mtok ascends down the table.
"$BIN" "${M[@]}" --gpu h100-sxm5-80gb,h200-sxm-141gb,b200 --price h100-sxm5-80gb=2,h200-sxm-141gb=3,b200=5 \
  --objective per-dollar --top 50 --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["context"]["objective"] == "per-dollar", j["context"]
assert [s["gpu"] for s in j["searches"]] == ["h100-sxm5-80gb", "h200-sxm-141gb", "b200"], j["searches"]
r = j["results"]
assert len({x["gpu"] for x in r}) > 1, "one GPU type only in the top 50"
price = {"h100-sxm5-80gb": 2, "h200-sxm-141gb": 3, "b200": 5}
for x in r:
    want = price[x["gpu"]] * 1e6 / (3600 * x["output_tokens_per_s_per_gpu"])
    assert abs(x["cost_per_mtok"] - want) < 1e-9 * want, x
assert all(r[i]["cost_per_mtok"] <= r[i + 1]["cost_per_mtok"] for i in range(len(r) - 1))
' && echo "ok: per-dollar across GPU types" || { echo "FAIL: per-dollar across GPU types"; fails=$((fails + 1)); }

# serve predict's flags, in the search and in its launch lines.
expect 0 "--gpu-memory-utilization 0.8 --enable-prefix-caching" -- "$BIN" "${S[@]}" --tpot-ms 20 \
  --mem-fraction 0.8 --prefix-hit 0.5
expect 0 "--mem-fraction-static 0.8" -- "$BIN" "${S[@]}" --engine sglang --tpot-ms 20 --mem-fraction 0.8 \
  --mode both
expect 0 "transforms: sparsity 2:4" -- "$BIN" "${S[@]}" --tpot-ms 20 --sparsity 2:4
expect 2 "--sparsity: on t4" -- "$BIN" serve search --model llama-3-8b --gpu h100-sxm5-80gb,t4 --gpus 8 \
  --weights fp16 --sparsity 2:4
expect 2 "--mem-fraction" -- "$BIN" "${S[@]}" --mem-fraction 1.5
"$BIN" "${S[@]}" --max-batch 24 --top 100 --json | python3 -c '
import json, sys
b = {x["plan"]["batch"] for x in json.load(sys.stdin)["results"]}
assert max(b) == 24 and b <= {1, 2, 4, 8, 16, 24}, b
' && echo "ok: --max-batch caps the ladder" || { echo "FAIL: --max-batch"; fails=$((fails + 1)); }
# A prefix-cache hit shortens every prefill, so the best plan serves more tokens/s per GPU.
best() { "$BIN" "${S[@]}" --input-len 4096 "$@" --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["output_tokens_per_s_per_gpu"])'; }
python3 -c "import sys; sys.exit(0 if $(best --prefix-hit 0.75) > $(best) else 1)" \
  && echo "ok: --prefix-hit raises tok/s/GPU" || { echo "FAIL: --prefix-hit"; fails=$((fails + 1)); }

finish
