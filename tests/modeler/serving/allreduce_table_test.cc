#include "modeler/serving/allreduce_table.h"

#include <doctest/doctest.h>

using namespace shardplan::serving;

TEST_CASE("TP all-reduce table: measured GPUs and group sizes, rising with bytes and with the group") {
  const shardplan::Curve* h200x8 = tp_allreduce_latency("h200-sxm-141gb", 8);
  const shardplan::Curve* h200x2 = tp_allreduce_latency("h200-sxm-141gb", 2);
  REQUIRE(h200x8 != nullptr);
  REQUIRE(h200x2 != nullptr);
  // shared/data/measured_kernels/nccl.csv, h200_sxm, 8 GPUs, under CUDA graphs: 4.6-6.6 us at 64 KiB (TRT-LLM
  // auto, vLLM and SGLang custom all-reduce; nccl-tests ~20 us), 317-370 us at 64 MiB (custom and NCCL alike).
  CHECK(h200x8->at(65536) > 4e-6);
  CHECK(h200x8->at(65536) < 8e-6);
  CHECK(h200x8->at(64.0 * 1024 * 1024) > 250e-6);
  CHECK(h200x8->at(64.0 * 1024 * 1024) < 400e-6);
  CHECK(h200x8->at(1 << 20) > h200x8->at(1 << 16));
  CHECK(h200x2->at(1 << 20) < h200x8->at(1 << 20));
  // GB200 was measured on 2 and 4 GPUs of a tray only; its 8-GPU group (two NVL72 trays) takes B200's 8-GPU
  // row, GB300's B300's; other GPUs and group sizes have no row.
  CHECK(tp_allreduce_latency("gb200", 4) != nullptr);
  CHECK(tp_allreduce_latency("gb200", 4) != tp_allreduce_latency("b200", 4));
  CHECK(tp_allreduce_latency("gb200", 8) == tp_allreduce_latency("b200", 8));
  CHECK(tp_allreduce_latency("gb300", 8) == tp_allreduce_latency("b300", 8));
  CHECK(tp_allreduce_latency("gb200", 16) == nullptr);
  CHECK(tp_allreduce_latency("h200-sxm-141gb", 16) == nullptr);
  CHECK(tp_allreduce_latency("rtx-4090", 2) == nullptr);
}
