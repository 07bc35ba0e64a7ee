#include "apps/plan_flags.h"

#include "apps/text.h"

#include "modeler/io/system_io.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/pipeline_layout.h"
#include "modeler/problems.h"

namespace shardplan::cli {

void add_system_flags(CLI::App* app, SystemFlags* f, bool gpus_required) {
  app->add_option("--system", f->system, "cluster name from hwprofiles/clusters or a profile path");
  app->add_option("--gpu", f->gpu,
                  "GPU name from hwprofiles/gpus: builds its standard node and network (give --system or --gpu)");
  auto* g = app->add_option("--gpus", f->gpus,
                            "number of GPUs (default with --system: the cluster's default_gpus; required with --gpu)")
                ->check(positive_number());
  if (gpus_required) g->required();
  app->add_option("--gpus-per-node", f->gpus_per_node, "GPUs per node (with --gpu; default: the GPU's standard node)")
      ->check(positive_number());
  app->add_option("--nvlink-domain", f->nvlink_domain,
                  "GPUs per NVLink domain (with --gpu; default: the standard node's)")
      ->check(positive_number());
  app->add_option("--nic-gbps", f->nic_gbps,
                  "scale-out bandwidth per GPU in Gb/s (with --gpu; default: the standard network's)")
      ->check(number_in(0.1, 1e6));
  app->add_option("--power-limit-w", f->power_limit_w,
                  "board power cap per GPU in W (<= TDP; default: the TDP): compute-bound kernels slow as "
                  "(cap/TDP)^(1/3)")
      ->check(number_in(1, 1e5));
}

bool PlanFlags::given(const std::string& flag) const {
  return from_file.count(flag) > 0 || (app != nullptr && app->count(flag) > 0);
}

void add_plan_flags(CLI::App* app, PlanFlags* f) {
  f->app = app;
  app->add_option("--tp", f->tp, "tensor-parallel degree (default 1)")->check(positive_number());
  app->add_option("--pp", f->pp, "pipeline stages (default 1)")->check(positive_number());
  app->add_option("--vpp", f->vpp, "virtual stages per pipeline rank, interleaved 1F1B when > 1 (default 1)")
      ->check(positive_number());
  app->add_option("--dp", f->dp, "data-parallel degree (default: gpus / (tp x tsp x pp x cp))")
      ->check(positive_number());
  app->add_option("--cp", f->cp, "context-parallel degree (default 1)")->check(positive_number());
  app->add_option("--ep", f->ep, "expert-parallel degree (MoE models only; default 1)")->check(positive_number());
  app->add_option("--etp", f->etp, "expert tensor-parallel degree (MoE models only; default: tp)")
      ->check(positive_number());
  app->add_option("--tsp", f->tsp,
                  "folded tensor + sequence parallel degree, replacing tp and cp (docs/techniques.md 1; default 1: "
                  "off)")
      ->check(positive_number());
  app->add_option("--moe-imbalance", f->moe_imbalance,
                  "dropless MoE (MoE models only): busiest expert's tokens over the mean (default 1: force-balanced "
                  "routing)")
      ->check(CLI::Range(1.0, 1e9));
  app->add_option("--capacity-factor", f->capacity_factor,
                  "token-drop MoE (MoE models only): expert capacity over the mean tokens per expert (default: "
                  "dropless)")
      ->check(positive_number());
  app->add_option("--sdp-keep", f->sdp_keep,
                  "subnetwork data parallelism (docs/techniques.md 2): fraction of layer parameters each worker keeps, "
                  "in (0, 1]; changes training semantics (default 1: off)")
      ->check(CLI::Range(0.0, 1.0));
  app->add_option("--sdp-mask", f->sdp_mask,
                  "SDP masking: forward (drop in both passes) or backward (only in backward; default forward)")
      ->check(CLI::IsMember({"forward", "backward"}));
  app->add_option("--sdp-granularity", f->sdp_granularity,
                  "SDP subnetworks: block (whole layers) or neuron (default block)")
      ->check(CLI::IsMember({"block", "neuron"}));
  app->add_option("--optimizer-offload", f->optimizer_offload,
                  "fraction of optimizer states and master weights in host memory, stepped on the CPU (Megatron-Core "
                  "--optimizer-offload-fraction; 1 = DeepSpeed ZeRO-Offload); default 0")
      ->check(CLI::Range(0.0, 1.0));
  add_sharding_flags(app, &f->sharding);
  app->add_option("--zero", f->zero,
                  "ZeRO stage: 0 none, 1 optimizer, 2 +gradients, 3 +parameters (FSDP); default: the framework's "
                  "(see --framework)")
      ->check(CLI::Range(0, 3));
  auto* on = app->add_flag("--sp", f->sp_on,
                           "Megatron sequence parallelism, needs tp > 1 (default: the framework's, see --framework)");
  app->add_flag("--no-sp", f->sp_off, "no sequence parallelism")->excludes(on);
  // Each on/off flag has its negation, so a value from --plan can be switched off.
  app->add_flag("--tp-overlap,!--no-tp-overlap", f->tp_overlap,
                "overlap tensor-parallel collectives with GEMMs, needs tp > 1 (default off)");
  app->add_flag("--ep-overlap,!--no-ep-overlap", f->ep_overlap,
                "hide MoE all-to-all behind another micro-batch's compute (Megatron-Core combined 1F1B); MoE models "
                "with ep > 1 only (default off)");
  app->add_option("--moe-dispatcher", f->moe_dispatcher,
                  "MoE token dispatcher: alltoall, allgather, deepep or hybridep (Megatron-Core "
                  "--moe-token-dispatcher-type, flex with --moe-flex-dispatcher-backend); default: the framework's "
                  "(alltoall)")
      ->check(CLI::IsMember({"alltoall", "allgather", "deepep", "hybridep"}));
  app->add_option("--moe-max-nodes", f->moe_max_nodes,
                  "node-limited routing: the most nodes (NVLink domains) one token's experts may span, DeepSeek-V3's "
                  "M = 4; default 0 (no limit)")
      ->check(CLI::Range(0, 1 << 20));
  app->add_flag("--moe-fp8-dispatch,!--no-moe-fp8-dispatch", f->moe_fp8_dispatch,
                "dispatch MoE tokens in fp8 with 1x128 scales (DeepSeek-V3; deepep or hybridep only; default off)");
  app->add_flag("--uneven-pp,!--no-uneven-pp", f->uneven_pp,
                "allow pp x vpp not dividing the layers, the busiest stage gets the extra (default off)");
  app->add_option("--pipeline-layout", f->pipeline_layout,
                  "Megatron-Core's --pipeline-model-parallel-layout: the embedding (E), layers (t), MTP modules (m) "
                  "and loss (L) of each of the pp x vpp stages, '|' between stages, (..)*N and x*N repeats, e.g. "
                  "'Et|(tt|)*30mL'; default: the even split");
  app->add_option("--mtp-layers", f->mtp_layers,
                  "multi-token-prediction modules to train, at most the model's (Megatron-Core --mtp-num-layers; "
                  "default 0)")
      ->check(CLI::Range(0, 1 << 20));
  std::string allgather_fws;  // the frameworks whose recipes all-gather K/V, from their profiles
  for (const std::string& name : framework_names())
    if (find_framework(name)->recipe_cp_kind == CpKind::allgather)
      allgather_fws += (allgather_fws.empty() ? "" : ", ") + name;
  app->add_option("--cp-kind", f->cp_kind,
                  "context-parallel attention: ring or allgather, with cp > 1; default: the framework's (allgather "
                  "for " + allgather_fws + ", ring for the others)")
      ->check(CLI::IsMember({"ring", "allgather"}));
  app->add_option("--mbs", f->mbs, "micro-batch size (sequences; default 1)")->check(positive_number());
  app->add_option("--gbs", f->gbs, "global batch size (sequences per step; default dp x mbs)")
      ->check(positive_number());
  app->add_option("--seq", f->seq, "sequence length in tokens (default 4096)")->check(positive_number());
  app->add_option("--recompute", f->recompute,
                  "activation recomputation: none, selective or full (default: the framework's, see --framework)")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  app->add_option("--recompute-layers", f->recompute_layers,
                  "with --recompute full: recompute only N layers of each pipeline chunk, Megatron's block method "
                  "(default: every layer)")
      ->check(positive_number());
  app->add_option("--recompute-modules", f->recompute_modules,
                  "selective recompute of these Megatron-Core modules, joined by + or ,: core_attn (the default), "
                  "layernorm, mlp, moe, moe_act, shared_experts, mla_up_proj (implies --recompute selective)");
  app->add_option("--precision", f->precision,
                  "GEMM precision (default bf16): bf16, fp16, fp8 (the framework's fp8 recipe), fp8-delayed, "
                  "fp8-tensorwise, fp8-blockwise, mxfp8 or nvfp4; fp8-blockwise and mxfp8 GEMMs use the GPU's "
                  "block-scaled fp8 table, its per-tensor fp8 one where it has none (docs/measured-tables.md)")
      ->check(
          CLI::IsMember({"bf16", "fp16", "fp8", "fp8-delayed", "fp8-tensorwise", "fp8-blockwise", "mxfp8", "nvfp4"}));
  std::string gather_on;  // the frameworks whose default is on, from their profiles
  for (const std::string& name : framework_names())
    if (find_framework(name)->fp8_param_gather) gather_on += (gather_on.empty() ? "" : ", ") + name;
  // A flag function, so that the option stays unset (the framework's) unless given: +1 per --fp8-param-gather,
  // -1 per --no-fp8-param-gather.
  app->add_flag_function("--fp8-param-gather,!--no-fp8-param-gather",
                         [f](std::int64_t n) { f->fp8_param_gather = n > 0; },
                         "ZeRO/FSDP parameters all-gathered in the fp8 recipe's dtype (Megatron-Core "
                         "--fp8-param-gather, torchao enable_fsdp_float8_all_gather); default: the framework's (on "
                         "for " + gather_on + ", off for the others)");
  app->add_option("--framework", f->framework, framework_help())->check(CLI::IsMember(framework_names()));
  add_finetune_flags(app, &f->finetune);
}

System resolve_system(const SystemFlags& f) {
  if (!f.system.empty() && !f.gpu.empty()) throw ConfigError("--system and --gpu are exclusive: give one");
  if (f.system.empty() && f.gpu.empty()) throw ConfigError("give --system CLUSTER or --gpu GPU --gpus N");
  if (!f.system.empty()) {
    if (f.gpus_per_node || f.nvlink_domain || f.nic_gbps)
      throw ConfigError("--gpus-per-node, --nvlink-domain and --nic-gbps go with --gpu, not --system");
    System sys = io::load_system(f.system, f.gpus.value_or(0));
    if (f.power_limit_w) set_power_limit(&sys.gpu, *f.power_limit_w);
    return sys;
  }
  if (!f.gpus) throw ConfigError("--gpu " + f.gpu + " needs --gpus N");
  io::StandardSystemOptions o;
  o.gpus = *f.gpus;
  o.gpus_per_node = f.gpus_per_node.value_or(0);
  o.nvlink_domain = f.nvlink_domain.value_or(0);
  o.nic_gbps_per_gpu = f.nic_gbps.value_or(0);
  o.power_limit_w = f.power_limit_w.value_or(0);
  return io::standard_system(io::load_gpu(f.gpu), o);
}

const Framework& resolve_framework(const std::string& name) {
  const Framework* fw = find_framework(name);
  if (!fw) {
    const std::string near = io::closest_match(name, framework_names());
    throw ConfigError("unknown framework '" + name + "'" + (near.empty() ? "" : ", did you mean '" + near + "'?"));
  }
  return *fw;
}

Recompute parse_recompute(const std::string& s) {
  if (s == "none") return Recompute::none;
  if (s == "selective") return Recompute::selective;
  if (s == "full") return Recompute::full;
  throw ConfigError("recompute must be none, selective or full, got '" + s + "'");
}

unsigned parse_recompute_modules_flag(const std::string& flag, const std::string& text) {
  std::string unknown;
  if (const std::optional<unsigned> mods = parse_recompute_modules(text, &unknown)) return *mods;
  std::string choices;
  for (const RecomputeModuleName& m : kRecomputeModuleNames)
    choices += (choices.empty() ? "" : ", ") + std::string(m.name);
  throw ConfigError(flag + ": " + (unknown.empty() ? "no module given" : "unknown module '" + unknown + "'") +
                    " (choices: " + choices + ")");
}

std::string framework_help() {
  std::string s = "training software profile (default megatron-lm); what a plan gets when --zero, --sp/--no-sp, "
                  "--recompute or the fp8 recipe are not given:";
  for (const std::string& name : framework_names())
    s += "\n  " + name + ": " + framework_defaults_text(*find_framework(name));
  return s;
}

std::optional<Fp8Recipe> precision_fp8_recipe(const std::string& s) {
  if (s == "mxfp8") return Fp8Recipe::mxfp8;
  if (s == "fp8-delayed") return Fp8Recipe::delayed;
  if (s == "fp8-tensorwise") return Fp8Recipe::tensorwise;
  if (s == "fp8-blockwise") return Fp8Recipe::blockwise;
  return std::nullopt;
}

Dtype parse_precision(const std::string& s) {
  if (s == "bf16") return Dtype::bf16;
  if (s == "fp16") return Dtype::fp16;
  // Every fp8 recipe, MXFP8 included, runs its GEMMs at the fp8 tensor-core rate; Plan::fp8_recipe keeps which
  // (and with it the GEMM table: precision_recipe.h gemm_scaling).
  if (s == "fp8" || s == "mxfp8" || s.rfind("fp8-", 0) == 0) return Dtype::fp8;
  if (s == "nvfp4") return Dtype::fp4;
  throw ConfigError("precision must be bf16, fp16, fp8, fp8-delayed, fp8-tensorwise, fp8-blockwise, mxfp8 or nvfp4, "
                    "got '" + s + "'");
}

Plan resolve_plan(const PlanFlags& f, const System& sys) {
  // Settings the user leaves unset take the framework's default (framework.h default_*), never one profile's.
  const Framework* fw = find_framework(f.framework);
  if (!fw) fw = &resolve_framework(f.framework);  // throws the unknown-name error
  Plan p;
  p.tp = f.tp.value_or(1);
  p.pp = f.pp.value_or(1);
  p.vpp = f.vpp.value_or(1);
  p.cp = f.cp.value_or(1);
  p.ep = f.ep.value_or(1);
  p.etp = f.etp.value_or(p.tp);
  p.tsp = f.tsp.value_or(1);
  p.zero = f.zero.value_or(fw->zero_default(f.pp.value_or(1)));
  p.moe_imbalance = f.moe_imbalance.value_or(1.0);
  p.capacity_factor = f.capacity_factor.value_or(0.0);
  if (f.moe_dispatcher) p.moe_dispatcher = parse_moe_dispatcher(*f.moe_dispatcher);
  p.moe_max_nodes = f.moe_max_nodes.value_or(0);
  p.moe_fp8_dispatch = f.moe_fp8_dispatch;
  p.sdp_keep = f.sdp_keep.value_or(1.0);
  p.optimizer_offload = f.optimizer_offload.value_or(0.0);
  apply_sharding_flags(f.sharding, &p);
  p.sdp_mask = f.sdp_mask == "backward" ? SdpMask::backward : SdpMask::forward;
  p.sdp_granularity = f.sdp_granularity == "neuron" ? SdpGranularity::neuron : SdpGranularity::block;
  if (!f.sdp_keep && (f.sdp_mask != "forward" || f.sdp_granularity != "block"))
    throw ConfigError("--sdp-mask and --sdp-granularity need --sdp-keep");
  // 64-bit, and checked against the plan limits before dividing: --tp 65536 --pp 65536 must not wrap to 0.
  const long long model_parallel = 1LL * p.tp * p.tsp * p.pp * p.cp;
  if (model_parallel > kMaxPlanGpus)
    throw ConfigError(std::string(p.tsp > 1 ? "tp x tsp x pp x cp (" : "tp x pp x cp (") +
                      std::to_string(model_parallel) + ") must be at most 2^24 GPUs");
  if (f.dp) {
    p.dp = *f.dp;
  } else {
    if (sys.gpus % model_parallel != 0)
      throw ConfigError(std::string(p.tsp > 1 ? "tp x tsp x pp x cp (" : "tp x pp x cp (") +
                        std::to_string(model_parallel) + ") does not divide the GPU count (" +
                        std::to_string(sys.gpus) + ")");
    p.dp = static_cast<int>(sys.gpus / model_parallel);
  }
  p.sequence_parallel = f.sp_on || (!f.sp_off && p.tp > 1 && fw->default_sp);
  p.tp_comm_overlap = f.tp_overlap;
  p.ep_comm_overlap = f.ep_overlap;
  p.uneven_pipeline = f.uneven_pp;
  if (!f.pipeline_layout.empty()) {
    std::string error;
    if (!parse_pipeline_layout(f.pipeline_layout, &error))
      throw ConfigError("--pipeline-layout '" + f.pipeline_layout + "': " + error);
  }
  p.pipeline_layout = f.pipeline_layout;
  p.mtp_layers = f.mtp_layers.value_or(0);
  p.cp_kind = f.cp_kind.empty()         ? fw->recipe_cp_kind
              : f.cp_kind == "allgather" ? CpKind::allgather
                                         : CpKind::ring;
  p.micro_batch = f.mbs.value_or(1);
  const long long default_gbs = 1LL * p.dp * p.micro_batch;
  if (!f.gbs && default_gbs > kMaxBatch)
    throw ConfigError("the default global batch dp x mbs (" + std::to_string(p.dp) + " x " +
                      std::to_string(p.micro_batch) + ") must be at most 2^24 sequences; give --gbs");
  p.global_batch = f.gbs.value_or(static_cast<int>(default_gbs));
  p.seq_len = f.seq.value_or(4096);
  p.recompute =
      parse_recompute(f.recompute.value_or(f.recompute_modules ? "selective" : to_string(fw->default_recompute)));
  p.recompute_layers = f.recompute_layers.value_or(0);
  if (f.recompute_modules) {
    if (p.recompute != Recompute::selective)
      throw ConfigError("--recompute-modules applies to selective recompute, not --recompute " +
                        std::string(to_string(p.recompute)));
    p.recompute_modules = parse_recompute_modules_flag("--recompute-modules", *f.recompute_modules);
  }
  p.precision = parse_precision(f.precision);
  p.fp8_recipe = precision_fp8_recipe(f.precision);  // its quantization kernels (precision_recipe.h)
  p.fp8_param_gather = f.fp8_param_gather;
  p.finetune = resolve_finetune(f.finetune);
  if (const std::string limit = plan_limit_violation(p); !limit.empty()) throw ConfigError(limit);
  return p;
}

namespace {
/// The flag as the user gave it, or the plan file's key when the value came from --plan.
std::string origin(const PlanFlags& f, const std::string& flag) {
  const auto it = f.from_file.find(flag);
  return it == f.from_file.end() ? flag : "'" + it->second + "' of " + f.plan_file;
}
}  // namespace

void check_flags_fit(const PlanFlags& f, const ModelDesc& model, const Plan& plan) {
  std::vector<std::string> errors;
  if (!model.moe) {
    for (const char* flag : {"--ep", "--etp", "--capacity-factor", "--moe-imbalance", "--ep-overlap",
                             "--moe-dispatcher", "--moe-max-nodes", "--moe-fp8-dispatch"})
      if (f.given(flag) && ((std::string(flag) != "--ep-overlap" || f.ep_overlap) &&
                            (std::string(flag) != "--moe-fp8-dispatch" || f.moe_fp8_dispatch)))
        errors.push_back(origin(f, flag) + " applies to mixture-of-experts models, and " + model.name +
                         " is dense (no experts)");
  } else {
    if (f.ep_overlap && plan.ep == 1)
      errors.push_back(origin(f, "--ep-overlap") +
                       " hides the expert-parallel all-to-all, and ep is 1 (no all-to-all): give --ep N");
  }
  if (plan.sequence_parallel && plan.tp == 1 && f.sp_on)
    errors.push_back(origin(f, "--sp") + " needs tp > 1: sequence parallelism splits the norms and dropout over the "
                                         "tensor-parallel group, and tp is 1");
  if (f.tp_overlap && plan.tp == 1)
    errors.push_back(origin(f, "--tp-overlap") + " needs tp > 1: with tp 1 there are no tensor-parallel "
                                                 "collectives to overlap");
  if (f.given("--cp-kind") && plan.cp == 1)
    errors.push_back(origin(f, "--cp-kind") + " chooses the context-parallel attention, and cp is 1: give --cp N");
  if (errors.empty()) return;
  std::string msg;
  for (const std::string& e : errors) msg += (msg.empty() ? "" : "\n") + e;
  throw ConfigError(msg);
}

namespace {
std::string fmt_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

std::string plan_arguments(const Plan& p, const std::string& framework) {
  std::string s = "--tp " + std::to_string(p.tp) + " --pp " + std::to_string(p.pp);
  if (p.vpp > 1) s += " --vpp " + std::to_string(p.vpp);
  if (p.cp > 1) s += " --cp " + std::to_string(p.cp);
  if (p.tsp > 1) s += " --tsp " + std::to_string(p.tsp);
  if (p.ep > 1) s += " --ep " + std::to_string(p.ep);
  if (p.etp != p.tp) s += " --etp " + std::to_string(p.etp);
  if (p.moe_imbalance != 1.0) s += " --moe-imbalance " + fmt_number(p.moe_imbalance);
  if (p.capacity_factor > 0) s += " --capacity-factor " + fmt_number(p.capacity_factor);
  if (p.moe_dispatcher) s += std::string(" --moe-dispatcher ") + to_string(*p.moe_dispatcher);
  if (p.moe_max_nodes > 0) s += " --moe-max-nodes " + std::to_string(p.moe_max_nodes);
  if (p.moe_fp8_dispatch) s += " --moe-fp8-dispatch";
  if (p.sdp_keep < 1.0)
    s += " --sdp-keep " + fmt_number(p.sdp_keep) + " --sdp-mask " + to_string(p.sdp_mask) + " --sdp-granularity " +
         to_string(p.sdp_granularity);
  s += " --dp " + std::to_string(p.dp) + " --zero " + std::to_string(p.zero);
  if (p.optimizer_offload > 0) s += " --optimizer-offload " + fmt_number(p.optimizer_offload);
  s += sharding_arguments(p);
  s += p.sequence_parallel ? " --sp" : " --no-sp";
  if (p.tp_comm_overlap) s += " --tp-overlap";
  if (p.ep_comm_overlap) s += " --ep-overlap";
  if (p.uneven_pipeline) s += " --uneven-pp";
  if (!p.pipeline_layout.empty()) s += " --pipeline-layout '" + p.pipeline_layout + "'";  // '|' and '*': quoted
  if (p.mtp_layers > 0) s += " --mtp-layers " + std::to_string(p.mtp_layers);
  // Always spelled out: the default depends on the framework, so the command must not rely on it.
  if (p.cp > 1) s += std::string(" --cp-kind ") + to_string(p.cp_kind);
  s += " --mbs " + std::to_string(p.micro_batch) + " --gbs " + std::to_string(p.global_batch) + " --seq " +
       std::to_string(p.seq_len) + " --recompute " + to_string(p.recompute) +
       (p.recompute_layers > 0 ? " --recompute-layers " + std::to_string(p.recompute_layers) : "") +
       (p.recompute == Recompute::selective && p.recompute_modules != kRecomputeCoreAttn
            ? " --recompute-modules " + recompute_modules_string(p.recompute_modules)
            : "") +
       " --precision " + precision_name(p) +
       (p.fp8_param_gather ? *p.fp8_param_gather ? " --fp8-param-gather" : " --no-fp8-param-gather" : "") +
       finetune_arguments(p.finetune) + " --framework " + framework;
  return s;
}

}  // namespace shardplan::cli
