# shardplan serve predict --sparsity / --low-rank: model transforms change bytes and time; bad values exit 2.
source "$(dirname "$0")/lib.sh"

base=(serve predict --model llama-3-70b --gpu h100-sxm5-80gb --engine trtllm --weights fp8 --kv fp8 --tp 4
      --input-len 2048 --output-len 256 --concurrency 32)
expect 0 "transforms: sparsity 2:4 (bytes and FLOPs only; accuracy is not modelled)" -- \
  "$BIN" "${base[@]}" --sparsity 2:4
expect 0 "low-rank 2048" -- "$BIN" "${base[@]}" --low-rank 2048:mlp
expect 0 "2:4[:targets] or block:DENSITY:BLOCK[:targets]" -- "$BIN" serve predict --help
expect 0 "RANK[:targets], targets attn,mlp (default attn,mlp)" -- "$BIN" serve predict --help

# 2:4 in fp8 stores 5/8 of the block weights: less weight memory, more KV cache, a faster memory-bound decode.
check_json() {
  "$BIN" "${base[@]}" --json >"$tmp/dense.json" && "$BIN" "${base[@]}" --sparsity 2:4 --json >"$tmp/sparse.json" &&
    python3 - "$tmp/dense.json" "$tmp/sparse.json" <<'PY'
import json, sys
d, s = (json.load(open(f)) for f in sys.argv[1:3])
wd, ws = d["memory"]["weights_bytes"], s["memory"]["weights_bytes"]
assert 0.6 < ws / wd < 0.7, ws / wd   # embeddings and LM head stay bf16
assert s["latency"]["tpot_s"] < d["latency"]["tpot_s"]
assert s["context"]["sparsity"] == "2:4" and d["context"]["sparsity"] is None and s["context"]["low_rank"] is None
PY
}
if check_json; then echo "ok: 2:4 shrinks weights and TPOT"; else echo "FAIL: 2:4 json"; fails=$((fails + 1)); fi

# Refusals: the flag and the constraint named, exit 2.
expect 2 "no sparse kernel runs q4_k" -- "$BIN" serve predict --model llama-3-8b --gpu rtx-4090 --engine llama.cpp \
  --weights q4_k_m --kv fp16 --sparsity 2:4
expect 2 "no Sparse Tensor Cores" -- "$BIN" serve predict --model llama-3-8b --gpu v100-sxm3-32gb --weights fp16 \
  --sparsity 2:4
expect 2 "no Sparse Tensor Cores" -- "$BIN" serve predict --model llama-3-8b --gpu t4 --weights fp16 --sparsity 2:4
expect 2 "--sparsity: expected 2:4[:targets] or block:DENSITY:BLOCK[:targets], got '3:4'" -- \
  "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --sparsity 3:4
expect 2 "--sparsity: unknown target 'ffn'" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb \
  --sparsity 2:4:ffn
expect 2 "--sparsity: block density must be in (0, 1)" -- "$BIN" serve predict --model llama-3-8b \
  --gpu h100-sxm5-80gb --sparsity block:0:32
expect 2 "--low-rank: rank must be a positive integer" -- "$BIN" serve predict --model llama-3-8b \
  --gpu h100-sxm5-80gb --low-rank 0
expect 2 "does not shrink blk.0.attn_k" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --low-rank 1000
expect 2 "--offload: not modelled with --sparsity" -- "$BIN" serve predict --model llama-3-8b --gpu rtx-4090 \
  --engine llama.cpp --weights fp16 --kv fp16 --offload tensor --host desktop-ddr5-5600-2ch-pcie4 --sparsity 2:4
finish
