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
finish
