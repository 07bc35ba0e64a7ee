# shardplan calibrate fit-runs and validate --fit-on (issue 14 parts 2-4): a fit to real published runs, the
# profile it writes and the interval predict then prints, refusals, and the cross-validation's bad input.
source "$(dirname "$0")/lib.sh"

ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
RUNS="$SRC/tests/validation/published_runs.yaml"
# The Megatron-LM README's H100 weak-scaling rows (9 runs of one source) as a user's own runs file.
awk '/^- id: /{keep = ($3 ~ /^mcore080_h100/)} keep' "$RUNS" > "$tmp/mine.yaml"
[ "$(grep -c '^- id:' "$tmp/mine.yaml")" = 9 ] && ok "9 runs extracted" || bad "extracting the runs"

expect 0 "leave-one-out over 9 runs" -- "$BIN" calibrate fit-runs "$tmp/mine.yaml" --base dgx-h100 --out "$tmp/p.yaml"
grep -q "^inherits: dgx-h100" "$tmp/p.yaml" && ok "profile inherits the base" || bad "profile lacks inherits"
grep -q "mcore080_h100_weak_1.7b" "$tmp/p.yaml" && ok "provenance names the runs" || bad "provenance lacks the runs"
grep -q "^  loo_errors_pct: \[" "$tmp/p.yaml" && ok "LOO errors recorded" || bad "no LOO errors"
grep -q "^  host_layer_pass_ms: " "$tmp/p.yaml" && ok "profile states the host time per layer pass" \
  || bad "no host_layer_pass_ms"
# A host time per layer pass outside its physical range [0, 20] ms: the profile is refused, naming the key.
sed 's/^  host_layer_pass_ms: .*/  host_layer_pass_ms: 25/' "$tmp/p.yaml" > "$tmp/h.yaml"
expect 2 "fitted.host_layer_pass_ms: 25 is outside the physical range [0, 20]" \
  -- "$BIN" predict --model llama-3-8b --gpus 8 --tp 2 --pp 1 --dp 4 --mbs 1 --gbs 64 --seq 4096 --system "$tmp/h.yaml"
expect 2 "exists" -- "$BIN" calibrate fit-runs "$tmp/mine.yaml" --base dgx-h100 --out "$tmp/p.yaml"
expect 0 "wrote" -- "$BIN" calibrate fit-runs "$tmp/mine.yaml" --base dgx-h100 --out "$tmp/p.yaml" --force

# predict with it quotes the fit's own leave-one-out errors; without it, the validation record.
P=(predict --model llama-3-8b --gpus 8 --tp 2 --pp 1 --dp 4 --mbs 1 --gbs 64 --seq 4096 --framework megatron-lm)
expect 0 "leave-one-out errors" -- "$BIN" "${P[@]}" --system "$tmp/p.yaml"
expect 0 "expected range:" -- "$BIN" "${P[@]}" --system "$tmp/p.yaml"
expect 0 "of the record's" -- "$BIN" "${P[@]}" --system dgx-h100
out=$("$BIN" "${P[@]}" --system "$tmp/p.yaml" --json)
grep -q '"basis": "fit_leave_one_out"' <<<"$out" && ok "JSON uncertainty from the fit" || bad "JSON uncertainty"
out=$("$BIN" "${P[@]}" --system dgx-h100 --json)
grep -q '"basis": "validation_record"' <<<"$out" && ok "JSON uncertainty from the record" || bad "JSON record basis"

# A fitted profile as --base, runs of another GPU, an unreadable runs file: exit 2 with the cause.
expect 2 "was itself written by calibrate fit-runs" -- "$BIN" calibrate fit-runs "$tmp/mine.yaml" --base "$tmp/p.yaml" \
  --out "$tmp/q.yaml"
expect 2 "mine.yaml:1: run mcore080_h100_weak_1.7b ran on h100-sxm5-80gb" \
  -- "$BIN" calibrate fit-runs "$tmp/mine.yaml" \
  --base dgx-a100 --out "$tmp/q.yaml"
expect 2 "" -- "$BIN" calibrate fit-runs "$tmp/missing.yaml" --base dgx-h100 --out "$tmp/q.yaml"

# Runs three times faster than anything the tables allow: refused, naming the rows; --accept-anyway records it.
awk '{ if ($1 == "tokens_per_s_per_gpu:") { $2 = $2 * 3; print "    " $1 " " $2 } else print }' "$tmp/mine.yaml" \
  > "$tmp/fast.yaml"
