# shardplan serve predict: latency, throughput, batch, KV capacity, memory per engine; offload; bad input (exit 2).
source "$(dirname "$0")/lib.sh"

expect 0 "TPOT" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --concurrency 16
expect 0 "excludes the first token" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb
expect 0 "SGLang: KV = mem_fraction_static" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb \
  --engine sglang
expect 0 "TRT-LLM: KV" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --engine trtllm --weights fp8 \
  --kv fp8
expect 0 "llama.cpp: model + context" -- "$BIN" serve predict --model llama-3-8b --gpu rtx-4090 --engine llama.cpp \
  --weights q4_k_m --kv fp16
expect 0 "TTFT" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --engine trtllm --concurrency 64 \
  --rounds 20
# T4 (16 GB, ECC on: 14.75 GiB): Llama-3-8B in fp16 leaves no room for a KV cache; Q4_K_M fits.
expect 2 "no room for a KV cache" -- "$BIN" serve predict --model llama-3-8b --gpu t4 --engine vllm --weights fp16
expect 0 "of 14.75 GiB" -- "$BIN" serve predict --model llama-3-8b --gpu t4 --engine llama.cpp --weights q4_k_m \
  --kv fp16
expect 2 "--rounds: Value -1 not in range" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --rounds -1
expect 0 "capped by max_batch" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --concurrency 64 \
  --max-batch 8
expect 0 "disaggregated" -- "$BIN" serve predict --model deepseek-v3 --gpu h200-sxm-141gb --weights fp8 --kv fp8 \
  --prefill workers=1,tp=8,moe_ep=8 --decode workers=1,tp=8,moe_ep=8,batch=32 --concurrency 64
# The KV transfer of a disaggregated plan (kv_transfer.h): 4 + 2 GPUs in one node over NVLink, 10 across nodes.
expect 0 "640.0 MiB moved (640.0 MiB of cache; 4 prefill GPUs send 160.0 MiB each, 2 decode GPUs receive 320.0 MiB" \
  -- "$BIN" serve predict --model llama-3-70b --gpu h100-sxm5-80gb --gpus 16 --prefill workers=1,tp=4 \
  --decode workers=1,tp=2 --input-len 2048 --output-len 256 --concurrency 8
"$BIN" serve predict --model llama-3-70b --gpu h100-sxm5-80gb --gpus 16 --engine trtllm --prefill workers=2,tp=4 \
  --decode workers=1,tp=2 --input-len 2048 --output-len 256 --concurrency 8 --json |
  python3 -c 'import json,sys; t=json.load(sys.stdin)["kv_transfer"]; assert (t["link"] == "infiniband" and
    not t["same_node"] and t["bytes_per_request"] == 671088640 and t["recv_bytes_per_gpu"] == 335544320 and
    t["exposed_s"] > 0.0075), t' \
  && echo "ok: serve predict --json kv_transfer" || { echo "FAIL: serve predict --json kv_transfer"; fails=$((fails + 1)); }
"$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --tp 2 --json |
  python3 -c 'import json,sys; j=json.load(sys.stdin); assert (j["latency"]["tpot_s"] > 0 and
    j["plan"]["aggregated"]["tp"] == 2 and j["latency"]["tpot_includes_first_token"] is False)' \
  && echo "ok: serve predict --json" || { echo "FAIL: serve predict --json"; fails=$((fails + 1)); }
expect 0 "best -ngl split" -- "$BIN" serve predict --model llama-3-70b --gpu rtx-4090 --engine llama.cpp \
  --weights q4_k_m --kv fp16 --offload tensor --host desktop-ddr5-5600-2ch-pcie4
expect 0 "-ngl" -- "$BIN" serve predict --model gpt-oss-120b --gpu rtx-4090 --engine llama.cpp --moe-weights mxfp4 \
  --kv fp16 --offload tensor --host desktop-ddr5-5600-2ch-pcie4 --vram-gib 16
