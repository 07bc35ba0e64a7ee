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

expect 2 "file exists; pass --force" -- "$BIN" calibrate import-aic hwprofiles/measured --gpu b200 --out "$tmp/raw/b200.jsonl"
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
for fw in megatron-lm nemo torchtitan llm-foundry megatron-deepspeed other megatron-lm-legacy; do
  expect 0 "throughput:" -- "$BIN" predict --model mcore-gpt-1.7b --gpu v100-sxm3-32gb --gpus 16 --precision fp16 \
    --gbs 64 --seq 2048 --recompute full --tp 2 --framework "$fw"  # each framework's default ZeRO stage
done
expect 2 "precision bf16 is not supported by v100-sxm3-32gb" -- \
  "$BIN" predict --model mcore-gpt-1.7b --gpu v100-sxm3-32gb --gpus 16 --precision bf16 --gbs 64 --seq 2048
expect 2 "precision fp4 is not supported by h100-sxm5-80gb" -- "$BIN" predict --model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 --precision nvfp4 --gbs 64 --seq 2048
finish
