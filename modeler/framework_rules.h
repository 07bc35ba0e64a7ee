// Framework constraints are plan constraints: the checks each training framework's launcher runs on its arguments
// at start-up (Megatron-LM validate_args and Megatron-Core's config classes, torchtitan's parallel dims and
// parallelize functions, DeepSpeed's engine), stated as conditions on a Plan. A plan that breaks one would be refused
// by the framework, so validate_plan reports it as a problem with the framework's reason, the search counts it
// among its rejections, and no emitter writes it. Each rule names the source file it restates (in our own words).
#pragma once

#include <vector>

#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/plan.h"
#include "modeler/problems.h"
#include "modeler/system.h"

namespace shardplan {

/// One launcher rule: `code` is the Problem code a violation gets (and the search's rejection key).
struct FrameworkRule {
  const char* code;
  Launcher launcher;    // Launcher::none: applies under every launcher (a hardware limit of a recipe)
  const char* summary;  // what the launcher requires, in words (the search's rejection label)
  const char* source;   // repository and file of the check
};

/// Every rule, in the order they are checked. Megatron rules apply to both Launcher::megatron and ::nemo
/// (Megatron-Bridge builds its models and optimizer with Megatron-Core).
const std::vector<FrameworkRule>& framework_rules();

/// Appends one Problem per rule of `framework`'s launcher that `plan` breaks: "<framework>: <why> (<source>)".
void check_framework_rules(const ModelDesc& model, const System& system, const Plan& plan, const Framework& framework,
                           Problems* problems);

/// The summary of the rule with this code, or nullptr.
const char* framework_rule_summary(const std::string& code);

/// Whether the GPU scales MX formats in its tensor cores (Blackwell, sm100+): shardplan's profiles mark that
/// generation by its fp4 peak, the same hardware block (NVIDIA Blackwell architecture technical brief).
bool gpu_has_mx_scaling(const Gpu& gpu);

}  // namespace shardplan
