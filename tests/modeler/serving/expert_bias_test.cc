#include "modeler/serving/expert_bias.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "modeler/problems.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
/// A gpt-oss-like MoE (hidden 4096 from the Llama-3-8B fixture, 32 experts, top 4) with expert biases, in bf16 on
/// the round system beside a host with round rates. `s` points into the object, so it is built in place.
struct BiasCase {
  static ModelDesc model(bool bias) {
    ModelDesc m = test::llama3_8b();
    m.moe = MoeDesc{32, 4, 2048, 0, 0, 0, bias, false};
    return m;
  }
  System sys = test::round_system();
  ServingModel sm = make_serving_model(model(true), Precision{});
  OffloadSetup s = [this] {
    OffloadSetup o;
    o.model = &sm;
    o.gpu = &sys.gpu;
    o.host.memory_bw = GBps(50);
    o.host.cpu_flops = TFlops(1);
    o.host.pcie_bw = GBps(25);
    o.prefill_tokens = 1000;
    o.op_offload_min_batch = kLlamaCppOpOffloadMinBatch;
    return o;
  }();
  BiasCase() = default;
  BiasCase(const BiasCase&) = delete;
  BiasCase& operator=(const BiasCase&) = delete;
};
}  // namespace

TEST_CASE_FIXTURE(BiasCase, "the round trip: f32 expert outputs to the host and back, read and written by the CPU") {
  // 4 B x 4096 x 4 experts x 1000 tokens = 65.536 MB; twice over 25 GB/s and twice through 50 GB/s of DRAM.
  const double out = 4.0 * 4096 * 4 * 1000;
  CHECK(host_expert_bias_roundtrip_s(s) == doctest::Approx(2 * out / 25e9 + 2 * out / 50e9));
  s.prefill_tokens = 2000;  // linear in the step's tokens
  CHECK(host_expert_bias_roundtrip_s(s) == doctest::Approx(2 * (2 * out / 25e9 + 2 * out / 50e9)));
  const ServingModel plain = make_serving_model(model(false), Precision{});
  s.model = &plain;
  CHECK(host_expert_bias_roundtrip_s(s) == 0);  // no expert biases: nothing to add on the host
}

TEST_CASE("ik_llama.cpp's --n-cpu-moe moves the biases until PR #841") {
  CHECK(ik_n_cpu_moe_moves_biases("2025-10-13"));
  CHECK(ik_n_cpu_moe_moves_biases("2025-10-19"));  // the opening day: the older pattern
  CHECK_FALSE(ik_n_cpu_moe_moves_biases("2025-10-20"));
  CHECK_FALSE(ik_n_cpu_moe_moves_biases(""));  // unknown: the current pattern
}

TEST_CASE("host bias blocks from -ot patterns and --n-cpu-moe") {
  const auto exps = host_bias_blocks(4, 0, false, {"exps"});  // -ot exps=CPU matches ffn_down_exps.bias
  CHECK(std::count(exps.begin(), exps.end(), true) == 4);
  const auto weights = host_bias_blocks(4, 0, false, {"ffn_(up|gate|down)_exps\\.weight"});
  CHECK(std::count(weights.begin(), weights.end(), true) == 0);  // only the weights in host memory
  const auto moe_old = host_bias_blocks(4, 2, true, {});
  CHECK(moe_old == std::vector<bool>{true, true, false, false});
  const auto moe_new = host_bias_blocks(4, 2, false, {});
  CHECK(std::count(moe_new.begin(), moe_new.end(), true) == 0);
  CHECK_THROWS_AS(host_bias_blocks(4, 0, false, {"blk.(["}), ConfigError);
}

TEST_CASE_FIXTURE(BiasCase, "the prefill step pays the round trip per block whose down experts stream; decode never") {
  const auto items = offload_items(s);
  const int layers = sm.model.layers;
  Placement p = flags_placement(items, s, layers + 1, 3, {});  // --n-cpu-moe 3
  const double prefill = p.step[0].v, decode = p.step[1].v;
  CHECK(add_host_bias_prefill(items, s, host_bias_blocks(layers, 3, true, {}), &p) == 3);
  CHECK(p.step[0].v == doctest::Approx(prefill + 3 * host_expert_bias_roundtrip_s(s)));
  CHECK(p.step[1].v == decode);
  // Biases on the GPU (the newer --n-cpu-moe pattern): nothing added.
  Placement q = flags_placement(items, s, layers + 1, 3, {});
  CHECK(add_host_bias_prefill(items, s, host_bias_blocks(layers, 3, false, {}), &q) == 0);
  CHECK(q.step[0].v == prefill);
  // A step below the op-offload batch computes the experts on the CPU, which adds the bias there: no copy.
  s.prefill_tokens = 16;
  const auto small = offload_items(s);
  Placement r = flags_placement(small, s, layers + 1, 3, {});
  CHECK(add_host_bias_prefill(small, s, host_bias_blocks(layers, 3, true, {}), &r) == 0);
}
