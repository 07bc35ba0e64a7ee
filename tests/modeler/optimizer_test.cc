#include "modeler/optimizer.h"

#include <doctest/doctest.h>

#include "modeler/layer_cost.h"
#include "modeler/time_model.h"
#include "test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

TEST_SUITE("optimizer") {
  TEST_CASE("state bytes per optimizer on a 1024 x 1024 hidden matrix") {
    const double n = 1024.0 * 1024.0;
    CHECK(state_bytes(Optimizer::adamw, 1024, 1024, true) == 8.0 * n);
    // bitsandbytes block-wise 8-bit: one byte per state and value, an fp32 absmax per 2048 values and state.
    CHECK(state_bytes(Optimizer::adamw8bit, 1024, 1024, true) == doctest::Approx((2.0 + 8.0 / 2048.0) * n));
    // Adafactor: a row and a column accumulator, fp32.
    CHECK(state_bytes(Optimizer::adafactor, 1024, 1024, true) == 4.0 * 2048.0);
    CHECK(state_bytes(Optimizer::sgd, 1024, 1024, true) == 0.0);
    CHECK(state_bytes(Optimizer::sgd_momentum, 1024, 1024, true) == 4.0 * n);
    CHECK(state_bytes(Optimizer::lion, 1024, 1024, true) == 4.0 * n);
    CHECK(state_bytes(Optimizer::muon, 1024, 1024, true) == 4.0 * n);
    // Muon steps the embedding (not a hidden matrix) with AdamW.
    CHECK(state_bytes(Optimizer::muon, 1024, 1024, false) == 8.0 * n);
  }

  TEST_CASE("vectors and small tensors") {
    CHECK(state_bytes(Optimizer::adafactor, 1024, 1, true) == 4.0 * 1024);    // unfactored second moment
    CHECK(state_bytes(Optimizer::muon, 1024, 1, true) == 8.0 * 1024);         // AdamW for vectors
    CHECK(state_bytes(Optimizer::adamw8bit, 64, 32, true) == 8.0 * 64 * 32);  // under 4096 elements: 32-bit
  }

  TEST_CASE("the mean over groups weights each by its parameters") {
    const std::vector<ParamGroup> groups = {{1024, 1024, 1, true}, {100, 1024, 1, false}};
    const double hidden = 1024.0 * 1024.0, embed = 100.0 * 1024.0;
    CHECK(state_bytes_per_param(Optimizer::muon, groups) ==
          doctest::Approx((4.0 * hidden + 8.0 * embed) / (hidden + embed)));
    CHECK(state_bytes_per_param(Optimizer::adamw, {}) == 0.0);
  }

  TEST_CASE("step traffic: AdamW's is kAdamBytesPerParam; others add twice their states") {
    const std::vector<ParamGroup> g = {{1024, 1024, 4, true}};
    CHECK(step_bytes_per_param(Optimizer::adamw, g) == kAdamBytesPerParam);
    CHECK(step_bytes_per_param(Optimizer::sgd, g) == 18.0);
    CHECK(step_bytes_per_param(Optimizer::sgd_momentum, g) == 26.0);
    CHECK(step_bytes_per_param(Optimizer::adamw8bit, g) == doctest::Approx(18.0 + 2.0 * (2.0 + 8.0 / 2048.0)));
  }

  TEST_CASE("Newton-Schulz FLOPs: 4 m^2 n + 2 m^3 per iteration, m the smaller side") {
    CHECK(newton_schulz_flops(3, 5, 1) == 4.0 * 9 * 5 + 2.0 * 27);
    CHECK(newton_schulz_flops(5, 3, 1) == newton_schulz_flops(3, 5, 1));
    CHECK(newton_schulz_flops(3, 5) == 5.0 * (4.0 * 9 * 5 + 2.0 * 27));
  }

  TEST_CASE("names round-trip") {
    for (Optimizer o : {Optimizer::adamw, Optimizer::adamw8bit, Optimizer::adafactor, Optimizer::sgd,
                        Optimizer::sgd_momentum, Optimizer::muon, Optimizer::lion}) {
      CAPTURE(to_string(o));
      REQUIRE(parse_optimizer(to_string(o)).has_value());
      CHECK(*parse_optimizer(to_string(o)) == o);
    }
    CHECK_FALSE(parse_optimizer("adam").has_value());
    CHECK(optimizer_names() == "adamw, adamw8bit, adafactor, sgd, sgd-momentum, muon, lion");
  }

  TEST_CASE("optimizer bytes per parameter keep the framework's fp32 master weights") {
    Setup s(llama2_7b(), plan_of(1, 1, 8, 1, 1, 8, 1024));
    CHECK(optimizer_bytes_per_param(s.ctx()) == 12.0);  // 4 master + 8 AdamW
    s.plan.finetune.optimizer = Optimizer::sgd;
    CHECK(optimizer_bytes_per_param(s.ctx()) == 4.0);
    s.plan.finetune.optimizer = Optimizer::lion;
    CHECK(optimizer_bytes_per_param(s.ctx()) == 8.0);
    s.plan.finetune.optimizer = Optimizer::adafactor;  // factored: almost nothing beyond the master weights
    CHECK(optimizer_bytes_per_param(s.ctx()) == doctest::Approx(4.0).epsilon(0.01));
  }

  TEST_CASE("the step time: AdamW's memory traffic; Muon adds its Newton-Schulz GEMMs") {
    Setup s(llama2_7b(), plan_of(1, 1, 8, 1, 1, 8, 1024));
    const Sharding sh = s.sharding();
    const double owned = 1e9;
    const Seconds adam = optimizer_step_time(s.ctx(), sh, owned);
    CHECK(adam.v == doctest::Approx(owned * kAdamBytesPerParam / kHbm));
    s.plan.finetune.optimizer = Optimizer::muon;
    const Seconds muon = optimizer_step_time(s.ctx(), sh, owned);
    // One layer's matrices orthogonalised 32 times (all layers, no ZeRO: every rank does all of them) at 100 TFLOP/s.
    double ns = 0;
    const double h = 4096, f = 11008;
    ns += 4 * newton_schulz_flops(h, h) + 3 * newton_schulz_flops(h, f);
    const double mem = owned * 26.0 / kHbm;  // 18 + momentum read and written (embedding's AdamW share aside)
    CHECK(muon.v > mem + 0.9 * 32 * ns / kPeak);
    CHECK(muon.v > adam.v);
  }

  TEST_CASE("evaluate: SGD holds a third of AdamW's optimizer memory") {
    Plan p = plan_of(1, 1, 8, 1, 1, 8, 1024);
    const Estimate adam = evaluate(llama2_7b(), synthetic_system(8), p, synthetic_framework());
    p.finetune.optimizer = Optimizer::sgd;
    const Estimate sgd = evaluate(llama2_7b(), synthetic_system(8), p, synthetic_framework());
    CHECK(sgd.memory.optimizer.v == doctest::Approx(adam.memory.optimizer.v * 4.0 / 12.0));
    CHECK(sgd.time.optimizer < adam.time.optimizer);
  }

  TEST_CASE("optimizer offload steps AdamW only") {
    Plan p = plan_of(1, 1, 8, 1, 1, 8, 1024);
    p.zero = 1;
    p.optimizer_offload = 1.0;
    p.finetune.optimizer = Optimizer::lion;
    const Problems ps = validate_plan(llama2_7b(), synthetic_system(8), p, synthetic_framework());
    CHECK(codes(ps).find("offload_optimizer") != std::string::npos);
  }
}
