#include "apps/finetune_flags.h"

#include <cstdio>

#include "apps/report_table.h"
#include "apps/text.h"
#include "modeler/finetune.h"
#include "modeler/optimizer.h"
#include "modeler/problems.h"

namespace shardplan::cli {

void add_finetune_flags(CLI::App* app, FinetuneFlags* f) {
  app->add_option("--peft", f->peft,
                  "fine-tuning method: none (every weight trains: pre-training or full fine-tuning), lora, dora, "
                  "qlora (4-bit NF4 base); adapters need --lora-rank and --lora-targets (default none)");
  app->add_option("--lora-rank", f->lora_rank, "rank r of the LoRA/DoRA/QLoRA adapters (with --peft; no default)")
      ->check(positive_number());
  app->add_option("--lora-targets", f->lora_targets,
                  "linear layers that get adapters, joined by , or +: q, k, v, o, gate, up, down, or all (with "
                  "--peft; no default)");
  app->add_option("--lora-dropout", f->lora_dropout,
                  "dropout probability on each adapter's input (PEFT lora_dropout; with --peft; default 0, PEFT's "
                  "default: no dropout tensors). Above 0 each adapter keeps its own dropped-out input and mask")
      ->check(CLI::Range(0.0, 0.999));
  app->add_option("--optimizer", f->optimizer,
                  "optimizer: " + optimizer_names() + " (default adamw); sets optimizer-state bytes and step time");
}

Finetune resolve_finetune(const FinetuneFlags& f) {
  Finetune out;
  if (f.optimizer) {
    const std::optional<Optimizer> o = parse_optimizer(*f.optimizer);
    if (!o)
      throw ConfigError("--optimizer: unknown optimizer '" + *f.optimizer + "' (choices: " + optimizer_names() + ")");
    out.optimizer = *o;
  }
  if (f.peft) {
    const std::optional<Peft> p = parse_peft(*f.peft);
    if (!p) throw ConfigError("--peft: unknown method '" + *f.peft + "' (choices: none, lora, dora, qlora)");
    out.peft = *p;
  }
  if (out.peft == Peft::none) {
    if (f.lora_rank || f.lora_targets || (f.lora_dropout && *f.lora_dropout > 0))
      throw ConfigError("--lora-rank, --lora-targets and --lora-dropout need --peft lora, dora or qlora");
    return out;
  }
  if (!f.lora_rank) throw ConfigError(std::string("--peft ") + to_string(out.peft) + " needs --lora-rank R");
  if (!f.lora_targets)
    throw ConfigError(std::string("--peft ") + to_string(out.peft) + " needs --lora-targets (e.g. q,v or all)");
  out.lora_rank = *f.lora_rank;
  std::string unknown;
  const std::optional<unsigned> t = parse_lora_targets(*f.lora_targets, &unknown);
  if (!t)
    throw ConfigError(
        "--lora-targets: " + (unknown.empty() ? std::string("no module given") : "unknown module '" + unknown + "'") +
        " (choices: q, k, v, o, gate, up, down, all)");
  out.lora_targets = *t;
  out.lora_dropout = f.lora_dropout.value_or(0.0);
  return out;
}

std::string format_finetune(const Plan& p, const ModelDesc& m) {
  const Finetune& f = p.finetune;
  if (f.peft == Peft::none && f.optimizer == Optimizer::adamw) return "";
  std::string s = "training: ";
  if (f.peft == Peft::none) {
    s += "every weight";
  } else {
    const double n = trainable_params(m, p);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s rank %d on %s: %s trainable parameters (%.2f%%), base frozen%s",
                  to_string(f.peft), f.lora_rank, lora_targets_string(f.lora_targets).c_str(), format_params(n).c_str(),
                  100.0 * trainable_share(m, p), f.peft == Peft::qlora ? " in NF4" : "");
    s += buf;
    if (f.lora_dropout > 0) {
      std::snprintf(buf, sizeof buf, ", lora dropout %g", f.lora_dropout);
      s += buf;
    }
  }
  return s + " | optimizer " + to_string(f.optimizer) + "\n";
}

std::string finetune_arguments(const Finetune& f) {
  std::string s;
  if (f.peft != Peft::none)
    s += std::string(" --peft ") + to_string(f.peft) + " --lora-rank " + std::to_string(f.lora_rank) +
         " --lora-targets " + lora_targets_string(f.lora_targets);
  if (f.peft != Peft::none && f.lora_dropout > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " --lora-dropout %g", f.lora_dropout);
    s += buf;
  }
  if (f.optimizer != Optimizer::adamw) s += std::string(" --optimizer ") + to_string(f.optimizer);
  return s;
}

}  // namespace shardplan::cli
