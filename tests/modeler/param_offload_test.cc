#include "modeler/param_offload.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "modeler/evaluate.h"
#include "modeler/stage_params.h"
#include "modeler/time_model.h"
#include "test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {
System host_system(int gpus = 8) {
  System s = synthetic_system(gpus);
  s.gpu.host_link_bw = BytesPerSec(50e9);
  s.host_memory_bw_per_gpu = BytesPerSec(100e9);
  s.host_memory_per_gpu = GiB(1024);
  s.nvme_per_gpu = GiB(4096);
  s.nvme_read_bw_per_gpu = BytesPerSec(7e9);
  s.nvme_write_bw_per_gpu = BytesPerSec(4e9);
  return s;
}
Framework deepspeed() {
  Framework fw = synthetic_framework();
  fw.optimizer_offload = OptimizerOffloadKind::zero_offload;
  fw.param_offload = ParamOffloadKind::zero_infinity;
  fw.offers_nvme_offload = true;
  return fw;
}
Framework fsdp() {
  Framework fw = *find_framework("torchtitan");
  return fw;
}
Plan z3(int dp, bool params, double opt) {
  Plan p = plan_of(1, 1, dp, 1, 1, dp, 1024);
  p.zero = 3;
  p.param_offload = params;
  p.optimizer_offload = opt;
  p.recompute = Recompute::full;
  return p;
}
bool has(const Problems& ps, const std::string& code) {
  return std::any_of(ps.begin(), ps.end(), [&](const Problem& p) { return p.code == code; });
}
double params_of(const ModelDesc& m, const Plan& p, int gpus) {
  Setup st(m, p, gpus);
  return busiest_stage_params(st.ctx(), st.sharding()).total();
}
}  // namespace

