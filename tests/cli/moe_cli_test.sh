# MoE models with expert parallelism, the TSP and SDP strategies: they predict, and every new flag rejects bad
# values with a clear message and exit 2.
source "$(dirname "$0")/lib.sh"

H100=(--gpu h100-sxm5-80gb --gpus 8)
QWEN=(--model qwen3-30b-a3b --gpu h100-sxm5-80gb --gpus 16 --pp 2 --ep 8 --recompute full --gbs 64)
expect 0 "exposed ep communication" -- "$BIN" predict "${QWEN[@]}"
expect 0 '"ep": 8' -- "$BIN" predict "${QWEN[@]}" --json
expect 0 "routing token-drop, capacity factor 1.25" -- "$BIN" predict "${QWEN[@]}" --moe-imbalance 1.5 \
  --capacity-factor 1.25
expect 0 "tsp 8 (folded tensor + sequence parallel)" -- "$BIN" predict --model llama-2-7b --gpu mi300x --gpus 8 \
  --tsp 8 --seq 131072 --recompute full --zero 0
expect 0 "changes training semantics" -- "$BIN" predict --model llama-2-7b "${H100[@]}" --sdp-keep 0.5 --mbs 1
expect 0 '"changes_training_semantics": true' -- "$BIN" predict --model llama-2-7b "${H100[@]}" --sdp-keep 0.5 --json

# Bad values: CLI-level ranges and choices.
expect 2 "--tsp" -- "$BIN" predict --model llama-2-7b "${H100[@]}" --tsp 0
expect 2 "--sdp-keep" -- "$BIN" predict --model llama-2-7b "${H100[@]}" --sdp-keep 1.5
expect 2 "--sdp-keep" -- "$BIN" predict --model llama-2-7b "${H100[@]}" --sdp-keep half
expect 2 "--sdp-mask" -- "$BIN" predict --model llama-2-7b "${H100[@]}" --sdp-keep 0.5 --sdp-mask sideways
expect 2 "--sdp-granularity" -- "$BIN" predict --model llama-2-7b "${H100[@]}" --sdp-keep 0.5 --sdp-granularity layer
expect 2 "--moe-imbalance" -- "$BIN" predict --model qwen3-30b-a3b "${H100[@]}" --ep 8 --moe-imbalance 0.5
expect 2 "--capacity-factor" -- "$BIN" predict --model qwen3-30b-a3b "${H100[@]}" --ep 8 --capacity-factor 0
# A searched MoE plan launches with its expert parallelism.
expect 0 "wrote megatron plan" -- "$BIN" search --model mixtral-8x7b --system dgx-h100 --gpus 16 --gbs 64 --seq 4096 \
  --quiet --top 1 --emit megatron --out "$tmp/moe.sh"
expect 0 "--expert-model-parallel-size" -- cat "$tmp/moe.sh"
expect 0 '--expert-tensor-parallel-size "1"' -- cat "$tmp/moe.sh"
# Bad values: constraints of the plan, with the actual values.
expect 2 "--sdp-mask and --sdp-granularity need --sdp-keep" -- "$BIN" predict --model llama-2-7b "${H100[@]}" \
  --sdp-mask backward
expect 2 "sdp keep (0) must be in (0, 1]" -- "$BIN" predict --model llama-2-7b "${H100[@]}" --sdp-keep 0
expect 2 "sdp keep x dp (0.3 x 8) must be a whole number of workers" -- "$BIN" predict --model llama-2-7b "${H100[@]}" \
  --sdp-keep 0.3
expect 2 "tsp (3) does not divide heads (32)" -- "$BIN" predict --model llama-2-7b --gpu h100-sxm5-80gb --gpus 3 --tsp 3
expect 2 "tsp (8) replaces tensor and context parallelism on its ranks: give tp 1 and cp 1 (got tp 2, cp 1)" -- \
  "$BIN" predict --model llama-2-7b --gpu h100-sxm5-80gb --gpus 16 --tsp 8 --tp 2
expect 2 "tp x tsp x pp x cp (16) does not divide the GPU count (8)" -- "$BIN" predict --model llama-2-7b "${H100[@]}" \
  --tsp 8 --tp 2
expect 2 "--ep applies to mixture-of-experts models, and llama-2-7b is dense (no experts)" -- "$BIN" predict \
  --model llama-2-7b "${H100[@]}" --ep 2
expect 2 "ep (3) does not divide experts (128)" -- "$BIN" predict --model qwen3-30b-a3b --gpu h100-sxm5-80gb --gpus 6 \
  --ep 3
expect 2 "ep x etp (16 x 1) does not divide the ranks of a pipeline stage, tp x cp x dp (8)" -- \
  "$BIN" predict --model qwen3-30b-a3b "${H100[@]}" --ep 16
expect 2 "etp (5) does not divide expert_ffn_hidden (768)" -- "$BIN" predict --model qwen3-30b-a3b "${H100[@]}" --etp 5

# Megatron-Core recompute modules: implied selective recompute, shown in the plan line, emitted for Megatron only.
expect 0 "recompute selective (core_attn+moe)" -- "$BIN" predict --model qwen3-30b-a3b --gpu h100-sxm5-80gb \
  --gpus 16 --pp 2 --ep 8 --gbs 64 --recompute-modules core_attn,moe
expect 0 "wrote megatron plan" -- "$BIN" search --model qwen3-30b-a3b --gpu h100-sxm5-80gb --gpus 16 --gbs 64 \
  --seq 4096 --quiet --pp 2 --ep 8 --recompute selective --recompute-modules core_attn+moe --top 1 --emit megatron \
  --out "$tmp/recompute_modules.sh"
expect 0 '--recompute-modules "core_attn" "moe"' -- cat "$tmp/recompute_modules.sh"
expect 2 "unknown module 'experts' (choices: core_attn, layernorm, mlp, moe, moe_act, shared_experts, mla_up_proj)" -- \
  "$BIN" predict --model qwen3-30b-a3b "${H100[@]}" --recompute-modules moe+experts
expect 2 "--recompute-modules applies to selective recompute, not --recompute full" -- \
  "$BIN" predict --model qwen3-30b-a3b "${H100[@]}" --recompute full --recompute-modules core_attn+moe
expect 2 "mla_up_proj needs multi-head latent attention" -- \
  "$BIN" predict --model qwen3-30b-a3b "${H100[@]}" --recompute-modules mla_up_proj
expect 2 "does not choose modules to recompute" -- \
  "$BIN" predict --model qwen3-30b-a3b "${H100[@]}" --recompute-modules moe --framework torchtitan
finish
