# predict and search quote the validation record of the nearest published runs (text and JSON); validate
# --write-record writes it (never over an existing file without --force).
source "$(dirname "$0")/lib.sh"

rec="$SRC/hwprofiles/validation_record.yaml"
# The shipped group for H100 x megatron-lm, as the record states it.
line=$(grep -F "generation: H100, framework: megatron-lm," "$rec")
runs=$(sed -E 's/.*runs: ([0-9]+).*/\1/' <<<"$line")
mape=$(sed -E 's/.*mape_pct: ([-0-9.]+).*/\1/' <<<"$line")
bias=$(sed -E 's/.*bias_pct: ([-0-9.]+).*/\1/' <<<"$line")
text=$(printf 'trust: validated on %d H100 megatron-lm runs: MAPE %.0f%%, bias %+.0f%%' "$runs" "$mape" "$bias")
args=(--model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 --gbs 64 --seq 4096 --mbs 1 --recompute full)
expect 0 "$text" -- "$BIN" predict "${args[@]}"
"$BIN" predict "${args[@]}" --json | python3 -c "
import json, sys
r = json.load(sys.stdin)['validation_record']
assert r['exact'] and r['generation'] == 'H100' and r['framework'] == 'megatron-lm', r
assert r['runs'] == $runs and abs(r['mape_pct'] - $mape) < 1e-9 and abs(r['bias_pct'] - $bias) < 1e-9, r
" && echo "ok: predict --json carries the record" || { echo "FAIL: predict --json record"; fails=$((fails + 1)); }
# An H200 is a Hopper part: the H100 record. A framework without rows on that generation: the nearest, said so.
expect 0 "validated on $runs H100 megatron-lm runs" -- "$BIN" predict --model llama-3-8b --gpu h200-sxm-141gb \
  --gpus 8 --gbs 64 --seq 4096 --mbs 1 --recompute full
expect 0 "no published Blackwell megatron-deepspeed runs; nearest validation record:" -- \
  "$BIN" predict --model llama-3-8b --gpu b200 --gpus 8 --gbs 64 --seq 4096 --mbs 1 --recompute full \
  --framework megatron-deepspeed
sargs=(--model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 --gbs 64 --seq 4096 --top 2 --quiet)
expect 0 "$text" -- "$BIN" search "${sargs[@]}"
"$BIN" search "${sargs[@]}" --json | python3 -c "
import json, sys
r = json.load(sys.stdin)['validation_record']
assert r['runs'] == $runs and r['exact'], r
" && echo "ok: search --json carries the record" || { echo "FAIL: search --json record"; fails=$((fails + 1)); }

# Without a shipped record the prediction says it is not validated.
mkdir -p "$tmp/home/hwprofiles"
ln -s "$SRC/models" "$tmp/home/models"
for f in "$SRC"/hwprofiles/*; do
  [ "$(basename "$f")" = validation_record.yaml ] || ln -s "$f" "$tmp/home/hwprofiles/$(basename "$f")"
done
expect 0 "trust: not validated: no validation record shipped" \
  -- env SHARDPLAN_HOME="$tmp/home" "$BIN" predict "${args[@]}"

# --write-record: the record of the runs given; an existing file needs --force.
awk '/^- id:/ {n++} n <= 3' "$SRC/tests/validation/published_runs.yaml" >"$tmp/few.yaml"
expect 0 "throughput MAPE" -- "$BIN" validate --runs "$tmp/few.yaml" --write-record "$tmp/rec.yaml"
expect 0 "{generation: H100, framework: megatron-lm, runs: 3," -- cat "$tmp/rec.yaml"
expect 2 "exists" -- "$BIN" validate --runs "$tmp/few.yaml" --write-record "$tmp/rec.yaml"
expect 0 "" -- "$BIN" validate --runs "$tmp/few.yaml" --write-record "$tmp/rec.yaml" --force
expect 2 "--write-record records the plain validation" -- "$BIN" validate --runs "$tmp/few.yaml" \
  --write-record "$tmp/rec2.yaml" --fastest-fit
finish
