#!/usr/bin/env python3
"""Writes the log fixtures of tests/data/logs/ (README.md there gives each format's source).

The lines follow the formats the frameworks' logging code writes (read at the commits README.md names); the
numbers are synthetic but physical (step times near what the runs' sizes give on H100s). Deterministic: a fixed
seed, so re-running reproduces the committed files. Run from this directory: python3 make_fixtures.py
"""
import json
import random

random.seed(7)


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def megatron_args(d, title="arguments"):
    # megatron/training/arguments.py _print_args: dots pad the name to 48 columns, lines sorted case-insensitively.
    lines = ["  {} {} {}".format(k, "." * (48 - len(k)), v) for k, v in d.items()]
    return ([f"------------------------ {title} ------------------------"] + sorted(lines, key=str.lower) +
            [f"-------------------- end of {title} ---------------------"])


def megatron_iteration(it, total, ms, tflops, gbs, date="2026-12-01 09:14:07.123456"):
    # megatron/training/training.py training_log
    return (f" [{date}] iteration {it:8d}/{total:8d} | consumed samples: {it * gbs:12d} | elapsed time per "
            f"iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | learning rate: "
            f"{3e-4 * min(1, it / 10):.6E} | global batch size: {gbs:5d} | lm loss: {11.9 - it * 0.1:.6E} | "
            f"loss scale: 1.0 | grad norm: {2.5 - it * 0.03:.3f} | number of skipped iterations:   0 | number of "
            f"nan iterations:   0 |")


def step_ms(it, steady):
    if it == 1:
        return steady * 3.1
    if it <= 3:
        return steady * 1.12 + random.uniform(-50, 50)
    return steady + random.uniform(-0.01, 0.01) * steady


LLAMA8B_FLOPS_PER_TOKEN = 6 * 8.03e9 * 1.11  # 6N plus attention at 8K (Megatron's formula gives about this)

# ---------------------------------------------------------------- Megatron-LM: Llama-3-8B, 16 GPUs, tp2 pp2 dp4
megatron = dict(
    num_layers=32, hidden_size=4096, ffn_hidden_size=14336, num_attention_heads=32, group_query_attention=True,
    num_query_groups=8, kv_channels=128, seq_length=8192, max_position_embeddings=8192, swiglu=True,
    untie_embeddings_and_output_weights=True, normalization="RMSNorm", position_embedding_type="rope",
    tensor_model_parallel_size=2, pipeline_model_parallel_size=2, virtual_pipeline_model_parallel_size=None,
    num_layers_per_virtual_pipeline_stage=None, context_parallel_size=1, expert_model_parallel_size=1,
    expert_tensor_parallel_size=2, num_experts=None, data_parallel_size=4, world_size=16, micro_batch_size=1,
    global_batch_size=128, sequence_parallel=True, tp_comm_overlap=False, use_distributed_optimizer=True,
    use_torch_fsdp2=False, overlap_grad_reduce=True, overlap_param_gather=True, recompute_granularity="selective",
    recompute_method=None, recompute_num_layers=None, bf16=True, fp16=False, fp8=None, fp8_recipe="delayed",
    fp4=None, vocab_size=None, make_vocab_size_divisible_by=128, tokenizer_type="HuggingFaceTokenizer",
    log_interval=1, train_iters=40, lr=0.0003, rank=0, log_throughput=True, params_dtype="torch.bfloat16")
L = ["W1201 09:12:03.553000 1402 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for "
     "each process to be 1 in default",
     "using world size: 16, data-parallel size: 4, context-parallel size: 1, hierarchical context-parallel sizes: "
     "None, tensor-model-parallel size: 2, pipeline-model-parallel size: 2"]
L += megatron_args(megatron)
L += ["> building HuggingFaceTokenizer tokenizer ...",
      " > padded vocab (size: 128256) with 0 dummy tokens (new size: 128256)",
      "> initializing torch distributed ...", "training ..."]
for it in range(1, 41):
    ms = step_ms(it, 7950)
    L.append(megatron_iteration(it, 40, ms, LLAMA8B_FLOPS_PER_TOKEN * 128 * 8192 / (ms / 1000) / 16 / 1e12, 128))
    if it == 1:
        for r in (0, 2, 8, 10):
            L.append(f"[Rank {r}] (after 1 iterations) memory (MB) | allocated: {21504.31 + r:.2f} | max allocated: "
                     f"{52113.8 + r * 3:.2f} | reserved: {57344.0 + r * 2:.2f} | max reserved: {61440.0 + r * 64:.2f}")
write("megatron/llama3_8b_tp2_pp2_16gpu.log", L)

