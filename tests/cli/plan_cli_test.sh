#!/usr/bin/env bash
# Plan files (predict --plan, search --compare), flags that fit the model, "did you mean", list, parameter counts.
source "$(dirname "$0")/lib.sh"

# The value of a JSON number key as nlohmann writes it (same double, same text): `num FILE KEY`.
num() { grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'; }
# same A B WHAT: the two values are identical text.
same() {
  if [ -n "$1" ] && [ "$1" = "$2" ]; then echo "ok: $3 ($1)"
  else echo "FAIL: $3: '$1' vs '$2'"; fails=$((fails + 1)); fi
}

# 1. predict --plan reproduces the numbers of the plan it was emitted from: dense (interleaved pipeline, from a
#    standard --gpu system with a NIC override) and MoE (expert parallelism), and of a predict --json report.
"$BIN" search --model llama-3-70b --gpu h100-sxm5-80gb --nic-gbps 400 --gpus 64 --gbs 128 --seq 8192 --quiet \
  --emit json --out "$tmp/dense.json" >/dev/null
"$BIN" search --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --gbs 64 --seq 4096 --quiet \
  --emit json --out "$tmp/moe.json" >/dev/null
for f in dense moe; do
  "$BIN" predict --plan "$tmp/$f.json" --json >"$tmp/$f.report.json"
  same "$(num "$tmp/$f.json" step_s)" "$(num "$tmp/$f.report.json" step_s)" "$f: predict --plan step_s"
  same "$(num "$tmp/$f.json" tokens_per_s_per_gpu)" "$(num "$tmp/$f.report.json" tokens_per_s_per_gpu)" \
    "$f: predict --plan tokens_per_s_per_gpu"
  same "$(num "$tmp/$f.json" memory_bytes)" "$(num "$tmp/$f.report.json" total_bytes)" "$f: predict --plan memory"
  # A report read back predicts the same again.
  "$BIN" predict --plan "$tmp/$f.report.json" --json >"$tmp/$f.again.json"
  same "$(num "$tmp/$f.report.json" step_s)" "$(num "$tmp/$f.again.json" step_s)" "$f: predict --plan of a report"
done
"$BIN" predict --model llama-3-70b --system dgx-h100 --gpus 64 --tp 8 --pp 4 --vpp 5 --gbs 128 --seq 8192 \
  --recompute selective --json >"$tmp/pp.json"
"$BIN" predict --plan "$tmp/pp.json" --json >"$tmp/pp.again.json"
same "$(num "$tmp/pp.json" step_s)" "$(num "$tmp/pp.again.json" step_s)" "interleaved report: step_s"
same "$(num "$tmp/pp.json" total_bytes)" "$(num "$tmp/pp.again.json" total_bytes)" "interleaved report: memory"
expect 0 "against the file: step" -- "$BIN" predict --plan "$tmp/dense.json"
expect 0 "(file 1" -- "$BIN" predict --plan "$tmp/dense.json"
# Flags beside --plan replace fields and are listed (these variations no longer fit: exit 2, numbers shown).
expect 2 "replaced by flags: --mbs" -- "$BIN" predict --plan "$tmp/pp.json" --mbs 2
expect 2 '"overridden": [' -- "$BIN" predict --plan "$tmp/pp.json" --mbs 2 --json
expect 2 "plan: tp 4  pp 4  vpp 5  cp 1  dp 4" -- "$BIN" predict --plan "$tmp/pp.json" --tp 4
expect 0 "replaced by flags: --recompute" -- "$BIN" predict --plan "$tmp/pp.json" --recompute full
# Bad plan files: unknown keys named with file, line and a suggestion; other documents refused.
sed 's/"micro_batch"/"micro_bach"/' "$tmp/pp.json" >"$tmp/typo.json"
expect 2 "plan.micro_bach: unknown key, did you mean 'micro_batch'?" -- "$BIN" predict --plan "$tmp/typo.json"
expect 2 "$tmp/typo.json:" -- "$BIN" predict --plan "$tmp/typo.json"
"$BIN" search --model llama-3-8b --system dgx-h100 --gpus 8 --gbs 64 --seq 4096 --quiet --json --top 1 >"$tmp/s.json"
expect 2 "a search report is not one plan" -- "$BIN" predict --plan "$tmp/s.json"
expect 2 "missing.json" -- "$BIN" predict --plan "$tmp/missing.json"
echo '{"tp": 2, "mbs": 1}' >"$tmp/bare.json"
expect 2 "mbs: unknown key, did you mean 'micro_batch'?" -- "$BIN" predict --plan "$tmp/bare.json"
echo '{"tp": 2, "micro_batch": 1}' >"$tmp/bare.json"
expect 2 "names no model: give --model" -- "$BIN" predict --plan "$tmp/bare.json"
expect 0 "plan: tp 2  pp 1" -- "$BIN" predict --plan "$tmp/bare.json" --model llama-3-8b --system dgx-h100 --gpus 8
expect 2 "give --model MODEL (or --plan FILE)" -- "$BIN" predict --system dgx-h100

# 2. search --compare: the emitted rank-1 plan ranks 1; another plan shows its rank and its difference.
expect 0 "rank 1 of" -- "$BIN" search --model llama-3-70b --gpu h100-sxm5-80gb --nic-gbps 400 --gpus 64 --gbs 128 \
  --seq 8192 --quiet --compare "$tmp/dense.json"
echo '{"tp": 8, "pp": 4, "micro_batch": 1}' >"$tmp/tp8pp4.json"
expect 0 "against rank 1" -- "$BIN" search --model llama-3-70b --system dgx-h100 --gpus 64 --gbs 128 --seq 8192 \
  --quiet --compare "$tmp/tp8pp4.json"
expect 0 '"fitting":' -- "$BIN" search --model llama-3-70b --system dgx-h100 --gpus 64 --gbs 128 --seq 8192 \
  --quiet --compare "$tmp/tp8pp4.json" --json
expect 2 "the file plans for GPU count 64, this search for 128" -- "$BIN" search --model llama-3-70b \
  --system dgx-h100 --gpus 128 --gbs 128 --seq 8192 --quiet --compare "$tmp/dense.json"
expect 2 "the file plans for model 'llama-3-70b', this search for 'llama-3-8b'" -- "$BIN" search --model llama-3-8b \
  --system dgx-h100 --gpus 64 --gbs 128 --seq 8192 --quiet --compare "$tmp/dense.json"

# 3. Flags that do not fit the model or plan.
D=(--model llama-3-8b --system dgx-h100 --gpus 8)
for flag in "--etp 1" "--capacity-factor 1.25" "--moe-imbalance 1.2" "--ep-overlap" "--ep 2"; do
  # shellcheck disable=SC2086
  expect 2 "applies to mixture-of-experts models, and llama-3-8b is dense" -- "$BIN" predict "${D[@]}" $flag
done
expect 2 "--sp needs tp > 1" -- "$BIN" predict "${D[@]}" --sp
expect 2 "--tp-overlap needs tp > 1" -- "$BIN" predict "${D[@]}" --tp-overlap
expect 2 "--cp-kind chooses the context-parallel attention, and cp is 1" -- "$BIN" predict "${D[@]}" --cp-kind allgather
expect 2 "--ep 2 applies to mixture-of-experts models" -- "$BIN" search "${D[@]}" --gbs 64 --seq 4096 --ep 2
# --cp-kind defaults to the framework's K/V exchange (torchtitan all-gathers K/V, Megatron rings); the plan JSON
# and search's printed commands state it.
CP=(--model llama-3-8b --system dgx-h100 --gpus 8 --cp 4 --seq 32768 --gbs 8 --recompute full --json)
expect 0 '"cp_kind": "allgather"' -- "$BIN" predict "${CP[@]}" --framework torchtitan
expect 0 '"cp_kind": "ring"' -- "$BIN" predict "${CP[@]}" --framework megatron-lm
expect 0 '"cp_kind": "ring"' -- "$BIN" predict "${CP[@]}" --framework torchtitan --cp-kind ring
expect 0 "--cp-kind allgather" -- "$BIN" search --model llama-3-8b --system dgx-h100 --gpus 8 --cp 4 --seq 32768 \
  --gbs 8 --framework torchtitan --top 1
expect 0 "allgather for torchtitan" -- "$BIN" predict --help
expect 2 "--ep-overlap applies to mixture-of-experts models" -- "$BIN" search "${D[@]}" --gbs 64 --seq 4096 --ep-overlap

# 4. "Did you mean" for commands and flags; help states the defaults.
expect 2 "unknown command 'predcit', did you mean 'predict'?" -- "$BIN" predcit --model x
expect 2 "predict: unknown flag '--modle', did you mean '--model'?" -- "$BIN" predict --modle x
expect 2 "search: unknown flag '--tpp', did you mean '--tp'?" -- "$BIN" search --model x --gpus 8 --tpp 2
expect 2 "unknown list 'modles' (models, gpus, clusters or frameworks), did you mean 'models'?" -- "$BIN" list modles
expect 0 "(default 1)" -- "$BIN" predict --help
expect 0 "(default bf16)" -- "$BIN" predict --help
expect 0 "(default megatron-lm)" -- "$BIN" predict --help
expect 0 "default: tp" -- "$BIN" predict --help
# every flag of predict's plan table says its default (or why it has none)
plan_flags="tp|pp|vpp|dp|cp|ep|etp|tsp|zero|mbs|gbs|seq|recompute|precision|framework|cp-kind|sdp-keep|sdp-mask"
plan_flags+="|sdp-granularity|moe-imbalance|capacity-factor|tp-overlap|ep-overlap|uneven-pp|recompute-layers"
if "$BIN" predict --help | awk '/^  --('"$plan_flags"')[ ,]/{getline nxt; print $0 nxt}' | grep -v default; then
  echo "FAIL: a predict plan flag's help states no default"; fails=$((fails + 1))
else
  echo "ok: every predict plan flag states its default"
fi

# 5. Know what it knows: list, parameter counts.
expect 0 "llama-3-70b" -- "$BIN" list models
expect 0 "671.03 B params (37.55 B active" -- "$BIN" list models
expect 0 '"total_params"' -- "$BIN" list models --json
expect 0 "bf16 TFLOP/s dense" -- "$BIN" list gpus
expect 0 '"hbm_bytes"' -- "$BIN" list gpus --json
expect 0 "gb200-nvl72  72 x gb200 by default (18 nodes of 4 GPUs)" -- "$BIN" list clusters
expect 0 "torchtitan" -- "$BIN" list frameworks
expect 0 "model: llama-3-70b, 80 layers, hidden 8192: 70.55 B parameters" -- \
  "$BIN" predict --model llama-3-70b --system dgx-h100 --gpus 64 --tp 8 --pp 2
expect 0 '"active_params": 70553706496.0' -- \
  "$BIN" predict --model llama-3-70b --system dgx-h100 --gpus 64 --tp 8 --pp 2 --json
expect 0 "active per token (8 of 128 experts)" -- \
  "$BIN" predict --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --ep 8 --gbs 64 --recompute full

# 6. The trace's step is the reported step (the unit test checks more plans).
"$BIN" predict --model llama-3-70b --system dgx-h100 --gpus 64 --tp 8 --pp 4 --vpp 5 --gbs 128 --seq 8192 \
  --trace "$tmp/t.json" --json >"$tmp/t.report.json"
step_s=$(num "$tmp/t.report.json" step_s)
step_us=$(num "$tmp/t.json" step_us)
if awk -v s="$step_s" -v u="$step_us" 'BEGIN { d = s * 1e6 - u; if (d < 0) d = -d; exit !(d <= 1e-6 * u) }'; then
  echo "ok: trace step $step_us us = reported $step_s s"
else
  echo "FAIL: trace step $step_us us vs reported $step_s s"; fails=$((fails + 1))
fi

finish
