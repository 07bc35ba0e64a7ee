#include "modeler/zero3_working_set.h"

#include <doctest/doctest.h>

#include "modeler/memory_model.h"
#include "modeler/model_desc.h"
#include "test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {
Zero3Module mod(double numel, double grad_bytes = 0) { return {numel, 2.0 * numel, grad_bytes}; }
Setup deepspeed_setup(const ModelDesc& m, int dp, Recompute r) {
  Plan p = plan_of(1, 1, 1, dp, 1, dp, 2048);
  p.zero = 3;
  p.recompute = r;
  Setup s(m, p);
  s.framework = *find_framework("megatron-deepspeed");
  return s;
}
}  // namespace

TEST_SUITE("zero3_working_set") {
  TEST_CASE("recompute keeps the modules reused within the reuse distance until their backward") {
    const DeepSpeedZero3Config c;  // 5e7 prefetch, 1e9 reuse distance
    const std::vector<Zero3Module> three = {mod(4e8), mod(4e8), mod(4e8)};
    // Trace f1 f2 f3 b3 b2 b1. f1 is next used after f2 f3 b3 b2 (1.6e9 > 1e9): released; f2 after f3 b3 (8e8):
    // kept; f3 at once: kept. At f3 and b3 modules 2 and 3 are live and module 1 is prefetched whole.
    const Zero3Peak r = zero3_layer_peak(three, true, c);
    CHECK(r.gathered == doctest::Approx(2 * 8e8));
    CHECK(r.prefetch == doctest::Approx(2 * 4e8));
    DeepSpeedZero3Config far = c;
    far.max_reuse = 2e9;  // f1 within reach: the whole layer stays gathered
    const Zero3Peak all = zero3_layer_peak(three, true, far);
    CHECK(all.gathered == doctest::Approx(2 * 1.2e9));
    CHECK(all.prefetch == 0);
    // Without recompute each module is gathered alone for its backward, with its gradient, the next prefetched.
    const std::vector<Zero3Module> trained = {mod(1e8, 2e8), mod(3e8, 6e8), mod(2e7, 4e7)};
    const Zero3Peak alone = zero3_layer_peak(trained, false, c);
    CHECK(alone.gathered == doctest::Approx(6e8 + 6e8));  // module 2 and its whole bf16 gradient
    CHECK(alone.prefetch == doctest::Approx(2e8));        // module 1, next in the backward trace
  }

  TEST_CASE("the prefetch stops at the bucket, and never exceeds the live cap") {
    DeepSpeedZero3Config c;
    const std::vector<Zero3Module> small = {mod(1e7), mod(2e7), mod(3e7), mod(4e7)};
    // At b4 (no recompute) the next modules are 3, 2, 1: 3e7 then 5e7 reaches the 5e7 bucket.
    CHECK(zero3_layer_peak(small, false, c).prefetch == doctest::Approx(2 * 5e7));
    c.max_live = 4e7;  // live module 4 fills the cap: nothing is prefetched at that step
    const Zero3Peak capped = zero3_layer_peak(small, false, c);
    CHECK(capped.gathered + capped.prefetch <= 2 * (4e7 + 3e7) + 1);
  }

  TEST_CASE("Llama-3-8B, full training: the LM head and its gradient are DeepSpeed's 4 B x largest module") {
    // estimate_zero3_model_states_mem_needs (deepspeed/runtime/zero/stage3.py) reserves 4 x the largest module's
    // parameters: the 525M-parameter LM head, gathered in bf16 with its bf16 gradient at the start of backward.
    const ModelDesc m = llama3_8b();
    const Setup s = deepspeed_setup(m, 8, Recompute::full);
    const Zero3WorkingSet ws = deepspeed_zero3_working_set(s.ctx(), s.sharding());
    CHECK(ws.gathered.v == doctest::Approx(4.0 * 128256 * 4096));
    CHECK(ws.ipg_bucket.v == doctest::Approx(5e8 * 2));
    CHECK(ws.prefetch.v > 0);
    CHECK(ws.prefetch.v < 2 * (5e7 + 4096.0 * 14336 * 2));  // at most the bucket plus one fused fc1
    // The memory model's buffers under megatron-deepspeed are this working set.
    const MemoryBreakdown mem = memory_breakdown(s.ctx(), s.sharding(), s.schedule());
    CHECK(mem.buffers.v == doctest::Approx(ws.total().v));
  }

  TEST_CASE("Megatron's fused projections and Hugging Face's separate ones are different modules") {
    const ModelDesc m = llama3_8b();
    Setup s = deepspeed_setup(m, 8, Recompute::full);
    const std::vector<Zero3Module> fused = zero3_layer_modules(s.ctx(), s.sharding());
    REQUIRE(fused.size() == 4);
    CHECK(fused[0].numel == doctest::Approx(4096.0 * (4096 + 2 * 1024)));  // query_key_value
    CHECK(fused[2].numel == doctest::Approx(2 * 4096.0 * 14336));          // dense_h_to_4h: gate and up
    s.framework = *find_framework("hf-deepspeed");
    const std::vector<Zero3Module> separate = zero3_layer_modules(s.ctx(), s.sharding());
    CHECK(separate.size() == 7);
    double a = 0, b = 0;
    for (const Zero3Module& x : fused) a += x.numel;
    for (const Zero3Module& x : separate) b += x.numel;
    CHECK(a == doctest::Approx(b));
  }

  TEST_CASE("QLoRA: DeepSpeed counts the packed storage (4 codes per bf16 element) and gathers no gradient") {
    const ModelDesc m = llama3_8b();
    Setup s = deepspeed_setup(m, 2, Recompute::full);
    s.framework = *find_framework("hf-deepspeed");
    s.plan.finetune.peft = Peft::qlora;
    s.plan.finetune.lora_rank = 8;
    s.plan.finetune.lora_targets = kLoraQ | kLoraV;
    const std::vector<Zero3Module> mods = zero3_layer_modules(s.ctx(), s.sharding());
    CHECK(mods[0].numel == doctest::Approx(4096.0 * 4096 / 4));
    CHECK(mods[0].bytes == doctest::Approx(4096.0 * 4096 * 0.5));
    CHECK(mods[0].grad_bytes == 0);
    // The frozen 16-bit head is gathered without a gradient.
    const Zero3WorkingSet ws = deepspeed_zero3_working_set(s.ctx(), s.sharding());
    CHECK(ws.gathered.v == doctest::Approx(2.0 * 128256 * 4096));
  }
}
