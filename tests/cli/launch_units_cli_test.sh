# Launch units: searches over model x cluster x framework problems (dense and MoE, even and uneven layers, every
# emitter); each emitted file must parse with its format's own parser and break no framework rule, as re-checked by
# check_launch.py, which states the rules separately from the emitters. Then issue 11's bad cases, one each.
source "$(dirname "$0")/lib.sh"
CHECK="$SRC/tests/cli/check_launch.py"

# unit NAME FORMAT LAYERS GPUS search-args...: search, emit rank 1, check the file independently.
units=0
unit() {
  local name=$1 fmt=$2 layers=$3 gpus=$4
  shift 4
  local out
  if ! out=$("$BIN" search "$@" --gpus "$gpus" --quiet --top 1 --emit "$fmt" --out "$tmp/$name" 2>&1); then
    echo "FAIL: search for $name: $*"; echo "$out" | tail -3; fails=$((fails + 1)); return
  fi
  if out=$(python3 "$CHECK" "$fmt" "$tmp/$name" --gpus "$gpus" --layers "$layers" 2>&1); then
    echo "ok: $name ($fmt) parses and keeps the framework rules"; units=$((units + 1))
  else
    echo "FAIL: $name ($fmt)"; echo "$out" | head -5; fails=$((fails + 1))
  fi
}

H100=(--system dgx-h100)
unit l70-nosp.sh megatron 80 64 --model llama-3-70b "${H100[@]}" --gbs 512 --seq 8192 --no-sp
unit l405-uneven.sh megatron 126 2048 --model llama-3.1-405b "${H100[@]}" --gbs 2048 --seq 8192 --tp 8 --cp 2 --pp 8 \
  --vpp 8
unit l405-uneven.yaml nemo 126 2048 --model llama-3.1-405b "${H100[@]}" --gbs 2048 --seq 8192 --tp 8 --cp 2 --pp 8 \
  --vpp 8
unit l405-titan.toml torchtitan-toml 126 512 --model llama-3.1-405b "${H100[@]}" --gbs 512 --seq 8192 --pp 8 --vpp 2
# A cp 2 plan ranks first here: --emit torchtitan searches all-gathered K/V context parallelism, the only kind
# torchtitan main runs (a ring plan would be refused by the emitter).
unit l70-titan.py torchtitan 80 64 --model llama-3-70b "${H100[@]}" --gbs 512 --seq 8192
unit l70-titan.toml torchtitan-toml 80 64 --model llama-3-70b "${H100[@]}" --gbs 512 --seq 8192
# Every plan that search reports for --emit torchtitan runs CP as main's config can write it (io::emit_cp_kinds:
# all-gathered K/V only), among them cp 2 plans.
"$BIN" search --model llama-3-70b "${H100[@]}" --gpus 64 --gbs 512 --seq 8192 --quiet --top 20 --json \
  --emit torchtitan --out "$tmp/l70-titan-top20.py" |
  python3 -c 'import json,sys; r=json.load(sys.stdin)["results"]; cp=[x["plan"] for x in r if x["plan"]["cp"] > 1]
assert cp and all(p["cp_kind"] == "allgather" for p in cp)' \
  && echo "ok: --emit torchtitan searches all-gather CP only" \
  || { echo "FAIL: --emit torchtitan searched a CP kind it cannot write"; fails=$((fails + 1)); }
unit l8-titan-pp.toml torchtitan-toml 32 16 --model llama-3-8b --system dgx-a100 --gbs 128 --seq 4096 --pp 2 \
  --recompute selective
