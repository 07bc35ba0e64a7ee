# Every shipped model and every shipped cluster predicts through the CLI (no description breaks silently).
source "$(dirname "$0")/lib.sh"

for m in "$SRC"/models/*.yaml; do
  name=$(basename "$m" .yaml)
  # MoE models are refused until the MoE model lands; the refusal must be the clear message.
  if grep -q '^moe:' "$m"; then
    expect 2 "MoE" -- "$BIN" predict --model "$name" --system dgx-h100 --gpus 8
    continue
  fi
  out=$("$BIN" predict --model "$name" --system dgx-h100 --gpus 8 --zero 3 --recompute full --seq 2048 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 2 ]; then echo "FAIL: $name exit $rc"; echo "$out" | tail -3; fails=$((fails + 1)); fi
done
for c in "$SRC"/hwprofiles/clusters/*.yaml; do
  name=$(basename "$c" .yaml)
  expect 0 "throughput:" -- "$BIN" predict --model llama-2-7b --system "$name" --zero 1 --recompute full --seq 2048 --gbs 576
done
finish
