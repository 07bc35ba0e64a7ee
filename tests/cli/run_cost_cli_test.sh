# predict and search with a whole run: --train-tokens/--steps, price, energy, failures, objectives.
source "$(dirname "$0")/lib.sh"

P=(--model llama-3-8b --system dgx-h100 --gpus 8 --tp 2 --gbs 64 --seq 4096 --recompute full)
expect 0 "run: 1.00 T tokens" -- "$BIN" predict "${P[@]}" --train-tokens 1T --gpu-hour-price 2
expect 0 "cost " -- "$BIN" predict "${P[@]}" --train-tokens 1T --gpu-hour-price 2
expect 0 "expected interruptions" -- "$BIN" predict "${P[@]}" --train-tokens 1T --mtbf-hours llama3
expect 0 "(Daly's optimum)" -- "$BIN" predict "${P[@]}" --steps 1000 --mtbf-hours 5000
expect 0 "(async)" -- "$BIN" predict "${P[@]}" --steps 1000 --mtbf-hours 5000 --async-checkpoint

# JSON: the run object, and its arithmetic against the step time.
"$BIN" predict "${P[@]}" --steps 1000 --gpu-hour-price 3 --pue 1.2 --mtbf-hours 50000 --json >"$tmp/r.json"
if python3 - "$tmp/r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r, t = j["run"], j["time"]
assert r["steps"] == 1000 and r["tokens"] == 1000 * 64 * 4096
assert abs(r["compute_s"] - 1000 * t["step_s"]) < 1e-6 * r["compute_s"]
assert r["wall_s"] > r["compute_s"] and 0 < r["goodput"] < 1
assert abs(r["gpu_hours"] - 8 * r["wall_s"] / 3600) < 1e-9 * r["gpu_hours"]
assert abs(r["cost"] - 3 * r["gpu_hours"]) < 1e-9 * r["cost"]
assert abs(r["it_energy_kwh"] - r["gpu_hours"] * 0.7) < 1e-9 * r["it_energy_kwh"]  # 700 W TDP
assert abs(r["facility_energy_kwh"] - 1.2 * r["it_energy_kwh"]) < 1e-9 * r["it_energy_kwh"]
assert r["failures"]["system_mtbf_s"] == 50000 * 3600 / 8
assert r["checkpoint"]["interval_rule"] == "daly"
PY
then echo "ok: predict --json run object"; else echo "FAIL: predict --json run object"; fails=$((fails + 1)); fi
"$BIN" predict "${P[@]}" --json | python3 -c 'import json,sys; assert "run" not in json.load(sys.stdin)' \
  && echo "ok: no run without --train-tokens" || { echo "FAIL: run without tokens"; fails=$((fails + 1)); }

# Bad run input: exit 2 with the flag named.
expect 2 "--gpu-hour-price describes a run: give --train-tokens or --steps" -- "$BIN" predict "${P[@]}" \
  --gpu-hour-price 2
expect 2 "--train-tokens and --steps are exclusive" -- "$BIN" predict "${P[@]}" --train-tokens 1T --steps 5
expect 2 "--train-tokens: expected a positive token count such as 15.6T or 2e12, got '12X'" \
  -- "$BIN" predict "${P[@]}" --train-tokens 12X
expect 2 "--mtbf-hours: expected a positive number of hours or 'llama3', got 'often'" -- "$BIN" predict "${P[@]}" \
  --steps 5 --mtbf-hours often
expect 2 "--pue must be at least 1" -- "$BIN" predict "${P[@]}" --steps 5 --pue 0.5

# search objectives across GPU counts.
S=(--model llama-3-8b --gpu h100-sxm5-80gb --gpus 8,16,32 --gbs 256 --seq 4096 --top 1 --quiet --tp 1,2 --pp 1)
expect 0 "recommended (--objective gpus): 8 GPUs" -- "$BIN" search "${S[@]}" --objective gpus
expect 0 "recommended (--objective time, --max-gpus 16): 16 GPUs" -- "$BIN" search "${S[@]}" --train-tokens 100B \
  --objective time --max-gpus 16
expect 0 "run of each GPU count's fastest plan" -- "$BIN" search "${S[@]}" --train-tokens 100B --gpu-hour-price 2 \
  --objective cost
expect 2 "--objective cost ranks whole runs: give --train-tokens or --steps" -- "$BIN" search "${S[@]}" --objective cost
expect 2 "no plan within --max-gpus 4" -- "$BIN" search "${S[@]}" --max-gpus 4
expect 2 "--max-cost needs --gpu-hour-price" -- "$BIN" search "${S[@]}" --train-tokens 1B --max-cost 10
"$BIN" search "${S[@]}" --train-tokens 100B --objective energy --json >"$tmp/s.json"
if python3 - "$tmp/s.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
o = j["objective"]
assert o["name"] == "energy" and o["chosen"] is not None
best = min(r["run"]["facility_energy_kwh"] for r in j["results"])
assert o["chosen"]["run"]["facility_energy_kwh"] == best
assert all("run" in r for r in j["results"])
PY
then echo "ok: search --json objective"; else echo "FAIL: search --json objective"; fails=$((fails + 1)); fi

finish