TEST_SUITE("param_offload") {
  TEST_CASE("ZeRO-Infinity parameter offload: 18 bytes per parameter on the host, none of the states on the GPU") {
    // DeepSpeed's estimate_zero3_model_states_mem_needs (runtime/zero/stage3.py) with cpu_offload and
    // cpu_offload_params: GPU = 4 x largest layer, host = params x 18 (x the 1.5 allowance it adds for buffers).
    const ModelDesc m = llama2_7b();
    const System s = host_system();
    const Estimate e = evaluate(m, s, z3(8, true, 1), deepspeed());
    REQUIRE(e.feasible());
    const double params = params_of(m, z3(8, true, 1), 8);
    CHECK(e.memory.weights.v == 0);
    CHECK(e.memory.gradients.v == 0);
    CHECK(e.memory.optimizer.v == 0);
    CHECK(e.offload.host.v * 8 == doctest::Approx(params * 18));
    CHECK(e.memory.buffers.v > 0);  // the gathered layers stay on the GPU
    // Each layer's partition crosses the host link before each gather: forward, backward (resharded) and the
    // recomputed forward.
    const double unit = (params - m.vocab * m.hidden * 2.0) / m.layers;  // llama2_7b: untied embedding and head
    CHECK(e.offload.layer_transfer.v == doctest::Approx(unit / 8 * 2.0 * 3 * m.layers).epsilon(0.01));
    // The updated 16-bit parameters stay on the host: no copy back after the CPU step.
    CHECK(e.offload.host_to_device.v == 0);
  }

  TEST_CASE("FSDP CPU offload: parameters, gradients and optimizer on the host, the optimizer steps on the CPU") {
    const ModelDesc m = llama2_7b();
    const System s = host_system();
    Plan p = z3(8, true, 0);
    const Estimate base = evaluate(m, s, z3(8, false, 0), fsdp()), e = evaluate(m, s, p, fsdp());
    REQUIRE(base.feasible());
    REQUIRE(e.feasible());
    CHECK(e.memory.weights.v == 0);
    CHECK(e.memory.gradients.v == 0);
    CHECK(e.memory.optimizer.v == 0);
    const double owned = base.memory.optimizer.v / 8;        // torchtitan: Adam m, v in fp32 (8 bytes)
    CHECK(e.offload.host.v == doctest::Approx(owned * 16));  // fp32 param + fp32 grad + m + v
    CHECK(e.time.optimizer.v == doctest::Approx(owned * kAdamBytesPerParam / 100e9));
    CHECK(e.time.step() > base.time.step());
  }

  TEST_CASE("NVMe: the optimizer states move to NVMe and are swapped around the CPU step") {
    const ModelDesc m = llama2_7b();
    const System s = host_system();
    Plan cpu = z3(8, false, 1), nvme = cpu;
    nvme.offload_device = OffloadDevice::nvme;
    const Estimate a = evaluate(m, s, cpu, deepspeed()), b = evaluate(m, s, nvme, deepspeed());
    REQUIRE(a.feasible());
    REQUIRE(b.feasible());
    const double states = b.offload.nvme.v;
    CHECK(states == doctest::Approx(a.offload.host.v * 12.0 / 16.0));  // 12 of the 16 bytes; the fp32 gradient stays
    CHECK(b.offload.host.v == doctest::Approx(a.offload.host.v - states));
    // pipeline_read / pipeline_write off by default: read, step and write one after the other.
    CHECK(b.time.optimizer.v - a.time.optimizer.v == doctest::Approx(states / 7e9 + states / 4e9));
    CHECK(b.offload.nvme_traffic.v == doctest::Approx(2 * states));
  }

  TEST_CASE("activation offload of N layers moves N layers' saved tensors to the host") {
    const ModelDesc m = llama2_7b();
    const System s = host_system();
    const Framework fw = synthetic_framework();  // Megatron-Core offers it
    Plan p = plan_of(1, 1, 8, 1, 1, 8, 2048);
    p.zero = 1;
    const Estimate base = evaluate(m, s, p, fw);
    p.activation_offload_layers = 8;
    const Estimate e = evaluate(m, s, p, fw);
    REQUIRE(base.feasible());
    REQUIRE(e.feasible());
    const double per_layer = base.memory.activations.v / m.layers;
    CHECK(e.memory.activations.v == doctest::Approx(base.memory.activations.v - 8 * per_layer));
    CHECK(e.offload.host.v == doctest::Approx(8 * per_layer));
    CHECK(e.offload.layer_transfer.v == doctest::Approx(2 * 8 * per_layer));
    // Each copy (2 x 8 of them, 86 ms in all over the 50 GB/s link) hides behind a layer's forward or backward: nothing
    // is exposed. Over a 1 GB/s link they no longer fit: the exposed part is the step's host-transfer time, less
    // than the copies' own time.
    CHECK(e.offload.layer_transfer.v / 50e9 == doctest::Approx(0.0863).epsilon(1e-3).scale(0));
    CHECK(e.time.host_transfer.v == 0);
    System slow = s;
    slow.gpu.host_link_bw = BytesPerSec(1e9);
    const Estimate x = evaluate(m, slow, p, fw);
    REQUIRE(x.feasible());
    CHECK(x.time.host_transfer.v == doctest::Approx(x.offload.layer_exposed.v).scale(0));
    CHECK(x.time.host_transfer.v > 0.5 * x.offload.layer_transfer.v / 1e9);
    CHECK(x.time.host_transfer.v < x.offload.layer_transfer.v / 1e9);
  }

  TEST_CASE("validation") {
    const ModelDesc m = tiny_model();
    const System s = host_system();
    CHECK(has(validate_plan(m, s, z3(8, true, 0), deepspeed()), "param_offload_needs_optimizer_offload"));
    Plan z1 = z3(8, true, 1);
    z1.zero = 1;
    CHECK(has(validate_plan(m, s, z1, deepspeed()), "param_offload_needs_zero"));
    CHECK(has(validate_plan(m, s, z3(8, true, 1), synthetic_framework()), "param_offload_unsupported"));
    Plan nvme = z3(8, false, 0);
    nvme.offload_device = OffloadDevice::nvme;
    CHECK(has(validate_plan(m, s, nvme, deepspeed()), "nvme_nothing_offloaded"));
    System no_nvme = s;
    no_nvme.nvme_per_gpu = Bytes(0);
    nvme.optimizer_offload = 1;
    CHECK(has(validate_plan(m, no_nvme, nvme, deepspeed()), "nvme_unknown"));
    CHECK(has(validate_plan(m, s, nvme, synthetic_framework()), "nvme_unsupported"));
    Plan act = plan_of(1, 2, 4);
    act.activation_offload_layers = 1;
    CHECK(has(validate_plan(m, s, act, synthetic_framework()), "activation_offload_needs_no_pp"));
    act = plan_of(1, 1, 8);
    act.activation_offload_layers = m.layers;
    CHECK(has(validate_plan(m, s, act, synthetic_framework()), "activation_offload_range"));
    act.activation_offload_layers = 1;
    act.recompute = Recompute::selective;
    CHECK(has(validate_plan(m, s, act, synthetic_framework()), "activation_offload_needs_no_recompute"));
    Framework no_act = synthetic_framework();
    no_act.offers_activation_offload = false;
    act.recompute = Recompute::none;
    CHECK(has(validate_plan(m, s, act, no_act), "activation_offload_unsupported"));
    // A unified-memory GPU (Apple silicon) has no host link: parameter and activation offload are refused.
    System unified = s;
    unified.gpu.unified_memory = true;
    unified.gpu.host_link_bw = BytesPerSec(0);
    CHECK_FALSE(has(validate_plan(m, s, act, synthetic_framework()), "offload_unified_memory"));
    CHECK(has(validate_plan(m, unified, act, synthetic_framework()), "offload_unified_memory"));
    CHECK(has(validate_plan(m, unified, z3(8, true, 1), deepspeed()), "offload_unified_memory"));
    CHECK_FALSE(has(validate_plan(m, unified, plan_of(1, 1, 8), synthetic_framework()), "offload_unified_memory"));
  }
}
