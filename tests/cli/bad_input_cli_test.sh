# Bad input: a clear message naming the file, line and key or the violated constraint, and exit code 2.
source "$(dirname "$0")/lib.sh"

expect 2 "unknown model 'llama-3-8', did you mean 'llama-3-8b'?" -- "$BIN" predict --model llama-3-8 --system dgx-h100
expect 2 "did you mean 'dgx-h100'" -- "$BIN" predict --model llama-3-8b --system dgx-h10
expect 2 "tp (3) does not divide heads (32)" -- "$BIN" predict --model llama-3-8b --system dgx-h100 --gpus 24 --tp 3
expect 2 "pp x vpp (3 x 1) does not divide layers (32); --uneven-pp allows an uneven split" -- "$BIN" predict \
  --model llama-3-8b --system dgx-h100 --gpus 24 --pp 3
expect 2 "does not equal the GPU count (8)" -- "$BIN" predict --model llama-3-8b --system dgx-h100 --gpus 8 --tp 2 \
  --dp 8
expect 2 "does not divide global_batch (10)" -- "$BIN" predict --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 10
expect 2 "cannot open" -- "$BIN" predict --model /nonexistent/model.yaml --system dgx-h100
expect 2 "give --system CLUSTER or --gpu GPU" -- "$BIN" predict --model llama-3-8b
expect 2 "--tp" -- "$BIN" predict --model llama-3-8b --system dgx-h100 --tp 0
expect 2 "--recompute" -- "$BIN" predict --model llama-3-8b --system dgx-h100 --recompute sometimes
expect 2 "precision fp8 is not supported by a100-sxm4-80gb" -- "$BIN" predict --model llama-3-8b --system dgx-a100 \
  --precision fp8

cat >"$tmp/typo.yaml" <<'Y'
schema_version: 1
kind: model
name: typo
layers: 2
hiden: 64
Y
expect 2 "typo.yaml:5: unknown key 'hiden', did you mean 'hidden'?" -- "$BIN" predict --model "$tmp/typo.yaml" \
  --system dgx-h100
printf 'layers: [1, 2\n' >"$tmp/broken.yaml"
expect 2 "broken.yaml:2:1: invalid YAML" -- "$BIN" predict --model "$tmp/broken.yaml" --system dgx-h100
printf '{"hidden_size": 64,\n' >"$tmp/config.json"
expect 2 "config.json:2:1: invalid JSON" -- "$BIN" predict --model "$tmp/config.json" --system dgx-h100
expect 2 "ep (3) does not divide experts (256)" -- "$BIN" predict --model deepseek-v3 --system dgx-h100 --ep 3
finish