expect 2 "outside its physical range" -- "$BIN" calibrate fit-runs "$tmp/fast.yaml" --base dgx-h100 --out "$tmp/f.yaml"
expect 2 "(line " -- "$BIN" calibrate fit-runs "$tmp/fast.yaml" --base dgx-h100 --out "$tmp/f.yaml"
[ ! -e "$tmp/f.yaml" ] && ok "nothing written on refusal" || bad "a refused profile was written"
expect 0 "AT ITS BOUND" -- "$BIN" calibrate fit-runs "$tmp/fast.yaml" --base dgx-h100 --out "$tmp/f.yaml" \
  --accept-anyway
grep -q "ACCEPTED WITH --accept-anyway DESPITE" "$tmp/f.yaml" && ok "provenance records --accept-anyway" \
  || bad "provenance lacks --accept-anyway"

# The H100 NeMo-family rows, MoE among them: each tier's all-to-all has a scale of its own (the expert
# dispatch), so the MoE rows no longer drive the tier's ring collectives out of range (it was refused before).
awk '/^- id: /{keep = ($3 ~ /^(mbridge_25.09_dgx-h100|nemo2407_h100)/)} keep' "$RUNS" > "$tmp/nemo.yaml"
expect 0 "alltoall_scale.infiniband" -- "$BIN" calibrate fit-runs "$tmp/nemo.yaml" --base dgx-h100 \
  --out "$tmp/n.yaml"
grep -q "^  alltoall_scale: {" "$tmp/n.yaml" && ok "profile states alltoall_scale" || bad "no alltoall_scale"
# --fit-on half halves the dense and the MoE rows apart: the fit sees MoE rows and MoE rows are held out.
out=$("$BIN" validate --runs "$tmp/nemo.yaml" --fit-on half --json)
python3 - "$out" <<'PY' && ok "stratified halves" || bad "halves not stratified by dense/MoE"
import json, sys
h = json.loads(sys.argv[1])["halves"]
moe_held = [r for r in h["held_out"] if r["moe"]]
fitted = set(h["fits"][0]["fitted_on"])
assert moe_held and any(i.startswith("mbridge_25.09_dgx-h100_") and ("deepseek" in i or "qwen3" in i) for i in fitted)
PY

# The figures of docs/fit-runs.md (seed 1 on the whole file): dense held out 5.6%, MoE 8.2%; H100 llm-foundry's
# time per layer pass is its host time (2.45 ms, off both ends), its per-kernel cost back at the launch prior.
"$BIN" validate --runs "$RUNS" --fit-on half:1 --json > "$tmp/cv.json"
python3 - "$tmp/cv.json" <<'PY' && ok "fit-on half:1 figures" || bad "fit-on half:1 figures moved"
import json, sys
h = json.load(open(sys.argv[1]))["halves"]
assert h["dense"]["mape_pct"] <= 5.8 and h["moe"]["mape_pct"] <= 12.0, (h["dense"], h["moe"])
f = next(f for f in h["fits"] if f["group"] == "h100-sxm5-80gb llm-foundry")
p = {q["name"]: q for q in f["parameters"]}
host, k = p["host_layer_pass_ms"], p["kernel_overhead_us"]
assert 1.0 < host["lo95"] and host["hi95"] < 20 and not host["at_bound"], host
assert k["value"] < 10 and k["hi95"] < 50, k
PY

# validate --fit-on: a filter on the small file, and bad expressions.
expect 0 "held-out MAPE: dense" -- "$BIN" validate --runs "$tmp/mine.yaml" --fit-on 'id=_(1.7|16|119|314)b$'
expect 0 '"scheme"' -- "$BIN" validate --runs "$tmp/mine.yaml" --fit-on 'id=_(1.7|16|119|314)b$' --json
expect 2 "expected half, half:SEED, sources or FIELD=REGEX" -- "$BIN" validate --runs "$tmp/mine.yaml" --fit-on halves
expect 2 "the seed must be a non-negative integer" -- "$BIN" validate --runs "$tmp/mine.yaml" --fit-on half:x
expect 2 "unknown field 'colour'" -- "$BIN" validate --runs "$tmp/mine.yaml" --fit-on colour=red
expect 2 "no run matches" -- "$BIN" validate --runs "$tmp/mine.yaml" --fit-on id=nothing
expect 2 "drop --system" -- "$BIN" validate --runs "$tmp/mine.yaml" --fit-on half --system dgx-h100
finish
