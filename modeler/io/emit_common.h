// Pieces the launch-unit emitters share: the header every file starts with, the node split, and how an uneven
// pipeline's layers are laid out over its virtual stages.
#pragma once

#include <string>
#include <vector>

#include "modeler/io/emit.h"
#include "modeler/problems.h"

namespace shardplan::io::detail {

int nodes_of(const System& s);
int gpus_per_node_of(const System& s);
/// `s` safe inside a one-line comment: control characters written as C escapes (\n, \r, \t, \x1b).
std::string comment_text(const std::string& s);
/// Comment lines naming shardplan, the plan, its prediction and the framework release the file targets.
std::string header(const EmitInput& in, const std::string& comment, const std::string& target);
/// Transformer layers of each virtual pipeline stage in model order (stage i runs on pipeline rank i % pp, as
/// Megatron-Core and torch.distributed.pipelining's looped schedules place them). Even splits give every stage
/// layers / (pp x vpp); an uneven split gives no stage more than the ceiling the prediction assumed
/// (pipeline_parallel.cc: the busiest stage holds ceil(layers / (pp x vpp))), and the lighter stages go first to
/// the first and last, which also hold the embedding and the loss.
std::vector<int> stage_layers(const Plan& p, int layers);
/// The model description, or a logic_error (every launch unit needs the architecture).
const ModelDesc& desc_of(const EmitInput& in);
/// "--emit FORMAT: " for error messages.
std::string what(EmitFormat f);
/// The plan's fp8 recipe with the framework default resolved.
Fp8Recipe fp8_recipe_of(const Plan& p, const std::string& framework);

std::string emit_megatron(const EmitInput& in);
std::string emit_deepspeed(const EmitInput& in);
std::string emit_torchtitan_python(const EmitInput& in);
std::string emit_torchtitan_toml(const EmitInput& in);
std::string emit_nemo(const EmitInput& in);

}  // namespace shardplan::io::detail
