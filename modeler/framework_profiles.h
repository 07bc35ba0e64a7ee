// The built-in framework profiles, one function each: what each software stack runs, every trait with its source
// (Framework::sources). The registry in framework.cc lists them; framework_profiles_megatron.cc holds the
// Megatron family (Megatron-LM, NeMo / Megatron-Bridge, Megatron-DeepSpeed), framework_profiles_pytorch.cc the
// PyTorch-native stacks (torchtitan, llm-foundry, Hugging Face Trainer + PEFT, Lit-GPT, other). Internal to
// modeler/: callers use find_framework / select_framework.
#pragma once

#include "modeler/framework.h"

namespace shardplan::profiles {

// framework_profiles_megatron.cc
Framework megatron();
Framework nemo();
Framework nemo_2024();
Framework megatron_legacy();
Framework megatron_deepspeed();

// framework_profiles_pytorch.cc
Framework torchtitan();
Framework llm_foundry();
Framework hf_deepspeed();
Framework hf_fsdp();
Framework other();
Framework litgpt_2023();

}  // namespace shardplan::profiles
