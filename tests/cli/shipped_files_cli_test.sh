# Every shipped model and every shipped cluster predicts through the CLI (no description breaks silently).
source "$(dirname "$0")/lib.sh"

for m in "$SRC"/models/*.yaml; do
  name=$(basename "$m" .yaml)
  # MoE models predict with their experts spread over the 8 GPUs (they may not fit: exit 2 with the breakdown),
  # under the distributed optimizer: Megatron-LM refuses FSDP2 (ZeRO-3) with expert parallelism.
  ep=() zero=3
  if grep -q '^moe:' "$m"; then ep=(--ep 8); zero=1; fi
  out=$("$BIN" predict --model "$name" --system dgx-h100 --gpus 8 --zero $zero --recompute full --seq 2048 "${ep[@]}" \
    2>&1)
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 2 ]; then echo "FAIL: $name exit $rc"; echo "$out" | tail -3; fails=$((fails + 1)); fi
  if [ ${#ep[@]} -gt 0 ] && ! grep -q "memory per GPU" <<<"$out"; then
    echo "FAIL: $name (MoE) was not evaluated"; echo "$out" | tail -3; fails=$((fails + 1))
  fi
done
for c in "$SRC"/hwprofiles/clusters/*.yaml; do
  name=$(basename "$c" .yaml)
  expect 0 "throughput:" -- "$BIN" predict --model llama-2-7b --system "$name" --zero 1 --recompute full --seq 2048 \
    --gbs 576
done
finish
