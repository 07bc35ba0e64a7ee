// serve predict --offload: one GPU plus its host. Prints the fastest llama.cpp -ngl split and the tensor-level
// placement under the same VRAM, per phase, with llama.cpp flags for each.
#include <cstdio>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "apps/serve_command.h"
#include "modeler/io/serving_host_io.h"
#include "modeler/problems.h"
#include "modeler/serving/engine_memory.h"
#include "modeler/serving/offload.h"

namespace shardplan::cli {

using namespace serving;

int run_offload(const ServingModel& sm, const Gpu& gpu, const OffloadRequest& req) {
  if (req.mode != "layer" && req.mode != "tensor")
    throw ConfigError("--offload: expected layer or tensor, got '" + req.mode + "'");
  if (req.host.empty()) throw ConfigError("--offload needs --host (a hwprofiles/hosts name or file)");
  if (gpu.unified_memory)
    throw ConfigError("--offload: " + gpu.name + " has unified memory (its GPU reads the host's DRAM); the PCIe "
                      "offload model does not apply");
  OffloadSetup s;
  s.model = &sm;
  s.gpu = &gpu;
  s.host = io::load_host(req.host);
  s.context = req.context_depth + req.input_len + req.output_len;
  s.prefill_tokens = std::min(512, req.input_len);
  // A prompt query attends the cache before it plus half the prompt on average (offload.h, prefill_keys).
  s.prefill_keys = req.context_depth + req.input_len / 2.0;
  // The flags printed run under llama.cpp's rule for host weights (ggml-cuda's op offload at 32 tokens).
  s.op_offload_min_batch = kLlamaCppOpOffloadMinBatch;
  s.decode_batch = req.batch;
  // VRAM for weights and KV: the capacity less llama.cpp's compute buffers and the CUDA runtime.
  WorkerPlan one;
  EngineMemoryOptions eo;
  eo.context = static_cast<int>(s.context);
  const MemoryReport mem = engine_memory(sm, gpu, one, Engine::llamacpp, eo, s.context);
  const Bytes cap = req.vram_gib > 0 ? GiB(req.vram_gib) : gpu.hbm_capacity;
  s.vram = cap - mem.activations - mem.other - pinned_bytes(sm);
  if (s.vram.v <= 0) throw Infeasible("the compute buffers alone exceed the VRAM");
  const std::vector<OffloadItem> items = offload_items(s);
  Bytes all;
  for (const auto& it : items) all += it.bytes;
  if (all - s.vram > s.host.memory)
    throw Infeasible("the model does not fit in VRAM plus host memory (" + num(to_GiB(all), "%.1f") + " GiB)");
  const Placement layer = best_layer_placement(items, s);
  const Placement tensor = tensor_placement(items, s);
  const char* phases[2] = {"prefill", "decode"};
  const double tokens[2] = {s.prefill_tokens, s.decode_batch};
  if (req.json) {
    nlohmann::json j{{"schema_version", 1}, {"context", {{"command", "serve predict --offload"}, {"host", s.host.name},
                                                          {"gpu", gpu.name}, {"vram_bytes", s.vram.v}}}};
    for (int ph = 0; ph < 2; ++ph) {
      j[phases[ph]] = {{"layer_step_s", layer.step[ph].v}, {"tensor_step_s", tensor.step[ph].v},
                       {"layer_tokens_per_s", tokens[ph] / layer.step[ph].v},
                       {"tensor_tokens_per_s", tokens[ph] / tensor.step[ph].v},
                       {"gain", layer.step[ph].v / tensor.step[ph].v},
                       {"layer_gpu_bytes", layer.gpu_bytes[ph].v}, {"tensor_gpu_bytes", tensor.gpu_bytes[ph].v},
                       {"ngl", layer.ngl}, {"llama_cpp_flags", llama_cpp_flags(items, tensor, ph)}};
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("offload on %s + host %s: %.2f GiB of VRAM for weights and KV (compute buffers %.2f GiB), model %.2f "
              "GiB with KV for %.0f tokens\n", gpu.name.c_str(), s.host.name.c_str(), to_GiB(s.vram),
              to_GiB(mem.activations), to_GiB(all), s.context);
  std::printf("%-8s %28s %28s %7s\n", "phase", "best -ngl split (tok/s)", "tensor placement (tok/s)", "gain");
  for (int ph = 0; ph < 2; ++ph)
    std::printf("%-8s %18.1f (%5.2f GiB) %18.1f (%5.2f GiB) %6.2fx\n", phases[ph], tokens[ph] / layer.step[ph].v,
                to_GiB(layer.gpu_bytes[ph]), tokens[ph] / tensor.step[ph].v, to_GiB(tensor.gpu_bytes[ph]),
                layer.step[ph].v / tensor.step[ph].v);
  std::printf("(prefill: one %0.f-token ubatch per step; decode: batch %d; steps are sums of per-tensor times, no "
              "CPU/GPU/PCIe overlap)\n", s.prefill_tokens, req.batch);
  std::printf("\nllama.cpp, layer split: -ngl %d\n", layer.ngl);
  const Placement& shown = req.mode == "tensor" ? tensor : layer;
  for (int ph = 0; ph < 2; ++ph) {
    if (req.mode == "tensor")
      std::printf("llama.cpp, tensor placement for %s: %s\n", phases[ph], llama_cpp_flags(items, tensor, ph).c_str());
    // The placement table, grouped by tensor kind: how many layers' tensors sit in each home.
    std::map<std::string, std::map<std::string, int>> table;
    for (size_t i = 0; i < items.size(); ++i) {
      const bool block = items[i].name.rfind("blk.", 0) == 0;
      const std::string stem = block ? items[i].name.substr(items[i].name.find('.', 4) + 1) : items[i].name;
      ++table[stem][home_name(shown.home[ph][i])];
    }
    std::printf("%s placement (%s): tensor kind -> layers per home\n", phases[ph], req.mode.c_str());
    for (const auto& [stem, homes] : table) {
      std::printf("  %-20s", stem.c_str());
      for (const auto& [h, n] : homes) std::printf("  %s %d", h.c_str(), n);
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace shardplan::cli
