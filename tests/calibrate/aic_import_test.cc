#include "calibrate/aic_import.h"

#include <doctest/doctest.h>

#include "calibrate/measurements.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

const char* kGemm =
    "system,dtype,m,n,k,n_versions,frameworks,latency_us_median,latency_us_min,latency_us_max,latency_us_sustained,"
    "power_w\n"
    "h100_sxm,bf16,4096,4096,4096,7,st,200,190,210,,\n"
    "h100_sxm,nvfp4,4096,4096,4096,7,st,100,90,110,,\n"
    "h100_sxm,fp8_block,4096,4096,4096,7,st,150,140,160,,\n"
    "a100_sxm,bf16,4096,4096,4096,3,st,600,590,610,,\n";
const char* kAttn =
    "system,scope,dtype,kv_dtype,batch,seq_len,heads,kv_heads,head_dim,window_size,causal,n_versions,frameworks,"
    "latency_us_median,latency_us_min,latency_us_max,latency_us_sustained,power_w\n"
    "h100_sxm,kernel,bf16,bf16,2,4096,32,8,128,0,1,5,sv,1000,900,1100,,\n"
    "h100_sxm,trtllm_op,bf16,bf16,2,4096,32,8,128,0,1,5,t,1200,1100,1300,,\n";
const char* kNccl =
    "kind,system,collective,implementation,gpus,nodes,dtype,bytes,tokens,hidden,top_k,experts,distribution,sms,"
    "version,version_in_rows,n_samples,latency_us,latency_us_min,latency_us_max,notify_us,algbw_gbps,busbw_gbps\n"
    "nccl,h100_sxm,all_reduce,nccl-tests,8,1,fp16,1048576,,,,,,,2.27.3,2.27.3,1,30,30,30,,1,1\n"
    "nccl,h100_sxm,all_reduce,nccl-tests,8,1,fp16,1048576,,,,,,,2.28.9,2.28.9,1,40,40,40,,1,1\n"
    "nccl,h100_sxm,all_reduce,nccl-tests,8,1,fp16,1048576,,,,,,,2.29.2,2.29.2,1,20,20,20,,1,1\n"
    "nccl,h100_sxm,alltoall,nccl-tests,8,1,int8,1048576,,,,,,,2.27.3,2.27.3,1,30,30,30,,1,1\n"
    "custom_allreduce,h100_sxm,all_reduce,trtllm,8,1,bf16,1048576,,,,,,,1.0,1.0,1,10,10,10,,1,1\n";

AicTables tables() {
  AicTables t;
  t.gemm = kGemm;
  t.attention_prefill = kAttn;
  t.nccl = kNccl;
  t.gemm_file = "gemm.csv";
  t.attention_file = "attention_prefill.csv";
  t.nccl_file = "nccl.csv";
  return t;
}

}  // namespace

TEST_SUITE("aic_import") {

TEST_CASE("AIC rows of one GPU become the JSON lines calibrate fit reads, with the median latency") {
  const AicImport imp = import_aic(tables(), "h100_sxm", "flash3");
  CHECK(imp.gemm == 3);  // bf16, nvfp4 (as fp4) and fp8_block
  CHECK(imp.attention == 1);
  CHECK(imp.collectives == 1);
  std::string text;
  for (const auto& l : imp.lines) text += l + "\n";
  const RawFile raw = parse_jsonl(text, "aic.jsonl");
  REQUIRE(raw.rows.size() == 5);
  CHECK(raw.contexts.size() == 1);
  const Measurement& g = raw.rows[0];
  CHECK(g.bench == Bench::gemm);
  CHECK(g.dtype == Dtype::bf16);
  CHECK(g.time_s == doctest::Approx(200e-6).scale(0));
  CHECK(g.time_min_s == doctest::Approx(190e-6).scale(0));
  CHECK(g.flops == doctest::Approx(2.0 * 4096 * 4096 * 4096));
  CHECK(raw.rows[1].dtype == Dtype::fp4);
  CHECK(!raw.rows[1].block_scaled);
  CHECK(raw.rows[2].dtype == Dtype::fp8);  // fp8_block: fp8 at the fp8 peak, in a table of its own
  CHECK(raw.rows[2].block_scaled);
  CHECK(raw.rows[2].time_s == doctest::Approx(150e-6).scale(0));
  CHECK(!g.block_scaled);
  const Measurement& a = raw.rows[3];
  CHECK(a.bench == Bench::attention);
  CHECK(a.kernel == "flash3");
  CHECK(!a.backward);
  CHECK(a.flops == doctest::Approx(2.0 * 2 * 32 * 128 * 4096.0 * 4096.0));
  const Measurement& c = raw.rows[4];
  CHECK(c.bench == Bench::collective);
  CHECK(c.collective == Collective::all_reduce);
  CHECK(c.nranks == 8);
  CHECK(c.time_s == doctest::Approx(30e-6).scale(0));  // median of the three NCCL versions
  CHECK(c.time_min_s == doctest::Approx(20e-6).scale(0));
}

TEST_CASE("AIC names, bad rows and a GPU without rows") {
  CHECK(aic_system("h200-sxm-141gb") == std::optional<std::string>("h200_sxm"));
  CHECK(!aic_system("v100-sxm3-32gb"));
  AicTables t = tables();
  t.gemm += "h100_sxm,bf16,4096,4096,fast,7,st,200,190,210,,\n";
  CHECK_THROWS_WITH_AS(import_aic(t, "h100_sxm", "flash3"), "gemm.csv:6: column 5: expected a number, got 'fast'",
                       ConfigError);
  t = tables();
  t.gemm += "h100_sxm,bf16,1,2\n";
  CHECK_THROWS_WITH_AS(import_aic(t, "h100_sxm", "flash3"), "gemm.csv:6: expected 12 columns, got 4", ConfigError);
  CHECK_THROWS_WITH_AS(import_aic(tables(), "gb300", "flash3"),
                       "no measured rows of AIC system 'gb300' in gemm.csv, attention_prefill.csv or nccl.csv",
                       ConfigError);
}

}