unit dsv3.sh megatron 61 2048 --model deepseek-v3 --system hgx-h800 --gbs 4096 --seq 4096 --tp 2 --pp 16 --ep 64
unit dsv3.yaml nemo 61 2048 --model deepseek-v3 --system hgx-h800 --gbs 4096 --seq 4096 --tp 2 --pp 16 --ep 64
unit mixtral.sh megatron 32 64 --model mixtral-8x7b "${H100[@]}" --gbs 256 --seq 4096
unit qwen3moe.toml torchtitan-toml 48 32 --model qwen3-30b-a3b "${H100[@]}" --gbs 128 --seq 4096
unit l8-ds.sh deepspeed 32 16 --model llama-3-8b --system dgx-a100 --gbs 256 --seq 4096
unit l70-ds-tp4pp4.sh deepspeed 80 64 --model llama-2-70b --system dgx-a100 --gbs 256 --seq 4096 --tp 4 --pp 4
unit gpt3-ds.sh deepspeed 96 256 --model gpt3-175b --system dgx-a100 --gbs 512 --seq 2048
unit l8-mxfp8.sh megatron 32 16 --model llama-3-8b --system dgx-b200 --gbs 128 --seq 4096 --precision mxfp8
unit l8-nvfp4.py torchtitan 32 16 --model llama-3-8b --system dgx-b200 --gbs 128 --seq 4096 --precision nvfp4
unit l8-mxfp8.toml torchtitan-toml 32 16 --model llama-3-8b --system dgx-b200 --gbs 128 --seq 4096 --precision mxfp8
unit l8-fp8.yaml nemo 32 16 --model llama-3-8b "${H100[@]}" --gbs 128 --seq 4096 --precision fp8-blockwise
[ "$units" -ge 15 ] && echo "ok: $units launch units checked" || { echo "FAIL: only $units units"; \
  fails=$((fails + 1)); }

# The same file that fails the checker when a rule is broken (the checker can fail).
sed 's/^    --sequence-parallel$//' "$tmp/l405-uneven.sh" >"$tmp/broken.sh"
expect 1 "--tp-comm-overlap without --sequence-parallel" -- python3 "$CHECK" megatron "$tmp/broken.sh" --gpus 2048 \
  --layers 126
expect 1 "layout holds 126 layers of 120" -- python3 "$CHECK" megatron "$tmp/l405-uneven.sh" --gpus 2048 --layers 120
sed -e 's/data_parallel_shard_degree = [0-9]*/data_parallel_shard_degree = 1/' \
  -e 's/data_parallel_replicate_degree = 1/data_parallel_replicate_degree = 2/' \
  "$tmp/l70-titan.toml" >"$tmp/broken.toml"
expect 1 "" -- python3 "$CHECK" torchtitan-toml "$tmp/broken.toml" --gpus 64 --layers 80

# Bad case 1: --tp-comm-overlap without --sequence-parallel is a plan problem (predict exit 2, search rejection).
expect 2 "megatron-lm: --tp-comm-overlap (tp 8) runs only with --sequence-parallel" -- \
  "$BIN" predict --model llama-3-70b "${H100[@]}" --gpus 64 --tp 8 --pp 2 --no-sp --tp-overlap --gbs 512 --seq 8192
expect 0 '"megatron_tp_overlap_needs_sp"' -- \
  "$BIN" search --model llama-3-70b "${H100[@]}" --gpus 64 --gbs 512 --seq 8192 --no-sp --quiet --json
expect 0 "TP overlap needs sequence parallelism (Megatron)" -- \
  "$BIN" search --model llama-3-70b "${H100[@]}" --gpus 64 --gbs 512 --seq 8192 --no-sp --quiet --top 1
! grep -q -- "--tp-comm-overlap" "$tmp/l70-nosp.sh" && echo "ok: the --no-sp emission has no TP overlap" \
  || { echo "FAIL: --no-sp emission overlaps TP"; fails=$((fails + 1)); }
# ... and the DeepSeek-V3 plan: MoE with expert and tensor parallelism needs sequence parallelism too.
expect 2 "must run with sequence parallelism" -- "$BIN" predict --model deepseek-v3 --system hgx-h800 --gpus 2048 \
  --tp 2 --pp 16 --ep 64 --no-sp --tp-overlap --gbs 4096 --seq 4096
