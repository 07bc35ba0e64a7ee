#include "modeler/offload.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "modeler/evaluate.h"
#include "modeler/optimizer.h"
#include "modeler/stage_params.h"
#include "modeler/time_model.h"
#include "test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {
Plan dp8(double offload, int zero = 1) {
  Plan p;
  p.dp = 8;
  p.zero = zero;
  p.micro_batch = 1;
  p.global_batch = 8;
  p.seq_len = 1024;
  p.optimizer_offload = offload;
  return p;
}
System host_system() {
  System s = synthetic_system(8);
  s.gpu.host_link_bw = BytesPerSec(50e9);
  s.host_memory_bw_per_gpu = BytesPerSec(100e9);
  return s;
}
bool has(const Problems& ps, const std::string& code) {
  return std::any_of(ps.begin(), ps.end(), [&](const Problem& p) { return p.code == code; });
}
}  // namespace

TEST_SUITE("offload") {
TEST_CASE("Megatron's hybrid optimizer moves the offloaded fraction of optimizer states to the host") {
  const ModelDesc m = llama2_7b();
  const System s = host_system();
  const Framework fw = synthetic_framework();  // megatron_hybrid, 2 + 4 + 12 bytes
  const Estimate base = evaluate(m, s, dp8(0), fw);
  const Estimate full = evaluate(m, s, dp8(1), fw);
  const Estimate half = evaluate(m, s, dp8(0.5), fw);
  REQUIRE(full.feasible());
  CHECK(full.memory.optimizer.v == 0);
  CHECK(half.memory.optimizer.v == doctest::Approx(base.memory.optimizer.v / 2));
  CHECK(full.memory.gradients.v == base.memory.gradients.v);  // the main-grad buffer stays on the GPU
  CHECK(full.memory.weights.v == base.memory.weights.v);
  // Host: fp32 master + m + v (12 bytes) and an fp32 gradient copy (4) per owned parameter.
  const double owned = base.memory.optimizer.v / 12;
  CHECK(full.offload.host.v == doctest::Approx(owned * 16));
  CHECK(half.offload.host.v == doctest::Approx(owned * 8));
  CHECK(base.offload.host.v == 0);
  // Fragmentation follows what is allocated.
  CHECK(full.memory.fragmentation < base.memory.fragmentation);
}

TEST_CASE("offload time: CPU Adam over host DRAM, copies over the host link, pipelined under Megatron") {
  const ModelDesc m = llama2_7b();
  const System s = host_system();
  const Framework fw = synthetic_framework();
  const Estimate base = evaluate(m, s, dp8(0), fw);
  const Estimate full = evaluate(m, s, dp8(1), fw);
  const double owned = base.memory.optimizer.v / 12;
  CHECK(full.offload.cpu_step.v == doctest::Approx(owned * kAdamBytesPerParam / 100e9));
  CHECK(full.offload.device_to_host.v == doctest::Approx(owned * 4));  // fp32 main grads
  CHECK(full.offload.host_to_device.v == doctest::Approx(owned * 2));  // bf16 parameters
  CHECK(full.offload.transfer.v == doctest::Approx(owned * 4 / 50e9));
  // 34 B / 100 GB/s > 4 B / 50 GB/s: the CPU step is the longest stage of the pipeline.
  CHECK(full.offload.exposed.v == doctest::Approx(full.offload.cpu_step.v));
  CHECK(full.time.optimizer.v == doctest::Approx(full.offload.exposed.v));  // no GPU optimizer left
  CHECK(full.time.step().v == doctest::Approx(base.time.step().v - base.time.optimizer.v + full.offload.exposed.v));
  CHECK(full.offload.link_gbps == doctest::Approx(owned * 6 / full.time.step().v / 1e9));
}

TEST_CASE("ZeRO-Offload at stage 2 moves the gradients too, and hides their copy behind backward") {
  const ModelDesc m = llama2_7b();
  const System s = host_system();
  Framework fw = synthetic_framework();
  fw.optimizer_offload = OptimizerOffloadKind::zero_offload;
  fw.zero_stages = {0, 1, 2, 3};
  const Estimate base = evaluate(m, s, dp8(0, 2), fw);
  const Estimate full = evaluate(m, s, dp8(1, 2), fw);
  REQUIRE(full.feasible());
  CHECK(full.memory.gradients.v == 0);
  CHECK(full.memory.optimizer.v == 0);
  const double owned = base.memory.optimizer.v / 12;
  // cpu step + parameter copy back; the gradient copy is shorter than a micro-batch's backward here.
  REQUIRE(full.offload.device_to_host.v / 50e9 < full.time.shape.backward.v);
  CHECK(full.offload.exposed.v == doctest::Approx(owned * kAdamBytesPerParam / 100e9 + owned * 2 / 50e9));
}

TEST_CASE("offload problems: unsupported framework, no ZeRO, unknown host bandwidth, host memory") {
  const ModelDesc m = llama2_7b();
  System s = host_system();
  Framework none = synthetic_framework();
  none.optimizer_offload = OptimizerOffloadKind::none;
  CHECK(has(evaluate(m, s, dp8(1), none).problems, "offload_unsupported"));
  CHECK(has(evaluate(m, s, dp8(1, 0), synthetic_framework()).problems, "offload_needs_zero"));
  CHECK(has(evaluate(m, s, dp8(1.5), synthetic_framework()).problems, "offload_range"));
  System unknown = s;
  unknown.host_memory_bw_per_gpu = BytesPerSec(0);
  const Estimate u = evaluate(m, unknown, dp8(1), synthetic_framework());
  REQUIRE(has(u.problems, "offload_host_unknown"));
  CHECK(u.problems.front().message ==
        "optimizer offload needs the host's memory bandwidth: the profile of synthetic has no "
        "host_memory_bw_gbps_per_gpu");
  System small = s;
  small.host_memory_per_gpu = GiB(1);
  const Estimate h = evaluate(m, small, dp8(1), synthetic_framework());
  REQUIRE(has(h.problems, "oom_host"));
  CHECK(h.problems.back().message.rfind("out of host memory: optimizer offload needs", 0) == 0);
  const Problems plain = evaluate(m, s, dp8(0, 0), none).problems;  // nothing offloaded: no offload problems
  CHECK_FALSE(has(plain, "offload_unsupported"));
  CHECK_FALSE(has(plain, "offload_needs_zero"));
  // A unified-memory GPU (Apple silicon) already works in the host's DRAM: optimizer offload is refused.
  System unified = s;
  unified.gpu.unified_memory = true;
  CHECK_FALSE(has(evaluate(m, s, dp8(1), synthetic_framework()).problems, "offload_unified_memory"));
  CHECK(has(evaluate(m, unified, dp8(1), synthetic_framework()).problems, "offload_unified_memory"));
  CHECK_FALSE(has(evaluate(m, unified, dp8(0, 0), none).problems, "offload_unified_memory"));
}

TEST_CASE("the host holds the plan's optimizer states, not AdamW's") {
  // validate_finetune refuses offload for other optimizers; apply_offload must still put on the host exactly the
  // states memory_model.cc put on the GPU (fp32 master + the optimizer's own states), plus the fp32 gradient.
  const ModelDesc m = llama2_7b();
  const System s = host_system();
  const Framework fw = synthetic_framework();
  Plan p = dp8(1);
  p.finetune.optimizer = Optimizer::sgd_momentum;  // 4 bytes of momentum instead of Adam's 8
  const Context ctx{m, s, p, fw};
  const Sharding sh = unsharded(ctx);
  const double owned = owned_state_params(ctx, sh, false);
  MemoryBreakdown mem;
  mem.optimizer = Bytes(owned * optimizer_bytes_per_param(ctx));
  TimeBreakdown t;
  OffloadEstimate out;
  apply_offload(ctx, sh, &mem, &t, &out);
  CHECK(optimizer_bytes_per_param(ctx) == doctest::Approx(fw.state.optimizer - kAdamStateBytes + 4.0));
  CHECK(out.host.v == doctest::Approx(owned * (optimizer_bytes_per_param(ctx) + 4.0)));
  CHECK(out.host.v < owned * (fw.state.optimizer + 4.0));  // what the AdamW bytes would have put there
  CHECK(mem.optimizer.v == 0);
}
}
