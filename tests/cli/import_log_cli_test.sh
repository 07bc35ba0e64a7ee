# shardplan calibrate import-log: each framework's fixture imports, the runs file validates, bad logs exit 2
# naming file and line, the output follows the one-writer rules.
source "$(dirname "$0")/lib.sh"
L="$SRC/tests/data/logs"
imp() { "$BIN" calibrate import-log "$@"; }

expect 0 "tp 2 pp 2 vpp 1 cp 1 dp 4 zero 1, gbs 128 x 8192; 11 warm-up step record(s) dropped, median of 29" -- \
  imp "$L/megatron/llama3_8b_tp2_pp2_16gpu.log" --framework megatron --system dgx-h100
expect 0 "nemo run, 8 x h100-sxm5-80gb, tp 2" -- \
  imp "$L/nemo/llama3_8b_bridge_tp2_8gpu.log" --framework nemo --system dgx-h100 --gpus 8 --model llama-3-8b
expect 0 "nemo run, 16 x h100-sxm5-80gb, tp 4" -- \
  imp "$L/nemo/llama2_13b_nemo1_tp4_16gpu.log" --framework nemo --system h100-sxm5-80gb
expect 0 "model llama-3-8b (the log's model flavour; --model overrides)" -- \
  imp "$L/torchtitan/llama3_8b_fsdp_8gpu.log" --framework torchtitan --system dgx-h100 --gpus 8
expect 0 "megatron-deepspeed run, 8 x h100-sxm5-80gb, tp 2" -- \
  imp "$L/deepspeed/gpt_1.3b_megatron_deepspeed_8gpu.log" --framework deepspeed --system dgx-h100
expect 0 "llm-foundry run, 16 x h100-sxm5-80gb, tp 1 pp 1 vpp 1 cp 1 dp 16 zero 3" -- \
  imp "$L/llm-foundry/mpt_7b_fsdp_16gpu.log" --framework llm-foundry --system dgx-h100

# Several logs into one runs file, which validate reads.
expect 0 "wrote 2 run(s) to $tmp/runs.yaml" -- imp "$L/megatron/llama3_8b_tp2_pp2_16gpu.log" \
  "$L/megatron/llama3_8b_tp2_pp2_16gpu.log" --framework megatron --system dgx-h100 --out "$tmp/runs.yaml"
expect 0 "id: llama3_8b_tp2_pp2_16gpu_2" -- cat "$tmp/runs.yaml"
expect 0 "throughput MAPE" -- "$BIN" validate --runs "$tmp/runs.yaml"
expect 2 "file exists; pass --force" -- imp "$L/megatron/llama3_8b_tp2_pp2_16gpu.log" --framework megatron \
  --system dgx-h100 --out "$tmp/runs.yaml"
expect 0 "wrote 1 run(s)" -- imp "$L/megatron/llama3_8b_tp2_pp2_16gpu.log" --framework megatron --system dgx-h100 \
  --out "$tmp/runs.yaml" --force --id mine --warmup-steps 20
expect 0 "after dropping 21 warm-up record(s)" -- cat "$tmp/runs.yaml"
expect 0 "id: mine" -- cat "$tmp/runs.yaml"

# Malformed and partial logs: exit 2 with file and line.
expect 2 "bad_truncated_arguments.log:3: the arguments block opened here has no '-- end of arguments --' line" -- \
  imp "$L/megatron/bad_truncated_arguments.log" --framework megatron --system dgx-h100
expect 2 "bad_no_steady_state.log:56: no steady-state steps" -- \
  imp "$L/megatron/bad_no_steady_state.log" --framework megatron --system dgx-h100
expect 2 "bad_conflicting_arguments.log:64: argument global_batch_size is '256' here but '128' at line 14" -- \
  imp "$L/megatron/bad_conflicting_arguments.log" --framework megatron --system dgx-h100
expect 2 "bad_no_iterations.log: no training-step lines" -- \
  imp "$L/megatron/bad_no_iterations.log" --framework megatron --system dgx-h100
expect 2 "bad_zero_conflict.log:44: zero_optimization.stage 1 contradicts 2 stated at line 28" -- \
  imp "$L/deepspeed/bad_zero_conflict.log" --framework deepspeed --system dgx-h100
expect 2 "llama3_8b_tp2_pp2_16gpu.log:27: layers 32 in the log, but --model llama-3-70b has 80" -- \
  imp "$L/megatron/llama3_8b_tp2_pp2_16gpu.log" --framework megatron --system dgx-h100 --model llama-3-70b
expect 2 "no Megatron-LM arguments block" -- \
  imp "$L/torchtitan/llama3_8b_fsdp_8gpu.log" --framework megatron --system dgx-h100
expect 2 "unknown framework 'megatorn'" -- imp "$L/megatron/llama3_8b_tp2_pp2_16gpu.log" --framework megatorn \
  --system dgx-h100
expect 2 "--id: names one run; 2 logs were given" -- imp "$L/megatron/llama3_8b_tp2_pp2_16gpu.log" \
  "$L/megatron/llama3_8b_tp2_pp2_16gpu.log" --framework megatron --system dgx-h100 --id x
expect 2 "" -- imp "$tmp/missing.log" --framework megatron --system dgx-h100
expect 2 "pass --gpus N" -- imp "$L/torchtitan/llama3_8b_fsdp_8gpu.log" --framework torchtitan --system dgx-h100
finish