# Malformed Megatron logs.
block = megatron_args(megatron)
write("megatron/bad_truncated_arguments.log", L[:2] + block[:30])
vocab = [" > padded vocab (size: 128256) with 0 dummy tokens (new size: 128256)"]
write("megatron/bad_no_steady_state.log", L[:2] + block + vocab + [megatron_iteration(i, 40, 8000, 400, 128)
                                                                    for i in (1, 2, 3)])
other = dict(megatron, global_batch_size=256)
write("megatron/bad_conflicting_arguments.log", L[:2] + block + megatron_args(other) +
      [megatron_iteration(i, 40, 8000, 400, 128) for i in range(1, 20)])
write("megatron/bad_no_iterations.log", L[:2] + block + vocab + ["training ..."])

# ---------------------------------------------------------------- Megatron-Bridge (NeMo): Llama-3-8B, 8 GPUs
bridge = ["", "=" * 70, "Configuration Summary (Non-Default Values vs Megatron Core)", "=" * 70, "",
          "[optimizer] Non-default values (vs Mcore OptimizerConfig):",
          "  bf16: True  (Mcore default: False)", "  lr: 0.0003  (Mcore default: None)",
          "  use_distributed_optimizer: True  (Mcore default: False)", "",
          "[ddp] Non-default values (vs Mcore DistributedDataParallelConfig):",
          "  overlap_grad_reduce: True  (Mcore default: False)",
          "  overlap_param_gather: True  (Mcore default: False)",
          "  use_distributed_optimizer: True  (Mcore default: False)", "",
          "[model] Non-default values (vs Mcore TransformerConfig):",
          "  bf16: True  (Mcore default: False)", "  ffn_hidden_size: 14336  (Mcore default: None)",
          "  gated_linear_unit: True  (Mcore default: False)", "  hidden_size: 4096  (Mcore default: 0)",
          "  kv_channels: 128  (Mcore default: None)", "  normalization: 'RMSNorm'  (Mcore default: 'LayerNorm')",
          "  num_attention_heads: 32  (Mcore default: 0)", "  num_layers: 32  (Mcore default: 0)",
          "  num_query_groups: 8  (Mcore default: None)",
          "  params_dtype: torch.bfloat16  (Mcore default: torch.float32)",
          "  recompute_granularity: 'selective'  (Mcore default: None)",
          "  sequence_parallel: True  (Mcore default: False)",
          "  tensor_model_parallel_size: 2  (Mcore default: 1)", "", "-" * 70, "Other Configuration Values:",
          "-" * 70, "", "[train]:", "  eval_interval: 1000", "  global_batch_size: 128", "  micro_batch_size: 1",
          "  train_iters: 30", "", "[dataset]:", "  random_seed: 1234", "  sequence_length: 8192", "",
          "[logger]:", "  log_interval: 1", "", "=" * 70]
L = ["[INFO     | megatron.bridge.training.setup]: Setting up the model"] + bridge + ["training ..."]
for it in range(1, 31):
    ms = step_ms(it, 7700)
    L.append(megatron_iteration(it, 30, ms, LLAMA8B_FLOPS_PER_TOKEN * 128 * 8192 / (ms / 1000) / 8 / 1e12 / 2, 128,
                                date="2026-12-01 10:02:11"))
write("nemo/llama3_8b_bridge_tp2_8gpu.log", L)

# ---------------------------------------------------------------- NeMo 1.x: Hydra/OmegaConf dump + progress bar
hydra = ["trainer:", "  devices: 8", "  num_nodes: 2", "  precision: bf16-mixed", "  max_steps: 40",
         "  log_every_n_steps: 1", "exp_manager:", "  log_step_timing: true", "model:", "  micro_batch_size: 2",
         "  global_batch_size: 256", "  tensor_model_parallel_size: 4", "  pipeline_model_parallel_size: 1",
         "  virtual_pipeline_model_parallel_size: null", "  context_parallel_size: 1", "  encoder_seq_length: 4096",
         "  max_position_embeddings: 4096", "  num_layers: 40", "  hidden_size: 5120", "  ffn_hidden_size: 13824",
         "  num_attention_heads: 40", "  num_query_groups: null", "  kv_channels: null", "  activation: fast-swiglu",
         "  share_embeddings_and_output_weights: false", "  sequence_parallel: true",
         "  activations_checkpoint_granularity: null", "  activations_checkpoint_method: null", "  fp8: false",
         "  tokenizer:", "    library: sentencepiece", "    type: null", "  data:", "    seq_length: 4096",
         "  optim:", "    name: distributed_fused_adam", "    lr: 0.0001"]
