#include "modeler/serving/serving_types.h"

namespace shardplan::serving {

std::optional<Engine> parse_engine(const std::string& name) {
  if (name == "vllm") return Engine::vllm;
  if (name == "sglang") return Engine::sglang;
  if (name == "trtllm") return Engine::trtllm;
  // ik_llama.cpp allocates as llama.cpp does (it is a fork).
  if (name == "llama.cpp" || name == "llamacpp" || name == "ik_llama.cpp") return Engine::llamacpp;
  if (name == "other" || name == "flexgen" || name == "hf-accelerate") return Engine::other;
  return std::nullopt;
}

std::string engine_name(Engine e) {
  switch (e) {
    case Engine::vllm: return "vllm";
    case Engine::sglang: return "sglang";
    case Engine::trtllm: return "trtllm";
    case Engine::llamacpp: return "llama.cpp";
    case Engine::other: return "other";
  }
  return "other";
}

}  // namespace shardplan::serving