# A unified-memory GPU (Apple silicon) has no PCIe link to offload over: refused, exit 2.
expect 2 "has unified memory" -- "$BIN" serve predict --model llama-3-70b --gpu apple-m1-max-32c --engine llama.cpp \
  --weights q4_k_m --kv fp16 --offload tensor --host desktop-ddr5-5600-2ch-pcie4
"$BIN" serve predict --model gpt-oss-120b --gpu rtx-4090 --engine llama.cpp --moe-weights mxfp4 --kv fp16 \
  --offload tensor --host desktop-ddr5-5600-2ch-pcie4 --json |
  python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["decode"]["gain"] >= 1 and j["prefill"]["gain"] >= 1' \
  && echo "ok: offload --json gains >= 1" || { echo "FAIL: offload --json"; fails=$((fails + 1)); }
# Prefill attention covers the cache before the prompt: 16k tokens already cached slow the prefill step.
pf() { "$BIN" serve predict --model llama-3-8b --gpu rtx-4090 --engine llama.cpp --weights q4_k_m --kv fp16 \
  --offload layer --host desktop-ddr5-5600-2ch-pcie4 --vram-gib 4 --json "$@" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["prefill"]["layer_tokens_per_s"])'; }
shallow=$(pf)
deep=$(pf --context-depth 16384)
python3 -c "import sys; sys.exit(0 if float('$deep') < 0.9 * float('$shallow') else 1)" 2>/dev/null \
  && echo "ok: offload prefill slows with --context-depth" \
  || { echo "FAIL: offload --context-depth ($deep vs $shallow)"; fails=$((fails + 1)); }

# A block-scaled fp8 checkpoint (config.json quantization_config weight_block_size [128, 128]) runs --weights fp8 as
# fp8_block kernels, and says so; a YAML model (no checkpoint) keeps fp8.
DSV3="$SRC/tests/validation/serving/hf_configs/deepseek-ai--DeepSeek-V3_config.json"
expect 0 "weights: fp8 on a 128x128 block-scaled checkpoint: fp8_block kernels" -- "$BIN" serve predict \
  --model "$DSV3" --gpu h200-sxm-141gb --engine trtllm --weights fp8 --kv fp8 --tp 8 --moe-ep 8
"$BIN" serve predict --model "$DSV3" --gpu h200-sxm-141gb --engine trtllm --weights fp8 --kv fp8 --tp 8 --moe-ep 8 \
  --json | python3 -c 'import json,sys; j=json.load(sys.stdin)["context"]; assert (j["weights"] == "fp8" and
    j["weights_note"] == "fp8 on a 128x128 block-scaled checkpoint: fp8_block kernels")' \
  && echo "ok: serve predict --json weights_note" || { echo "FAIL: serve predict --json weights_note"; fails=$((fails + 1)); }
"$BIN" serve predict --model deepseek-v3 --gpu h200-sxm-141gb --engine trtllm --weights fp8 --kv fp8 --tp 8 \
  --moe-ep 8 --json | python3 -c 'import json,sys; assert json.load(sys.stdin)["context"]["weights_note"] is None' \
  && echo "ok: serve predict YAML model: no weights_note" || { echo "FAIL: YAML weights_note"; fails=$((fails + 1)); }

# SGLang mixed chunks: decodes ride in the prefill batches instead of pausing, so the simulated schedule changes.
lat() { "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --engine sglang --concurrency 32 --rounds 4 "$@" \
  --json | python3 -c 'import json,sys; l=json.load(sys.stdin)["latency"]; print(l["ttft_s"], l["tpot_s"])'; }
paused=$(lat)
mixed=$(lat --mixed-chunk)
[ -n "$paused" ] && [ -n "$mixed" ] && [ "$paused" != "$mixed" ] \
  && echo "ok: --mixed-chunk changes SGLang's schedule" \
  || { echo "FAIL: --mixed-chunk ($mixed vs $paused)"; fails=$((fails + 1)); }

# serve search: ranked plans, rejections, engine arguments.
expect 0 "trtllm-serve llama-3-70b --tp_size" -- "$BIN" serve search --model llama-3-70b --gpu h200-sxm-141gb \
  --gpus 32 --engine trtllm --weights fp8 --kv fp8 --input-len 2048 --output-len 512 --tpot-ms 30 --ttft-ms 1000
expect 0 "rejected: " -- "$BIN" serve search --model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 --tpot-ms 10
expect 2 "no plan meets the targets" -- "$BIN" serve search --model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 \
  --tpot-ms 0.1
"$BIN" serve search --model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 --json |
  python3 -c 'import json,sys; j=json.load(sys.stdin); r=j["results"]; assert r and all(
    r[i]["output_tokens_per_s_per_gpu"] >= r[i+1]["output_tokens_per_s_per_gpu"] for i in range(len(r)-1))' \
  && echo "ok: serve search --json ranked" || { echo "FAIL: serve search --json"; fails=$((fails + 1)); }
