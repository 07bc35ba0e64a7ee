// Fine-tuning and optimizer flags (modeler/finetune.h, modeler/optimizer.h), shared by predict, search and the
// plan-file reader: --peft, --lora-rank, --lora-targets, --optimizer.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "modeler/model_desc.h"
#include "modeler/plan.h"

namespace shardplan::cli {

struct FinetuneFlags {
  std::optional<std::string> peft;          // none, lora, dora, qlora
  std::optional<int> lora_rank;
  std::optional<std::string> lora_targets;  // "q,v" or "q+k+v+o" or "all"
  std::optional<double> lora_dropout;       // PEFT lora_dropout, [0, 1)
  std::optional<std::string> optimizer;
};

void add_finetune_flags(CLI::App* app, FinetuneFlags* f);
/// The plan's Finetune; ConfigError naming the flag for an unknown method, target or optimizer, for adapter flags
/// without --peft and for --peft without a rank or targets.
Finetune resolve_finetune(const FinetuneFlags& f);
/// "fine-tuning: lora rank 8 on q+v: 4.19 M trainable parameters (0.06%) | optimizer adamw\n", or "" for AdamW on
/// every weight.
std::string format_finetune(const Plan& p, const ModelDesc& m);
/// The flags that reproduce `f` ("" for AdamW on every weight), each with a leading space.
std::string finetune_arguments(const Finetune& f);

}  // namespace shardplan::cli
