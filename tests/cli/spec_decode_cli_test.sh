# shardplan serve predict --spec: speculative decoding's settings and output; bad values exit 2 naming the flag.
source "$(dirname "$0")/lib.sh"

base=(serve predict --model deepseek-v3 --gpu h200-sxm-141gb --engine sglang --weights fp8 --kv fp8 --tp 8
      --input-len 1024 --output-len 256 --concurrency 4)
expect 0 "--spec-accept" -- "$BIN" serve predict --help
expect 0 "arXiv 2412.19437 sec. 5.4.3" -- "$BIN" serve predict --help
expect 0 "speculative decoding: mtp, k 1, 1.850 tokens per step" -- "$BIN" "${base[@]}" --spec mtp --spec-tokens 1 \
  --spec-accept 0.85
expect 0 "--speculative-algorithm NEXTN --speculative-num-steps 2 --speculative-eagle-topk 1 --speculative-num-draft-tokens 3" \
  -- "$BIN" "${base[@]}" --spec mtp --spec-tokens 2 --spec-accept 0.85,0.7

check_json() {
  "$BIN" "${base[@]}" --json >"$tmp/plain.json" &&
    "$BIN" "${base[@]}" --spec mtp --spec-tokens 2 --spec-accept 0.9,0.8 --json >"$tmp/spec.json" &&
    python3 - "$tmp/plain.json" "$tmp/spec.json" <<'PY'
import json, sys
p, s = (json.load(open(f)) for f in sys.argv[1:3])
sp = s["speculative"]
assert sp["method"] == "mtp" and sp["tokens"] == 2 and sp["accept"] == [0.9, 0.8], sp
assert abs(sp["expected_tokens_per_step"] - 2.62) < 1e-9, sp
assert sp["kv_slots_per_sequence"] == 2 and "NEXTN" in sp["engine_args"], sp
assert "speculative" not in p
assert s["latency"]["tpot_s"] < p["latency"]["tpot_s"]            # a small batch gains
assert s["memory"]["weights_bytes"] > p["memory"]["weights_bytes"]  # the MTP module is loaded
PY
}
if check_json; then echo "ok: --spec json"; else echo "FAIL: --spec json"; fails=$((fails + 1)); fi

# Refusals: the flag named, exit 2.
expect 2 "needs its acceptance: --spec-accept" -- "$BIN" "${base[@]}" --spec mtp --spec-tokens 2
expect 2 "--spec-tokens: --spec mtp needs k >= 1" -- "$BIN" "${base[@]}" --spec mtp --spec-accept 0.8
expect 2 "--spec-tokens: --spec mtp needs k >= 1" -- "$BIN" "${base[@]}" --spec mtp --spec-tokens 0 --spec-accept 0.8
expect 2 "--spec-accept: each rate lies in (0, 1), got 1.0" -- "$BIN" "${base[@]}" --spec mtp --spec-tokens 1 \
  --spec-accept 1.0
expect 2 "--spec-accept: each rate lies in (0, 1), got 0" -- "$BIN" "${base[@]}" --spec mtp --spec-tokens 1 \
  --spec-accept 0
expect 2 "--spec-accept: 2 rates for --spec-tokens 3" -- "$BIN" "${base[@]}" --spec mtp --spec-tokens 3 \
  --spec-accept 0.8,0.7
expect 2 "--spec-accept-length: the mean tokens per step lies in [1, k + 1]" -- "$BIN" "${base[@]}" --spec mtp \
  --spec-tokens 1 --spec-accept-length 2.5
expect 2 "--spec: mtp: llama-3-8b has no multi-token-prediction modules" -- "$BIN" serve predict --model llama-3-8b \
  --gpu h100-sxm5-80gb --spec mtp --spec-tokens 1 --spec-accept 0.8
expect 2 "--spec-draft: the draft's vocabulary (32000) differs" -- "$BIN" serve predict --model llama-3-8b \
  --gpu h100-sxm5-80gb --spec draft --spec-draft llama-2-7b --spec-tokens 3 --spec-accept 0.7
expect 2 "--spec-draft: --spec draft needs the draft model" -- "$BIN" serve predict --model llama-3-8b \
  --gpu h100-sxm5-80gb --spec draft --spec-tokens 3 --spec-accept 0.7
expect 2 "--spec: unknown method 'medusa'" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb \
  --spec medusa --spec-tokens 3 --spec-accept 0.7
expect 2 "need --spec METHOD" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --spec-tokens 3
expect 2 "--rounds: the step-by-step closed loop does not model --spec" -- "$BIN" "${base[@]}" --spec mtp \
  --spec-tokens 1 --spec-accept 0.85 --rounds 2
finish
