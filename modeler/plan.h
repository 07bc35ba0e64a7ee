// Plan: how the job is parallelised and batched. Independent of model and hardware files.
#pragma once

#include <string>

#include "modeler/system.h"

namespace shardplan {

enum class Recompute { none, selective, full };
/// Context-parallel attention: Megatron's ring with K/V passing (overlapped with attention compute), or
/// all-gathering K/V once per layer (Llama 3 paper, Section 3.3.2).
enum class CpKind { ring, allgather };

struct Plan {
  int tp = 1;    // tensor parallel
  int pp = 1;    // pipeline stages
  int vpp = 1;   // virtual stages (model chunks) per pipeline rank; >1 selects the interleaved 1F1B schedule
  int dp = 1;    // data parallel (replicas, or shards under ZeRO/FSDP)
  int cp = 1;    // context parallel
  int ep = 1;    // expert parallel (folded with dp x cp, Megatron-Core style)
  int etp = 1;   // expert tensor parallel
  int zero = 0;  // 0 none, 1 optimizer states, 2 + gradients, 3 + parameters (FSDP FULL_SHARD)
  bool sequence_parallel = false;  // Megatron SP: norms/dropout sharded over tp, AG/RS instead of all-reduce
  bool tp_comm_overlap = false;    // TP collectives overlapped with GEMMs (Megatron/TE userbuffers)
  CpKind cp_kind = CpKind::ring;
  int micro_batch = 1;   // sequences per micro-batch per data-parallel rank
  int global_batch = 1;  // sequences per optimizer step
  int seq_len = 2048;
  Recompute recompute = Recompute::none;
  Dtype precision = Dtype::bf16;  // GEMM precision; fp8 keeps bf16 master weights and fp32 optimizer states

  int gpus() const { return tp * pp * cp * dp; }
  /// Micro-batches per step per pipeline: global / (micro x dp) (gradient accumulation steps).
  int num_microbatches() const { return global_batch / (micro_batch * dp); }
};

const char* to_string(Recompute r);
const char* to_string(CpKind k);
const char* to_string(Dtype d);

}  // namespace shardplan