expect 2 "expected vllm, sglang or trtllm" -- "$BIN" serve search --model llama-3-8b --gpu h100-sxm5-80gb --gpus 8 \
  --engine llama.cpp

# Bad input: exit 2 with the constraint named.
expect 2 "tp (3) does not divide heads (32)" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --tp 3
expect 2 "unknown format 'q4_k_x'" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --weights q4_k_x
expect 2 "unknown engine" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --engine tgi
expect 2 "exactly one of --gpu and --system" -- "$BIN" serve predict --model llama-3-8b
expect 2 "--prefill and --decode go together" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb \
  --prefill tp=1
expect 2 "unknown key 'tpp'" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --prefill tpp=1 \
  --decode tp=1
expect 2 "no room for a KV cache" -- "$BIN" serve predict --model llama-3-70b --gpu rtx-4090
expect 2 "needs --host" -- "$BIN" serve predict --model llama-3-8b --gpu rtx-4090 --offload tensor
expect 2 "--mixed-chunk is an SGLang option" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb \
  --mixed-chunk
expect 2 "expected layer or tensor" -- "$BIN" serve predict --model llama-3-8b --gpu rtx-4090 --offload all \
  --host desktop-ddr5-5600-2ch-pcie4
# Open loop (--request-rate): Poisson arrivals, latency percentiles, stability; bad combinations exit 2.
expect 0 "stability: stable" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --request-rate 2 \
  --num-prompts 200
expect 0 "stability: UNSTABLE" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --request-rate 500 \
  --num-prompts 400
expect 0 "every request is queued at t = 0" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb \
  --request-rate inf --num-prompts 100
expect 2 "excludes" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --request-rate 4 --concurrency 8
expect 2 "--request-rate: expected requests per second" -- "$BIN" serve predict --model llama-3-8b \
  --gpu h100-sxm5-80gb --request-rate 0
expect 2 "need --request-rate" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --seed 4
expect 2 "only aggregated plans" -- "$BIN" serve predict --model deepseek-v3 --gpu h200-sxm-141gb --weights fp8 \
  --kv fp8 --prefill workers=1,tp=8,moe_ep=8 --decode workers=1,tp=8,moe_ep=8,batch=32 --request-rate 4
LEN=$(mktemp)
printf '# input output\n200 100\n900,300\n' >"$LEN"
expect 0 "mean input 550.0, output 200.0" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb \
  --request-rate 1 --lengths "$LEN"
printf '200 100\n900\n' >"$LEN"
expect 2 "$LEN:2: expected two integers" -- "$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb \
  --request-rate 1 --lengths "$LEN"
rm -f "$LEN"
"$BIN" serve predict --model llama-3-8b --gpu h100-sxm5-80gb --request-rate 4 --num-prompts 100 --json |
  python3 -c 'import json,sys; j=json.load(sys.stdin); assert (j["workload"]["mode"] == "open_loop" and
    j["stability"]["stable"] and 0 < j["latency"]["ttft"]["p50_ms"] <= j["latency"]["ttft"]["p99_ms"])' \
  && echo "ok: serve predict --request-rate --json" || { echo "FAIL: --request-rate --json"; fails=$((fails + 1)); }
finish
