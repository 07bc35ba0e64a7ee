# shardplan search: table, rejection counts, --explain, --json contract, --emit with atomic no-overwrite, errors.
source "$(dirname "$0")/lib.sh"

S=(search --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 64 --seq 4096 --quiet)
expect 0 "shardplan predict --model llama-3-8b --system dgx-h100 --gpus 8" -- "$BIN" "${S[@]}" --top 3
expect 0 "rejected:" -- "$BIN" "${S[@]}" --top 3
expect 0 "nearest misses" -- "$BIN" "${S[@]}" --top 1 --explain
expect 0 "best plan per GPU count" -- "$BIN" search --model llama-3-8b --system dgx-h100 --gpus 8:16 --gbs 64 \
  --seq 4096 --top 1 --quiet

# The first row's command reproduces the row.
cmd=$("$BIN" "${S[@]}" --top 1 | grep -m1 "shardplan predict" | sed 's/^ *shardplan //')
expect 0 "throughput:" -- "$BIN" $cmd

"$BIN" "${S[@]}" --top 2 --json >"$tmp/s.json"
if python3 - "$tmp/s.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema_version"] == 1 and "context" in j
assert 1 <= len(j["results"]) <= 2
for r in j["results"]:
    for k in ["plan", "memory", "time", "throughput"]: assert k in r, k
    assert r["feasible"]
steps = [r["time"]["step_s"] for r in j["results"]]
assert steps == sorted(steps)
assert j["evaluated"] == j["feasible"] + sum(j["rejected"].values())
assert isinstance(j["pareto"], list) and j["pareto"]
PY
then echo "ok: search --json contract"; else echo "FAIL: search --json contract"; fails=$((fails + 1)); fi

# Emit: writes, refuses to overwrite (exit 2), overwrites with --force.
for fmt in json megatron torchtitan deepspeed nemo; do
  expect 0 "wrote $fmt plan" -- "$BIN" "${S[@]}" --top 1 --emit $fmt --out "$tmp/plan.$fmt"
done
expect 2 "file exists; pass --force to overwrite it" -- "$BIN" "${S[@]}" --top 1 --emit json --out "$tmp/plan.json"
expect 0 "wrote json plan" -- "$BIN" "${S[@]}" --top 1 --emit json --out "$tmp/plan.json" --force
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/plan.json" \
  && echo "ok: emitted JSON parses" || { echo "FAIL: emitted JSON"; fails=$((fails + 1)); }
bash -n "$tmp/plan.deepspeed" && bash -n "$tmp/plan.megatron" && echo "ok: emitted scripts parse" \
  || { echo "FAIL: emitted scripts"; fails=$((fails + 1)); }
ls -a "$tmp" | grep -q '\.tmp' && { echo "FAIL: temp file left"; fails=$((fails + 1)); }

# Bad input and infeasible requests exit 2 with a message naming the constraint.
expect 2 "--tp: 'x' is not a positive integer" -- "$BIN" "${S[@]}" --tp x
expect 2 "no plan matches the constraints" -- "$BIN" "${S[@]}" --tp 3
for axis in tp cp pp vpp mbs ep; do
  expect 2 "--$axis: '0' is not a positive integer" -- "$BIN" "${S[@]}" --$axis 0
done
expect 2 "--tsp: '0' is not a positive integer" -- "$BIN" "${S[@]}" --allow tsp --tsp 0
expect 2 "--allow: unknown strategy 'warp' (tsp or sdp)" -- "$BIN" "${S[@]}" --allow warp
expect 2 "--tsp 4 needs --allow tsp" -- "$BIN" "${S[@]}" --tsp 4

# Opt-in strategies: TSP layouts and SDP settings join the ranking; their plans go to JSON, not to a launcher.
expect 0 " tsp4 pp1 " -- "$BIN" "${S[@]}" --allow tsp --tsp 4 --tp 1 --cp 1 --pp 1 --top 50
expect 0 "sdp0.5/forward" -- "$BIN" "${S[@]}" --allow sdp --pp 1 --tp 1 --top 50
expect 2 "no supported framework implements" -- "$BIN" "${S[@]}" --allow sdp --pp 1 --tp 1 --top 1 --emit megatron \
  --out "$tmp/sdp.sh"
expect 0 "wrote json plan" -- "$BIN" "${S[@]}" --allow sdp --pp 1 --tp 1 --top 1 --emit json --out "$tmp/sdp.json"
expect 2 "did you mean 'megatron'" -- "$BIN" "${S[@]}" --emit megatorn --out "$tmp/x"
expect 0 '"schema_version"' -- "$BIN" "${S[@]}" --emit json  # no --out: standard output (tests/cli/output_cli_test.sh)
expect 0 "selective:core_attn+mlp " -- "$BIN" "${S[@]}" --recompute selective --recompute-modules core_attn+mlp \
  --tp 1 --pp 1 --top 100
expect 2 "--recompute-modules needs selective among the --recompute options" -- "$BIN" "${S[@]}" --recompute full \
  --recompute-modules mlp
expect 2 "--recompute-modules: unknown module 'mpl'" -- "$BIN" "${S[@]}" --recompute-modules mpl
expect 2 "--recompute-modules: no module set given" -- "$BIN" "${S[@]}" --recompute-modules ,,
expect 2 "infeasible: no plan fits" -- "$BIN" search --model llama-3-70b --system dgx-h100 --gpus 8 --gbs 8 --seq 8192 \
  --quiet
finish
