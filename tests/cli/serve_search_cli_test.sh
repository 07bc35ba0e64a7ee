#!/usr/bin/env bash
# serve search --mode agg|disagg|both: the default is the aggregated search unchanged; disaggregated plans print
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

finish
