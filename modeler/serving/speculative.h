// Speculative decoding: a draft proposes k tokens per sequence, the target verifies them in one step of k + 1
// positions per sequence and keeps the longest accepted prefix plus one token of its own (the bonus token).
//
// Cost of one step: the target's step with k + 1 tokens per decoding sequence (GEMMs of (k + 1) x batch rows,
// attention of k + 1 queries over each sequence's cache, the LM head at every position; StepLoad::
// decode_tokens_per_seq), plus k draft passes: the first over the tokens the previous step accepted (and the
// step's prompt tokens), then k - 1 passes of one token per sequence (SGLang's EAGLE worker: "1 token from draft
// prefill and (#spec steps - 1) tokens here", python/sglang/srt/speculative/eagle_worker.py draft_forward, read in
// the indexed snapshots, versions not pinned). The draft is
//   mtp:         one MTP module (DeepSeek-V3 tech report arXiv 2412.19437 sec. 2.2): eh_proj (2h -> h) over the
//                normed embedding and hidden state, one transformer block like the target's last, the shared LM
//                head; with k above the model's MTP modules the engines run the module again (vLLM and SGLang
//                NEXTN reuse it step by step);
//   eagle:       an EAGLE head (Li et al. 2024, arXiv 2401.15077): an fc (2h -> h) and one decoder layer of the
//                target's width with a dense MLP, sharing the target's LM head;
//   draft_model: a separate model's own decode step.
//
// Tokens per step per sequence, with a_i the rate at which draft position i is accepted given that positions < i
// were:  E = 1 + sum_{i=1..k} prod_{j<=i} a_j  (for one rate a at every position, E = (1 - a^(k+1)) / (1 - a):
// Leviathan et al. 2023, arXiv 2211.17192, eq. 1). TPOT = step time / E.
#pragma once

#include <optional>
#include <string>

#include "modeler/problems.h"
#include "modeler/serving/engine_memory.h"

namespace shardplan::serving {

std::optional<SpecMethod> parse_spec_method(const std::string& name);  // "mtp" (or "nextn"), "eagle", "draft"
std::string spec_method_name(SpecMethod m);

/// Problems of a speculative setting for this target (and draft model, for draft_model or an EAGLE head given
/// as a config): k < 1, no acceptance or both forms, rates outside [0, 1] or not one per position, a mean length
/// outside [1, k + 1], MTP on a model without MTP modules, a draft with another vocabulary or whose heads the
/// worker's tp does not divide. Each problem's code names the setting (spec_tokens, spec_accept, spec_method,
/// spec_draft). Empty: valid, or spec decoding off.
Problems check_spec(const SpecDecode& s, const ModelDesc& target, const ModelDesc* draft, const WorkerPlan& w);

/// E: the expected tokens one step emits per decoding sequence (1 when spec decoding is off).
double expected_tokens_per_step(const SpecDecode& s);

/// The draft of an mtp or eagle setting as a serving model: one block of the target's shape (mtp: like its last
/// layer, MoE for DeepSeek-V3; eagle: dense, or `head` where an EAGLE head's own config is given) plus the 2h -> h
/// fusion projection, the target's LM head, its engine's kernels and no host time of its own (the step's host
/// time is the target's).
ServingModel make_draft_head(const ServingModel& target, SpecMethod method, const ModelDesc* head = nullptr);
/// A draft model prepared for drafting: its engine traits without a host time of its own.
ServingModel make_draft_model(const ModelDesc& draft, const Precision& p, const EngineStep& engine);

/// The worker split the draft runs under: the target's tensor parallelism, one stage, expert split kept for an
/// MoE draft, none for a dense one.
WorkerPlan draft_worker(const ModelDesc& draft, const WorkerPlan& w);

/// One speculative step for load `l` (its decode sequences run k + 1 tokens each; E tokens per sequence enter
/// the first draft pass): the target's verification plus the k draft passes, part by part.
StepTime spec_step_time(const ServingModel& target, const ServingModel& draft, const System& sys,
                        const WorkerPlan& w, const StepLoad& l, const SpecDecode& s);

/// Bytes of the draft's weights on one GPU that the target's do not hold (mtp, eagle: the block and fusion
/// projection, not the shared embedding and LM head; draft_model: all of its weights).
Bytes draft_weight_bytes_per_gpu(const ServingModel& draft, const WorkerPlan& w, SpecMethod method);
/// The draft's KV cache per token on one GPU (its own layers' K/V: the MTP module and EAGLE head keep one layer).
Bytes draft_kv_bytes_per_token(const ServingModel& draft, const WorkerPlan& w, double seq_len);
/// The engine's memory with the draft's weights loaded beside the target's: the weights grow and the KV pool
/// shrinks by them (vLLM, SGLang: the pool is the fraction of capacity less the weights) or by the fraction of
/// them (TRT-LLM: the fraction of what the weights leave); llama.cpp sizes its cache by the context, so only the
/// total grows (engine_memory.h).
MemoryReport with_draft_weights(MemoryReport r, Bytes draft_weights, Engine e);

/// The engine's launch arguments for the setting (empty when off); `draft` names the draft model or EAGLE head
/// checkpoint ("<draft>" when empty). Linear drafts (top-k 1): the chain the model prices.
///   vllm:   --speculative-config JSON {method: mtp | eagle | draft_model, num_speculative_tokens: k, model}
///           (SpeculativeConfig, vllm/config/speculative.py, vllm-project/vllm@002e77c1);
///   sglang: --speculative-algorithm NEXTN | EAGLE | STANDALONE --speculative-num-steps k
///           --speculative-eagle-topk 1 --speculative-num-draft-tokens k + 1 [--speculative-draft-model-path]
///           (python/sglang/srt/server_args.py, sgl-project/sglang@001067ff);
///   trtllm: extra_llm_api_options speculative_config {decoding_type: MTP, num_nextn_predict_layers: k} |
///           {decoding_type: Eagle | Draft_Target, max_draft_len: k, speculative_model}
///           (MTPDecodingConfig, EagleDecodingConfig, DraftTargetDecodingConfig in tensorrt_llm/llmapi/llm_args.py,
///           indexed snapshots, versions not pinned);
///   llama.cpp: none ("": its draft flags were renamed across releases, not pinned here).
std::string spec_engine_args(Engine e, const SpecDecode& s, const std::string& draft);

}  // namespace shardplan::serving
