# Fine-tuning flags: adapters and optimizer on predict and search, errors naming the flag, launchers' rules, the
# emitted adapters and the plan-file round trip.
source "$(dirname "$0")/lib.sh"

P=(predict --model llama-2-7b --gpu h100-sxm5-80gb --gpus 8 --gbs 8 --seq 2048 --framework other --zero 3)
expect 0 "training: lora rank 16 on q+v: 8.4 M trainable parameters" -- "$BIN" "${P[@]}" --peft lora --lora-rank 16 \
  --lora-targets q,v
expect 0 "qlora rank 8 on q+k+v+o+gate+up+down: 20.0 M trainable parameters (0.30%), base frozen in NF4" \
  -- "$BIN" "${P[@]}" --peft qlora --lora-rank 8 --lora-targets all
expect 0 "| optimizer muon" -- "$BIN" "${P[@]}" --optimizer muon
expect 2 "--optimizer: unknown optimizer 'adam' (choices: adamw, adamw8bit, adafactor, sgd, sgd-momentum, muon, lion)" \
  -- "$BIN" "${P[@]}" --optimizer adam
expect 2 "--peft lora needs --lora-rank R" -- "$BIN" "${P[@]}" --peft lora --lora-targets q
expect 2 "--lora-targets: unknown module 'qkv'" -- "$BIN" "${P[@]}" --peft lora --lora-rank 8 --lora-targets qkv
expect 2 "--lora-rank, --lora-targets and --lora-dropout need --peft lora, dora or qlora" -- "$BIN" "${P[@]}" \
  --lora-rank 8
expect 2 "--lora-rank, --lora-targets and --lora-dropout need --peft lora, dora or qlora" -- "$BIN" "${P[@]}" \
  --lora-dropout 0.1
expect 0 "gate+up+down: 103.5 M trainable parameters (0.15%), base frozen in NF4, lora dropout 0.1" -- "$BIN" predict \
  --model llama-2-70b --gpu h100-sxm5-80gb --gpus 2 --framework hf-deepspeed --zero 3 --mbs 2 --gbs 8 --seq 2048 \
  --recompute full --peft qlora --lora-rank 8 --lora-targets all --lora-dropout 0.1
expect 2 "hf-deepspeed: parallelises by data only" -- "$BIN" predict --model llama-2-70b --gpu h100-sxm5-80gb --gpus 8 \
  --framework hf-deepspeed --zero 3 --tp 2 --mbs 2 --gbs 8 --seq 2048 --peft lora --lora-rank 8 --lora-targets all
expect 2 "Megatron-LM has no LoRA or adapter training" -- "$BIN" predict --model llama-2-7b --gpu h100-sxm5-80gb \
  --gpus 8 --gbs 8 --seq 2048 --peft lora --lora-rank 8 --lora-targets q,v
expect 2 "torchtitan builds wk and wv from one config (wkv): target k and v together" -- "$BIN" predict \
  --model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 --gbs 8 --seq 2048 --framework torchtitan --zero 3 --peft lora \
  --lora-rank 8 --lora-targets q,v

# Search keeps the adapters and optimizer on every candidate and prints them in the reproducing command.
S=(search --model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 --gbs 32 --seq 4096 --top 1 --quiet)
expect 0 "--peft lora --lora-rank 16 --lora-targets q+k+v+o" -- "$BIN" "${S[@]}" --framework nemo --peft lora \
  --lora-rank 16 --lora-targets q,k,v,o
expect 0 "--optimizer adamw8bit" -- "$BIN" "${S[@]}" --framework other --optimizer adamw8bit

# Emitters: NeMo's PEFT block and torchtitan's LoRAConverter.
expect 0 "_target_: megatron.bridge.peft.canonical_lora.CanonicalLoRA" -- "$BIN" "${S[@]}" --framework nemo \
  --peft lora --lora-rank 16 --lora-targets q,v --emit nemo
expect 0 "LoRAConverter.Config(rank=8, alpha=16.0, target_modules=[\"wq\", \"wkv\"])" -- "$BIN" "${S[@]}" \
  --framework torchtitan --peft lora --lora-rank 8 --lora-targets q,k,v --emit torchtitan
expect 2 "torchtitan v0.2.2 has no LoRA" -- "$BIN" "${S[@]}" --framework torchtitan --peft lora --lora-rank 8 \
  --lora-targets q,k,v --emit torchtitan-toml

# Plan files carry the fine-tuning keys.
"$BIN" "${S[@]}" --framework other --peft dora --lora-rank 4 --lora-targets v,down --lora-dropout 0.05 \
  --optimizer lion --emit json >"$tmp/plan.json"
expect 0 "dora rank 4 on v+down" -- "$BIN" predict --plan "$tmp/plan.json"
expect 0 "lora dropout 0.05" -- "$BIN" predict --plan "$tmp/plan.json"
expect 0 "| optimizer lion" -- "$BIN" predict --plan "$tmp/plan.json"
# LitGPT's measured peaks (Lightning-AI/litgpt tutorials/resource-tables.md, runs of Lit-GPT 8641822 on one
# A100-SXM4-40GB: torch.cuda.max_memory_allocated() / 1e9 in finetune/lora.py; LoRA r 8 on q, v, dropout 0.05,
# bf16-true, iteration 0 padded to the longest Alpaca sample, 1304 Llama 2 tokens): shardplan's allocated memory
# (total less CUDA context and fragmentation allowance) within 10% of each (docs/fine-tuning.md).
L=(predict --gpu a100-sxm4-40gb --gpus 1 --framework litgpt-2023 --seq 1304 --gbs 128 --lora-rank 8 \
  --lora-targets q,v --lora-dropout 0.05 --json)
within_10pct() {  # within_10pct PUBLISHED_GB JSON_FILE
  python3 - "$1" "$2" <<'PY'
import json, sys
published, path = float(sys.argv[1]), sys.argv[2]
m = json.load(open(path))["memory"]
allocated = (m["total_bytes"] - m["context_bytes"] - m["fragmentation_bytes"]) / 1e9
error = allocated / published - 1
print(f"allocated {allocated:.2f} GB vs published {published} GB: {100 * error:+.1f}%")
sys.exit(0 if abs(error) <= 0.10 else 1)
PY
}
for row in "llama-2-7b 1 lora 21.30" "llama-2-7b 2 lora 29.07" "llama-2-13b 1 lora 38.12" \
           "llama-2-7b 1 qlora 13.84" "llama-2-13b 1 qlora 22.55"; do
  read -r model mbs peft published <<<"$row"
  "$BIN" "${L[@]}" --model "$model" --mbs "$mbs" --peft "$peft" >"$tmp/litgpt.json"
  expect 0 "allocated" -- within_10pct "$published" "$tmp/litgpt.json"
done

finish
