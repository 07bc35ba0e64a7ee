# shardplan serve validate: per-row errors, per-source/engine/GPU summaries, the contract's summary line last.
source "$(dirname "$0")/lib.sh"

runs="$SRC/tests/validation/serving/serving_runs.yaml"
# A few rows of each kind (llama.cpp full-GPU, TRT-LLM static, AIConfigurator) with the HF configs beside them.
mkdir -p "$tmp/hf_configs" && cp "$SRC"/tests/validation/serving/hf_configs/*.json "$tmp/hf_configs/"
awk '/^- id:/ {n++} NR < 30 || n <= 2 || (n >= 1100 && n <= 1104)' "$runs" | sed '/^# /d' >"$tmp/few.yaml"
out=$("$BIN" serve validate --runs "$tmp/few.yaml")
last=$(printf '%s\n' "$out" | sed '/^[[:space:]]*$/d' | tail -n 1)
if [[ "$last" =~ ^TPOT\ MAPE\ [0-9.]+%\ over\ [0-9]+\ runs\;\ TTFT\ MAPE\ [0-9.]+%\ over\ [0-9]+\ runs\;\ decode\ MAPE\ [0-9.]+%\ over\ [0-9]+\ runs$ ]]; then
  echo "ok: summary line: $last"
else
  echo "FAIL: last line: $last"; fails=$((fails + 1))
fi
expect 0 "by engine" -- "$BIN" serve validate --runs "$tmp/few.yaml"
expect 0 "llamacpp_xd_l3_rtx4090_8b_q4km" -- "$BIN" serve validate --runs "$tmp/few.yaml"
"$BIN" serve validate --runs "$tmp/few.yaml" --json |
  python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["summary"]["overall"]["decode"]["runs"] >= 1' \
  && echo "ok: serve validate --json" || { echo "FAIL: serve validate --json"; fails=$((fails + 1)); }
sed '0,/  trust: medium/s//  trusst: medium/' "$tmp/few.yaml" >"$tmp/typo.yaml"
expect 2 "unknown key 'llamacpp_xd_l3_rtx4090_8b_q4km.trusst', did you mean 'trust'?" -- "$BIN" serve validate --runs "$tmp/typo.yaml"
expect 2 "cannot open" -- "$BIN" serve validate --runs "$tmp/none.yaml"
# An ik_llama.cpp offload row on a named machine (host.machine): its host line labels the DRAM rate as measured
# there and the other rates as the host rule's; an unknown machine names the file, line and key, exit 2.
awk '/^- id:/ {n = ($3 == "ikllama_pr841_rtx4080_gptoss20b_cpumoe")} n' "$runs" >"$tmp/ik.yaml"
expect 0 "host: 55 GB/s (measured machine rate), 2.36 TFLOP/s and PCIe 26.2 GB/s (host rule)" -- \
  "$BIN" serve validate --runs "$tmp/ik.yaml"
sed 's/machine: ikawrakow-ryzen9-7950x/machine: ikawrakow-ryzen9/' "$tmp/ik.yaml" >"$tmp/ik_bad.yaml"
line=$(grep -n 'machine: ikawrakow' "$tmp/ik_bad.yaml" | cut -d: -f1)
expect 2 "ik_bad.yaml:$line: ikllama_pr841_rtx4080_gptoss20b_cpumoe.system.host.machine: expected one of" -- \
  "$BIN" serve validate --runs "$tmp/ik_bad.yaml"
finish