L = ["[NeMo I 2026-12-01 11:20:01 megatron_gpt_pretraining:37] "] + hydra
L.append("[NeMo I 2026-12-01 11:20:40 megatron_init:251] Rank 0 has data parallel group : [0, 4, 8, 12]")
L.append("[NeMo I 2026-12-01 11:20:41 megatron_base_model:642] Padded vocab_size: 32000, original vocab_size: 32000, "
         "dummy tokens: 0.")
bar = []
for it in range(1, 41):
    t = step_ms(it, 6420) / 1000
    bar.append(f"Epoch 0: : {it * 100 // 40}%|| {it}/40 [{it:02d}:00<00:00, reduced_train_loss={11 - it * 0.1:.3f}, "
               f"global_step={it - 1:.3f}, consumed_samples={it * 256:.1f}, train_step_timing in s={t:.3f}]")
# The progress bar redraws with carriage returns: one physical line holds many updates.
write("nemo/llama2_13b_nemo1_tp4_16gpu.log", L + ["\r".join(bar)])

# ---------------------------------------------------------------- torchtitan v0.2.2: Llama-3-8B on 8 GPUs, FSDP
titan_cfg = {
    "job": {"config_file": "./torchtitan/models/llama3/train_configs/llama3_8b.toml", "dump_folder": "./outputs",
            "print_config": True},
    "model": {"name": "llama3", "flavor": "8B", "hf_assets_path": "./assets/hf/Llama-3.1-8B", "converters": []},
    "training": {"local_batch_size": 1, "global_batch_size": -1, "seq_len": 8192, "max_norm": 1.0, "steps": 30,
                 "mixed_precision_param": "bfloat16", "mixed_precision_reduce": "float32"},
    "parallelism": {"data_parallel_replicate_degree": 1, "data_parallel_shard_degree": -1,
                    "fsdp_reshard_after_forward": "default", "tensor_parallel_degree": 1,
                    "enable_async_tensor_parallel": False, "pipeline_parallel_degree": 1,
                    "module_fqns_per_model_part": None, "pipeline_parallel_layers_per_stage": None,
                    "pipeline_parallel_schedule": "1F1B", "pipeline_parallel_microbatch_size": 1,
                    "context_parallel_degree": 1, "expert_parallel_degree": 1,
                    "expert_tensor_parallel_degree": 1},
    "activation_checkpoint": {"mode": "selective", "selective_ac_option": "op"},
    "compile": {"enable": False, "components": ["model", "loss"]},
    "metrics": {"log_freq": 1}}
pre = "[rank0]:[titan] 2026-12-01 12:00:{:02d},{:03d} - root - INFO - "
L = [pre.format(1, 100) + "Starting job: Llama 3 8B training",
     pre.format(1, 200) + "Running with configs: " + json.dumps(titan_cfg, indent=2).replace("\n", "\n[rank0]:")]
