# shardplan validate: per-run table, per-source summary and the contract's summary line last.
source "$(dirname "$0")/lib.sh"

awk '/^- id:/ {n++} n <= 3' "$SRC/tests/validation/published_runs.yaml" >"$tmp/few.yaml"
out=$("$BIN" validate --runs "$tmp/few.yaml")
last=$(printf '%s\n' "$out" | sed '/^[[:space:]]*$/d' | tail -n 1)
if [[ "$last" =~ ^throughput\ MAPE\ [0-9.]+%\ over\ [0-9]+\ runs\;\ memory\ MAPE\ [0-9.]+%\ over\ [0-9]+\ runs$ ]]; then
  echo "ok: summary line: $last"
else
  echo "FAIL: last line: $last"; fails=$((fails + 1))
fi
expect 0 "mcore080_h100_weak_1.7b" -- "$BIN" validate --runs "$tmp/few.yaml"
"$BIN" validate --runs "$tmp/few.yaml" --json | python3 -c \
  'import json,sys; j=json.load(sys.stdin); assert j["summary"]["throughput"]["runs"] >= 1' \
  && echo "ok: validate --json" || { echo "FAIL: validate --json"; fails=$((fails + 1)); }

# torchtitan's 405B pipeline row takes its recipe default, pp micro-batches (mbs 32 / 8 = 4); --fastest-fit: mbs 1.
awk '/^- id:/ {keep = ($3 == "torchtitan_h100_t5_405b_g512_1f1b")} keep' \
  "$SRC/tests/validation/published_runs.yaml" >"$tmp/titan_pp.yaml"
expect 0 "mbs=4 (recipe default, pp micro-batches)" -- "$BIN" validate --runs "$tmp/titan_pp.yaml"
# Every unstated field says the value used and why, with the bracket over the settings left open (text, JSON).
expect 0 "fp8_recipe=tensorwise (recipe default) fp8_param_gather=on (recipe default)" -- \
  "$BIN" validate --runs "$tmp/titan_pp.yaml"
"$BIN" validate --runs "$tmp/titan_pp.yaml" --json | python3 -c '
import json, sys
row = json.load(sys.stdin)["runs"][0]
why = {u["field"]: (u["value"], u["why"]) for u in row["unstated"]}
assert why["mbs"] == ("4", "recipe default, pp micro-batches"), why
assert why["fp8_recipe"] == ("tensorwise", "recipe default"), why
b = row["bracket"]
assert b["settings"] > 1 and b["worst_error_pct"] <= row["error_pct"] <= b["best_error_pct"], b
' && echo "ok: validate --json carries unstated fields and the bracket" \
  || { echo "FAIL: unstated/bracket JSON"; fails=$((fails + 1)); }
expect 0 "mbs=1 (fastest that fits)" -- "$BIN" validate --runs "$tmp/titan_pp.yaml" --fastest-fit
"$BIN" validate --runs "$tmp/titan_pp.yaml" --fastest-fit --json |
  python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["context"]["fastest_fit"] is True' \
  && echo "ok: validate --fastest-fit --json" \
  || { echo "FAIL: fastest_fit in JSON"; fails=$((fails + 1)); }

sed 's/  trust: high/  trusst: high/' "$tmp/few.yaml" >"$tmp/typo.yaml"
expect 2 "unknown key 'mcore080_h100_weak_1.7b.trusst', did you mean 'trust'?" -- "$BIN" validate \
  --runs "$tmp/typo.yaml"
expect 2 "cannot open" -- "$BIN" validate --runs "$tmp/none.yaml"
# --system: a calibrated profile's tables apply to the runs on its GPU (here a deliberately slow NVLink, so the
# tensor-parallel runs predict lower and the error changes).
cat >"$tmp/slow.yaml" <<'Y'
schema_version: 1
kind: cluster
name: slow-h100
inherits: dgx-h100
provenance: "test profile: NVLink at 1% of its bandwidth"
tiers:
  - {name: nvlink, domain_gpus: 8, bw_per_gpu_gbps: 450, latency_us: 3.4, oversubscription: 1.0,
     busbw_eff: {points: [[1.0, 0.01]], source: "test"}, sources: ["test"]}
  - {name: infiniband, domain_gpus: 0, bw_per_gpu_gbps: 50, latency_us: 14.0, oversubscription: 1.0,
     busbw_eff: {points: [[1.0, 0.86]], source: "test"}, sources: ["test"]}
Y
base=$("$BIN" validate --runs "$tmp/few.yaml" | tail -n 1)
slow=$("$BIN" validate --runs "$tmp/few.yaml" --system "$tmp/slow.yaml" | tail -n 1)
if [ "$base" != "$slow" ]; then echo "ok: --system changes the prediction ($slow)"
else echo "FAIL: --system ignored"; fails=$((fails + 1)); fi
expect 2 "unknown cluster" -- "$BIN" validate --runs "$tmp/few.yaml" --system no-such-cluster
finish
