// One FlexGen block-schedule evaluation (modeler/serving/flexgen.h): OPT-175B (models/opt-175b.yaml), 512/32, the
// paper's fp16 policy (32x8, weights 0/50/50, cache on disk, CPU attention) on its GCP T4 machine. It walks 194
// sub-layers x 8 GPU batches x 32 tokens.
#include <benchmark/benchmark.h>

#include "modeler/io/flexgen_machine_io.h"
#include "modeler/io/model_io.h"
#include "modeler/serving/flexgen.h"

using namespace shardplan;

namespace {

void BM_FlexgenOpt175b(benchmark::State& state) {
  const ModelDesc m = io::load_model("opt-175b");
  serving::FlexgenPolicy p;
  p.gpu_batch_size = 32;
  p.num_gpu_batches = 8;
  p.w_cpu_percent = 50;
  p.act_cpu_percent = 100;
  p.cpu_cache_compute = true;
  p.pin_weight = false;
  const serving::FlexgenMachine hw = io::load_flexgen_machine("gcp-n1-highmem-32-t4").machine;
  for (auto _ : state) benchmark::DoNotOptimize(serving::flexgen_predict(m, p, hw, {512, 32}));
}
BENCHMARK(BM_FlexgenOpt175b)->Unit(benchmark::kMicrosecond);

}  // namespace
