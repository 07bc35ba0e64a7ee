#include "modeler/framework_rules.h"

#include <string>

#include "modeler/precision_recipe.h"

namespace shardplan {

namespace {

// The revisions read (git show in mirrors of the repositories); every condition below restates a check there.
constexpr const char* kMegatronArgs = "NVIDIA/Megatron-LM megatron/training/arguments.py validate_args (d98e8a6)";
constexpr const char* kMegatronParallel =
    "NVIDIA/Megatron-LM megatron/core/model_parallel_config.py ModelParallelConfig.__post_init__ (d98e8a6)";
constexpr const char* kMegatronTransformer =
    "NVIDIA/Megatron-LM megatron/core/transformer/transformer_config.py fp8_recipe (d98e8a6)";
constexpr const char* kTitanParallelize = "pytorch/torchtitan v0.2.2 torchtitan/models/llama3/infra/parallelize.py";
constexpr const char* kTitanDims = "pytorch/torchtitan v0.2.2 torchtitan/distributed/parallel_dims.py";
constexpr const char* kTitanFloat8 = "pytorch/torchtitan v0.2.2 torchtitan/config/job_config.py Float8Linear";
constexpr const char* kTitanMx = "pytorch/torchtitan v0.2.2 torchtitan/components/quantization/mx.py";
constexpr const char* kDeepSpeedPipe = "deepspeedai/DeepSpeed deepspeed/runtime/pipe/engine.py (edaa722)";
constexpr const char* kDeepSpeedSchedule = "deepspeedai/DeepSpeed deepspeed/runtime/pipe/schedule.py (edaa722)";
constexpr const char* kMegatronDeepSpeed = "deepspeedai/Megatron-DeepSpeed megatron/arguments.py (4efb479)";

const std::vector<FrameworkRule> kRules = {
    {"mx_needs_blackwell", Launcher::none, "mxfp8 needs MX block scaling in the tensor cores (Blackwell)",
     kMegatronTransformer},
    {"data_parallel_only", Launcher::none, "tensor, pipeline and context parallelism not offered by the framework",
     "huggingface/accelerate src/accelerate/accelerator.py (DeepSpeed, FSDP or DDP wrapping only)"},
    {"megatron_tp_overlap_needs_sp", Launcher::megatron, "TP overlap needs sequence parallelism (Megatron)",
     kMegatronArgs},
    {"megatron_ep_tp_needs_sp", Launcher::megatron,
     "expert with tensor parallelism needs sequence parallelism (Megatron-Core)", kMegatronParallel},
    {"megatron_fsdp2_pp", Launcher::megatron, "FSDP2 (ZeRO-3) with pipeline parallelism refused (Megatron)",
     kMegatronArgs},
    {"megatron_fsdp2_ep", Launcher::megatron, "FSDP2 (ZeRO-3) with expert parallelism refused (Megatron)",
     kMegatronArgs},
    {"megatron_fsdp2_tied", Launcher::megatron, "FSDP2 (ZeRO-3) needs untied embeddings (Megatron)", kMegatronArgs},
    {"megatron_fsdp2_fp16", Launcher::megatron, "FSDP2 (ZeRO-3) with fp16 refused (Megatron)", kMegatronArgs},
    {"torchtitan_ddp_multi_dim", Launcher::torchtitan, "DDP (ZeRO-0) with other parallelism refused (torchtitan)",
     kTitanParallelize},
    {"torchtitan_cp_shards", Launcher::torchtitan, "context parallelism always shards with FSDP (torchtitan)",
     kTitanDims},
    {"torchtitan_seq_divisor", Launcher::torchtitan, "tp x 2 x cp does not divide the sequence (torchtitan)",
     kTitanParallelize},
    {"torchtitan_etp", Launcher::torchtitan, "expert tensor parallelism must be 1 or tp (torchtitan)", kTitanDims},
    {"torchtitan_fp8_recipe", Launcher::torchtitan, "fp8 recipe not offered by torchtitan's float8", kTitanFloat8},
    {"torchtitan_mxfp8_async_tp", Launcher::torchtitan, "mxfp8 with async TP (torch.compile + TP) refused (torchtitan)",
     kTitanMx},
    {"deepspeed_zero_pp", Launcher::megatron_deepspeed, "ZeRO-2/3 with pipeline parallelism refused (DeepSpeed)",
     kDeepSpeedPipe},
    {"deepspeed_no_interleaving", Launcher::megatron_deepspeed,
     "no interleaved pipeline schedule (DeepSpeed's pipeline engine)", kDeepSpeedSchedule},
    {"megatron_deepspeed_cp", Launcher::megatron_deepspeed, "no ring context parallelism (Megatron-DeepSpeed)",
     kMegatronDeepSpeed},
    {"megatron_deepspeed_low_precision", Launcher::megatron_deepspeed,
     "fp8/fp4 need Transformer Engine, not in this profile (Megatron-DeepSpeed)", kMegatronDeepSpeed},
};

bool applies(const FrameworkRule& r, Launcher l) {
  if (r.launcher == Launcher::none) return true;
  if (r.launcher == Launcher::megatron) return l == Launcher::megatron || l == Launcher::nemo;
  return r.launcher == l;
}

}  // namespace

const std::vector<FrameworkRule>& framework_rules() { return kRules; }

const char* framework_rule_summary(const std::string& code) {
  for (const FrameworkRule& r : kRules)
    if (code == r.code) return r.summary;
  return nullptr;
}

bool gpu_has_mx_scaling(const Gpu& gpu) { return gpu.peak_for(Dtype::fp4).v > 0; }

void check_framework_rules(const ModelDesc& model, const System& system, const Plan& p, const Framework& fw,
                           Problems* problems) {
  const std::string who = fw.name + ": ";
  const bool fp8 = p.precision == Dtype::fp8;
  const Fp8Recipe recipe = effective_fp8_recipe(p, fw);
  const bool mxfp8 = fp8 && recipe == Fp8Recipe::mxfp8;
  const bool moe = model.moe.has_value();
  auto add = [&](const char* code, const std::string& why) {
    for (const FrameworkRule& r : kRules)
      if (std::string(r.code) == code) {
        if (applies(r, fw.launcher)) problems->push_back({code, who + why + " (" + r.source + ")"});
        return;
      }
  };
  const std::string tp = std::to_string(p.tp), pp = std::to_string(p.pp), ep = std::to_string(p.ep);

  // Hardware: MX scaling factors (one e8m0 scale per 32 elements) are applied by Blackwell's tensor cores;
  // Transformer Engine's MXFP8BlockScaling and torchao's MX recipes run only there.
  if (mxfp8 && !gpu_has_mx_scaling(system.gpu))
    add("mx_needs_blackwell",
        "the mxfp8 recipe runs on Blackwell GPUs only; " + system.gpu.name + " has no MX scaling");

  if (!fw.offers_model_parallel && (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.tsp > 1))
    add("data_parallel_only", "parallelises by data only (DeepSpeed/FSDP engine under the Trainer); tp " + tp +
                                  ", pp " + pp + ", cp " + std::to_string(p.cp) + " must be 1");

  // Megatron-LM / Megatron-Core (also under NeMo and Megatron-Bridge).
  if (p.tp_comm_overlap && !p.sequence_parallel)
    add("megatron_tp_overlap_needs_sp", "--tp-comm-overlap (tp " + tp + ") runs only with --sequence-parallel");
  if (moe && p.ep > 1 && p.tp > 1 && !p.sequence_parallel)
    add("megatron_ep_tp_needs_sp", "expert parallelism (ep " + ep + ") with tensor parallelism (tp " + tp +
                                       ") must run with sequence parallelism");
  if (p.zero == 3) {
    // ZeRO-3 is emitted as --use-torch-fsdp2, whose start-up checks follow.
    if (p.pp > 1)
      add("megatron_fsdp2_pp", "ZeRO-3 (--use-torch-fsdp2) is not supported with pipeline parallelism (pp " + pp + ")");
    if (moe && p.ep > 1)
      add("megatron_fsdp2_ep", "ZeRO-3 (--use-torch-fsdp2) is not supported with expert parallelism (ep " + ep + ")");
    if (model.tied_embeddings)
      add("megatron_fsdp2_tied", "ZeRO-3 (--use-torch-fsdp2) requires --untie-embeddings-and-output-weights; " +
                                     model.name + " ties its embeddings");
    if (p.precision == Dtype::fp16) add("megatron_fsdp2_fp16", "ZeRO-3 (--use-torch-fsdp2) does not support fp16");
  }

  // torchtitan: parallelize_llama applies DDP only when data parallelism is the whole mesh, and FSDP whenever
  // dp_shard > 1 or cp > 1.
  if (p.zero == 0 && p.dp > 1 && (p.tp > 1 || p.pp > 1 || p.cp > 1 || (moe && p.ep > 1)))
    add("torchtitan_ddp_multi_dim", "ZeRO-0 is DDP (data_parallel_replicate_degree " + std::to_string(p.dp) +
                                        "), which refuses to run with tp, pp, cp or ep (\"DDP has not supported > 1D "
                                        "parallelism\"); use ZeRO-2 or 3 (FSDP)");
  if (p.zero == 0 && p.cp > 1)
    add("torchtitan_cp_shards", "context parallelism (cp " + std::to_string(p.cp) +
                                    ") always shards parameters with FSDP over the cp ranks; ZeRO-0 is not what runs");
  const int divisor = p.tp * 2 * p.cp;
  if ((p.tp > 1 || p.cp > 1) && p.seq_len % divisor != 0)
    add("torchtitan_seq_divisor", "the sequence (" + std::to_string(p.seq_len) +
                                      ") must be divisible by tp x 2 x cp (" + std::to_string(divisor) + ")");
  if (moe && p.ep > 1 && p.etp != 1 && p.etp != p.tp)
    add("torchtitan_etp",
        "expert tensor parallelism (etp " + std::to_string(p.etp) + ") must equal 1 or tp (" + tp + ")");
  if (fp8 && (recipe == Fp8Recipe::delayed || recipe == Fp8Recipe::blockwise))
    add("torchtitan_fp8_recipe", std::string("float8 training scales tensorwise or rowwise, not ") + to_string(recipe));
  if (mxfp8 && p.tp > 1 && p.tp_comm_overlap)
    add("torchtitan_mxfp8_async_tp",
        "async TP needs torch.compile, and the mxfp8 converter refuses tensor "
        "parallelism under torch.compile (tp " +
            tp + ")");

  // DeepSpeed and Megatron-DeepSpeed.
  if (p.zero >= 2 && p.pp > 1)
    add("deepspeed_zero_pp", "ZeRO-" + std::to_string(p.zero) +
                                 " is incompatible with DeepSpeed's pipeline engine (pp " + pp + "); use ZeRO-0 or 1");
  // PipelineEngine runs TrainSchedule, a one-stage-per-rank 1F1B; Megatron-DeepSpeed's PipelineModule has no
  // virtual stages.
  if (p.vpp > 1)
    add("deepspeed_no_interleaving",
        "DeepSpeed's pipeline engine runs one 1F1B stage per rank, no interleaved "
        "schedule (vpp " +
            std::to_string(p.vpp) + ")");
  if (p.cp > 1)
    add("megatron_deepspeed_cp", "Megatron-DeepSpeed has no ring context parallelism (cp " + std::to_string(p.cp) +
                                     "); its sequence parallelism is DeepSpeed-Ulysses (--ds-sequence-parallel-size)");
  if (p.precision == Dtype::fp8 || p.precision == Dtype::fp4)
    add("megatron_deepspeed_low_precision", std::string("its ") + (p.precision == Dtype::fp8 ? "fp8" : "fp4") +
                                                " GEMMs run through Transformer Engine (--transformer-impl "
                                                "transformer_engine), which the megatron-deepspeed profile does not "
                                                "model; use bf16 or fp16");
}

}  // namespace shardplan
