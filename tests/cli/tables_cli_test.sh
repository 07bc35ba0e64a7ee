# The shipped GPU tables are calibration output: regenerating them from the in-repo measured rows
# (hwprofiles/measured/) with `calibrate import-aic` + `calibrate fit --gpu-tables` (calibrate/make_tables.sh, what
# `make tables` runs) gives the shipped files byte for byte. Then the converter's and fit's input errors, and the
# V100 (fp16-only) profile predicting under every framework.
source "$(dirname "$0")/lib.sh"

cd "$SRC" || exit 1
if "$SRC/calibrate/make_tables.sh" "$BIN" "$tmp/tables" "$tmp/raw" > "$tmp/make.log" 2>&1; then
  echo "ok: make_tables.sh"
else
  echo "FAIL: make_tables.sh"; tail -5 "$tmp/make.log"; fails=$((fails + 1))
fi
for f in "$SRC"/hwprofiles/tables/*.yaml; do
  name=$(basename "$f")
  if cmp -s "$f" "$tmp/tables/$name"; then echo "ok: $name regenerates"; else
    echo "FAIL: hwprofiles/tables/$name differs from what calibrate/make_tables.sh produces (run make tables)"
    diff "$f" "$tmp/tables/$name" | head -5; fails=$((fails + 1))
  fi
done
[ "$(ls "$tmp/tables" | wc -l)" = "$(ls "$SRC"/hwprofiles/tables/*.yaml | wc -l)" ] || {
  echo "FAIL: make_tables.sh writes files that are not shipped"; fails=$((fails + 1)); }

expect 2 "file exists; pass --force" -- "$BIN" calibrate import-aic hwprofiles/measured --gpu b200 \
  --out "$tmp/raw/b200.jsonl"
expect 2 "AIConfigurator has no measurements of 'v100-sxm3-32gb'" -- \
  "$BIN" calibrate import-aic hwprofiles/measured --gpu v100-sxm3-32gb --out "$tmp/v.jsonl"
expect 2 "not a directory" -- "$BIN" calibrate import-aic "$tmp/none" --gpu b200 --out "$tmp/x.jsonl"
mkdir -p "$tmp/gz" && : > "$tmp/gz/gemm.csv.gz"
expect 2 "compressed tables are not read" -- "$BIN" calibrate import-aic "$tmp/gz" --gpu b200 --out "$tmp/x.jsonl"
expect 2 "--base and --gpu-tables exclude each other" -- \
  "$BIN" calibrate fit "$tmp/raw/b200.jsonl" --gpu-tables b200 --base dgx-b200 --out "$tmp/x.yaml"
expect 2 "--base is required (or --gpu-tables)" -- "$BIN" calibrate fit "$tmp/raw/b200.jsonl" --out "$tmp/x.yaml"

# Every GPU profile predicts: V100 (fp16 tensor cores, no bf16) under every framework, and a bf16 plan on it is a
# plan problem (exit 2), never an internal error.
for fw in megatron-lm nemo torchtitan llm-foundry megatron-deepspeed other megatron-lm-legacy nemo-2024; do
  expect 0 "throughput:" -- "$BIN" predict --model mcore-gpt-1.7b --gpu v100-sxm3-32gb --gpus 16 --precision fp16 \
    --gbs 64 --seq 2048 --recompute full --tp 2 --framework "$fw"  # each framework's default ZeRO stage
done
# A published-runs row on V100 in fp16 (the schema's v100-sxm3-32gb) validates under every framework of the schema.
for fw in megatron-lm nemo torchtitan llm-foundry megatron-deepspeed other; do
  case $fw in torchtitan | llm-foundry | other) z=3 ;; *) z=1 ;; esac  # a ZeRO stage each one offers with tp 2
  cat >"$tmp/v100_$fw.yaml" <<YAML
- id: v100_fp16_$fw
  source: synthetic V100 row (tables_cli_test.sh)
  url: none
  trust: low
  framework: $fw
  model: {name: GPT 1.7B, layers: 24, hidden: 2304, ffn_hidden: 9216, heads: 24, kv_heads: 24, head_dim: 96,
          vocab: 51200, seq_len: 2048, gated_mlp: false, tied_embeddings: true, moe: null, mla: null}
  system: {gpu: v100-sxm3-32gb, gpus: 16, gpus_per_node: 16, nvlink_domain: 16, nic_gbps_per_gpu: 100,
           power_limit_w: null}
  precision: fp16
  plan: {tp: 2, pp: 1, vpp: 1, dp: 8, cp: 1, ep: 1, etp: null, zero: $z, sequence_parallel: null,
         micro_batch: null, global_batch: 64, recompute: null}
  measured: {tokens_per_s_per_gpu: 1000, step_time_s: null, model_tflops_per_gpu: null, peak_memory_gib: null,
             derived_from: synthetic}
  notes: synthetic
YAML
  expect 0 "throughput MAPE" -- "$BIN" validate --runs "$tmp/v100_$fw.yaml"
  "$BIN" validate --runs "$tmp/v100_$fw.yaml" --json | python3 -c "
import json, sys
r = json.load(sys.stdin)
runs = [x for x in r['runs'] if not x.get('skipped')]
assert len(runs) == 1 and runs[0]['predicted_tokens_per_s_per_gpu'] > 0, r['runs']
" && echo "ok: V100 fp16 row predicts under $fw" || { echo "FAIL: V100 fp16 row under $fw"; fails=$((fails + 1)); }
done
expect 2 "precision bf16 is not supported by v100-sxm3-32gb" -- \
  "$BIN" predict --model mcore-gpt-1.7b --gpu v100-sxm3-32gb --gpus 16 --precision bf16 --gbs 64 --seq 2048
expect 2 "precision fp4 is not supported by h100-sxm5-80gb" -- "$BIN" predict --model llama-3-8b --gpu h100-sxm5-80gb \
  --gpus 8 --precision nvfp4 --gbs 64 --seq 2048
finish