# Bad case 2: the uneven 405B pipeline is a layout (checked above: 64 stages, 126 layers) in Megatron and NeMo.
expect 0 '--pipeline-model-parallel-layout "Et|t*2|' -- cat "$tmp/l405-uneven.sh"
expect 0 "pipeline_model_parallel_layout:" -- cat "$tmp/l405-uneven.yaml"
# Bad case 3: ZeRO-3 (FSDP2) with pp under Megatron; ZeRO-2/3 with pp under DeepSpeed.
expect 2 "ZeRO-3 (--use-torch-fsdp2) is not supported with pipeline parallelism (pp 8)" -- \
  "$BIN" predict --model llama-3-70b "${H100[@]}" --gpus 64 --tp 8 --pp 8 --zero 3 --gbs 512 --seq 8192
expect 2 "ZeRO-2 is incompatible with DeepSpeed's pipeline engine (pp 4)" -- "$BIN" predict --model llama-2-70b \
  --system dgx-a100 --gpus 64 --tp 4 --pp 4 --zero 2 --gbs 256 --seq 4096 --framework megatron-deepspeed
# Bad case 4: torchtitan's DDP with other parallelism.
expect 2 "DDP has not supported > 1D parallelism" -- "$BIN" predict --model llama-3-70b "${H100[@]}" --gpus 64 \
  --tp 8 --pp 4 --zero 0 --gbs 512 --seq 8192 --framework torchtitan
# Bad case 5: mxfp8 is its own recipe, Blackwell only; nvfp4 in torchtitan's current converter, refused by v0.2.2;
# DeepSpeed keeps tp and pp (checked above) and refuses fp8; torchtitan selective AC names its option.
expect 2 "the mxfp8 recipe runs on Blackwell GPUs only" -- "$BIN" predict --model llama-3-8b "${H100[@]}" \
  --precision mxfp8
expect 0 '--fp8-recipe "mxfp8"' -- cat "$tmp/l8-mxfp8.sh"
expect 0 'converters = ["quantize.linear.mx"]' -- cat "$tmp/l8-mxfp8.toml"
expect 0 "NVFP4LinearConverter.Config(" -- cat "$tmp/l8-nvfp4.py"
expect 2 "torchtitan v0.2.2 has no fp4 converter" -- "$BIN" search --model llama-3-8b --system dgx-b200 --gpus 16 \
  --gbs 128 --seq 4096 --precision nvfp4 --quiet --top 1 --emit torchtitan-toml --out "$tmp/nvfp4.toml"
expect 0 '--tensor-model-parallel-size "4"' -- cat "$tmp/l70-ds-tp4pp4.sh"
expect 2 "fp8/fp4 need Transformer Engine" -- "$BIN" search --model llama-2-70b "${H100[@]}" --gpus 64 --gbs 256 \
  --seq 4096 --tp 4 --pp 4 --precision fp8 --quiet --emit deepspeed --out "$tmp/fp8-ds.sh"
expect 0 'selective_ac_option = "op"' -- cat "$tmp/l8-titan-pp.toml"
# Bad case 6: --emit F searches under F's profile; another --framework is refused; --emit alone follows --framework.
expect 0 "(framework profile torchtitan)" -- head -1 "$tmp/l70-titan.toml"
expect 2 "--emit torchtitan writes plans of the torchtitan profile, and --framework is megatron-lm" -- "$BIN" search \
  --model llama-3-8b "${H100[@]}" --gpus 8 --gbs 64 --seq 4096 --framework megatron-lm --emit torchtitan --out "$tmp/x"
expect 0 "wrote nemo plan" -- "$BIN" search --model llama-3-8b "${H100[@]}" --gpus 8 --gbs 64 --seq 4096 --quiet \
  --top 1 --framework nemo --emit --out "$tmp/default.yaml"
# Defaults come from the framework, and --help states them.
expect 0 "throughput:" -- "$BIN" predict --model llama-3-8b "${H100[@]}" --framework torchtitan
expect 0 "torchtitan: zero 3 (2 with pp > 1), sp on when tp > 1, recompute selective" -- "$BIN" predict --help
finish
