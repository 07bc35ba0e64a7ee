// Whole-process latency of `shardplan predict` (issue 2: <= 50 ms): spawns the CLI and waits for it, so the time
// includes process start, reading the model and hardware YAML, evaluation and printing.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

namespace {

void BM_PredictProcess(benchmark::State& state) {
  const std::string cmd = std::string(SHARDPLAN_BIN) +
                          " predict --model llama-3-70b --system dgx-h100 --gpus 64 --tp 8 --pp 2 --gbs 256"
                          " --seq 8192 --recompute selective > /dev/null";
  for (auto _ : state) {
    if (std::system(cmd.c_str()) != 0) {
      state.SkipWithError("shardplan predict failed");
      break;
    }
  }
}
BENCHMARK(BM_PredictProcess)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