L.append(pre.format(3, 10) + "Building 1-D device mesh with ['dp_shard'], [8]")
ESC = "\x1b"
for step in range(1, 31):
    tps = 8192 * 1 / (step_ms(step, 1920) / 1000)
    tflops = LLAMA8B_FLOPS_PER_TOKEN * tps / 1e12
    mem = 62.84 if step > 1 else 58.2
    L.append(pre.format(5 + step // 2, step * 31 % 1000) +
             f"{ESC}[31mstep: {step:2}  {ESC}[32mloss: {11.2 - step * 0.2:8.5f}  {ESC}[38;2;180;82;0mgrad_norm: "
             f"{3.1 - step * 0.05:7.4f}  {ESC}[36mmemory: {mem:5.2f}GiB({mem / 79.1 * 100:.2f}%)  {ESC}[34mtps: "
             f"{round(tps):,}  {ESC}[36mtflops: {tflops:,.2f}  {ESC}[35mmfu: {tflops / 989 * 100:.2f}%{ESC}[39m")
write("torchtitan/llama3_8b_fsdp_8gpu.log", L)

# ---------------------------------------------------------------- Megatron-DeepSpeed: GPT 1.3B-ish, ZeRO-1, 8 GPUs
mds = dict(num_layers=24, hidden_size=2048, ffn_hidden_size=8192, num_attention_heads=16, num_key_value_heads=16,
           kv_channels=128, seq_length=2048, max_position_embeddings=2048, swiglu=False,
           untie_embeddings_and_output_weights=False, tensor_model_parallel_size=2,
           pipeline_model_parallel_size=1, no_pipeline_parallel=True, sequence_parallel=False, micro_batch_size=4,
           global_batch_size=256, deepspeed=True, deepspeed_config="./ds_config.json", zero_stage=1, bf16=True,
           fp16=False, recompute_granularity=None, world_size=8, data_parallel_size=4, padded_vocab_size=50304,
           rank=0, use_flash_attn_v2=True)
ds_user = {"train_batch_size": 256, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 16,
           "zero_optimization": {"stage": 1, "overlap_comm": True, "contiguous_gradients": True},
           "bf16": {"enabled": True}, "fp16": {"enabled": False}, "steps_per_print": 1}
dsp = "[2026-12-01 13:05:{:02d},{:03d}] [INFO] [config.py:{}:{}] "
L = megatron_args(mds)
L.append("[2026-12-01 13:05:01,001] [INFO] [logging.py:128:log_dist] [Rank 0] DeepSpeed info: version=0.16.4")
L.append(dsp.format(2, 10, 1003, "print") + "DeepSpeedEngine configuration:")
attrs = {"activation_checkpointing_config": "{\n    \"partition_activations\": false\n}", "bfloat16_enabled": "True",
         "fp16_enabled": "False", "gradient_accumulation_steps": "16", "steps_per_print": "1",
         "train_batch_size": "256", "train_micro_batch_size_per_gpu": "4", "world_size": "4",
         "zero_enabled": "True", "zero_optimization_stage": "1"}
for k, v in sorted(attrs.items()):
    L.append(dsp.format(2, 11, 1007, "print") + "  {} {} {}".format(k, "." * (29 - len(k)), v))
L.append(dsp.format(2, 12, 993, "print_user_config") + "  json = " +
         json.dumps(ds_user, sort_keys=True, indent=4, separators=(",", ":")))
for step in range(1, 26):
    sps = 256 / (step_ms(step, 2210) / 1000)
    L.append(f"[2026-12-01 13:06:{step:02d},{step * 37 % 1000:03d}] [INFO] [timer.py:264:stop] epoch=0/micro_step="
             f"{step * 16}/global_step={step}, RunningAvgSamplesPerSec={sps * 0.98}, CurrSamplesPerSec={sps}, "
             f"MemAllocated=9.81GB, MaxMemAllocated={31.47 if step > 1 else 30.02}GB")
write("deepspeed/gpt_1.3b_megatron_deepspeed_8gpu.log", L)

# Malformed: the fork's --zero-stage contradicts the DeepSpeed config.
write("deepspeed/bad_zero_conflict.log",
      megatron_args(dict(mds, zero_stage=2)) + L[len(megatron_args(mds)):])

# ---------------------------------------------------------------- llm-foundry: MPT-7B on 16 GPUs, FSDP full shard
foundry = ["variables:", "  data_local: ./my-copy-c4", "  max_seq_len: 2048", "max_seq_len: 2048",
           "run_name: mpt-7b-bench", "model:", "  name: mpt_causal_lm", "  init_device: meta", "  d_model: 4096",
           "  n_heads: 32", "  n_layers: 32", "  expansion_ratio: 4", "  max_seq_len: 2048", "  vocab_size: 50368",
           "  attn_config:", "    attn_impl: flash", "global_train_batch_size: 512", "device_train_microbatch_size: 8",
           "precision: amp_bf16", "fsdp_config:", "  sharding_strategy: FULL_SHARD", "  mixed_precision: PURE",
           "  activation_checkpointing: true", "  activation_cpu_offload: false", "callbacks:", "  speed_monitor:",
           "    window_size: 5", "  memory_monitor: {}", "n_gpus: 16", "device_train_batch_size: 32",
           "device_train_grad_accum: 4"]
L = ["Building trainer..."] + foundry + ["Starting training..."]
for batch in range(1, 31):
    L.append(f"[batch={batch}/30]:")
    L.append(f"\t Train time/batch: {batch - 1}")
    L.append(f"\t Train time/sample: {(batch - 1) * 512}")
    L.append(f"\t Train memory/peak_allocated_mem: 61.1200")
    L.append(f"\t Train memory/peak_reserved_mem: {68.2 if batch > 2 else 66.0:.4f}")
    L.append(f"\t Train loss/train/total: {11.5 - batch * 0.1:.4f}")
    if batch > 5:
        bps = 1 / (step_ms(batch, 9480) / 1000)
        L.append(f"\t Train throughput/batches_per_sec: {bps:.4f}")
        L.append(f"\t Train throughput/samples_per_sec: {bps * 512:.4f}")
        L.append(f"\t Train throughput/device/tokens_per_sec: {bps * 512 * 2048 / 16:.4f}")
write("llm-foundry/mpt_7b_fsdp_16gpu.log", L)
