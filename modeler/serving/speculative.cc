#include "modeler/serving/speculative.h"

#include <algorithm>

namespace shardplan::serving {

std::optional<SpecMethod> parse_spec_method(const std::string& name) {
  if (name == "none") return SpecMethod::none;
  if (name == "mtp" || name == "nextn") return SpecMethod::mtp;  // SGLang calls DeepSeek's MTP "NEXTN"
  if (name == "eagle") return SpecMethod::eagle;
  if (name == "draft" || name == "draft_model") return SpecMethod::draft_model;
  return std::nullopt;
}

std::string spec_method_name(SpecMethod m) {
  switch (m) {
    case SpecMethod::none: return "none";
    case SpecMethod::mtp: return "mtp";
    case SpecMethod::eagle: return "eagle";
    case SpecMethod::draft_model: return "draft";
  }
  return "none";
}

Problems check_spec(const SpecDecode& s, const ModelDesc& target, const ModelDesc* draft, const WorkerPlan& w) {
  Problems p;
  if (!s.enabled()) return p;
  auto bad = [&](const char* code, std::string msg) { p.push_back({code, std::move(msg)}); };
  if (s.tokens < 1) bad("spec_tokens", "draft tokens per step must be at least 1, got " + num(s.tokens));
  const bool rates = !s.accept.empty(), length = s.accept_length > 0;
  if (!rates && !length)
    bad("spec_accept", "speculative decoding needs its acceptance: a rate per draft position or one rate for all, "
                       "or the mean accepted length (there is no default: it depends on the model, the draft and "
                       "the data)");
  if (rates && length) bad("spec_accept", "give the acceptance rates or the mean accepted length, not both");
  for (double a : s.accept)
    if (!(a >= 0 && a <= 1)) bad("spec_accept", "an acceptance rate must lie in [0, 1], got " + num(a));
  if (rates && s.accept.size() != 1 && static_cast<int>(s.accept.size()) != s.tokens)
    bad("spec_accept", "one acceptance rate, or one per draft position (" + num(s.tokens) + "), got " +
                           num(static_cast<double>(s.accept.size())));
  if (length && s.tokens >= 1 && !(s.accept_length >= 1 && s.accept_length <= s.tokens + 1.0))
    bad("spec_accept", "the mean accepted length counts the bonus token: it lies in [1, " + num(s.tokens + 1.0) +
                           "], got " + num(s.accept_length));
  if (s.method == SpecMethod::mtp && target.mtp_layers < 1)
    bad("spec_method", "mtp: " + (target.name.empty() ? std::string("the model") : target.name) +
                           " has no multi-token-prediction modules (model key mtp_layers)");
  if (s.method == SpecMethod::draft_model && !draft) bad("spec_draft", "draft: a draft model is needed");
  if (draft) {
    if (draft->vocab != target.vocab)
      bad("spec_draft", "the draft's vocabulary (" + num(draft->vocab) + ") differs from the target's (" +
                            num(target.vocab) + "): its tokens cannot be verified");
    if (draft->heads % w.tp != 0)
      bad("spec_draft", "tp (" + num(w.tp) + ") does not divide the draft's heads (" + num(draft->heads) + ")");
  }
  return p;
}

double expected_tokens_per_step(const SpecDecode& s) {
  if (!s.enabled()) return 1;
  if (s.accept_length > 0) return s.accept_length;
  SHARDPLAN_CHECK(!s.accept.empty());
  // E = 1 + sum_i prod_{j<=i} a_j: position i counts only when every position before it was accepted.
  double e = 1, reach = 1;
  for (int i = 0; i < s.tokens; ++i) {
    reach *= s.accept.size() == 1 ? s.accept.front() : s.accept[i];
    e += reach;
  }
  return e;
}

namespace {

// The fusion projection of an MTP module (eh_proj) or EAGLE head (fc): [norm(embedding); hidden] (2h) -> h.
// Replicated, unquantised: vLLM builds it as a plain nn.Linear(2 * hidden, hidden) in
// vllm/model_executor/models/deepseek_mtp.py and SGLang as nn.Linear(2 * hidden, hidden) in
// python/sglang/srt/models/deepseek_nextn.py (indexed snapshots, versions not pinned); EAGLE-1's head has the
// same fc (arXiv 2401.15077 sec. 4.1). EAGLE-3's 3h input is not modelled.
LinearSpec fusion_projection(const ModelDesc& m) {
  LinearSpec s;
  s.n = m.hidden;
  s.k = 2.0 * m.hidden;
  s.bytes = Bytes(s.n * s.k * 2.0);
  s.split = TpSplit::none;
  s.format = WeightFormat::bf16;
  return s;
}

void add(StepTime* a, const StepTime& b, double times) {
  a->total += b.total * times;
  a->linear += b.linear * times;
  a->attention += b.attention * times;
  a->moe += b.moe * times;
  a->comm += b.comm * times;
  a->other += b.other * times;
  a->host += b.host * times;
}

}  // namespace

ServingModel make_draft_head(const ServingModel& target, SpecMethod method, const ModelDesc* head) {
  SHARDPLAN_CHECK(method == SpecMethod::mtp || method == SpecMethod::eagle);
  const ModelDesc& t = target.model;
  ModelDesc d = head ? *head : t;
  if (!head) {
    d.name = t.name + (method == SpecMethod::mtp ? " MTP module" : " EAGLE head");
    d.layers = 1;
    d.mtp_layers = 0;
    d.sliding_window = 0;  // DeepSeek-V3's MTP block and EAGLE's layer attend to the whole sequence
    d.full_attention_every = 0;
    if (method == SpecMethod::mtp && d.moe && is_moe_layer(t, t.layers - 1)) {
      d.moe->dense_layers = 0;  // the MTP block is like the target's last block (MoE in DeepSeek-V3)
    } else {
      d.moe.reset();
      if (d.ffn_hidden <= 0)
        throw ConfigError(t.name + " has no dense MLP width (ffn_hidden) for an EAGLE head of its shape; give the "
                                   "head's own config");
    }
  }
  ServingModel sm = make_serving_model(d, target.precision);
  SHARDPLAN_CHECK(!sm.classes.empty());
  sm.classes.front().linears.push_back(fusion_projection(t));
  sm.lm_head = target.lm_head;  // shared with the target
  sm.engine = target.engine;
  sm.engine.host_per_step = Seconds(0);
  return sm;
}

ServingModel make_draft_model(const ModelDesc& draft, const Precision& p, const EngineStep& engine) {
  ServingModel sm = make_serving_model(draft, p);
  sm.engine = engine;
  sm.engine.host_per_step = Seconds(0);
  return sm;
}

WorkerPlan draft_worker(const ModelDesc& draft, const WorkerPlan& w) {
  // vLLM: draft_tensor_parallel_size "can only be 1 or the same as the target model's tensor parallel size"
  // (vllm/config/speculative.py, vllm-project/vllm@002e77c1); the target's is taken here.
  WorkerPlan d = w;
  d.pp = 1;
  if (!draft.moe) {
    d.moe_ep = 1;
    d.moe_tp = w.tp * w.attention_dp;
  }
  return d;
}

StepTime spec_step_time(const ServingModel& target, const ServingModel& draft, const System& sys,
                        const WorkerPlan& w, const StepLoad& l, const SpecDecode& s) {
  StepLoad verify = l;
  verify.decode_tokens_per_seq = s.tokens + 1.0;
  StepTime st = step_time(target, sys, w, verify);
  const WorkerPlan dw = draft_worker(draft.model, w);
  // First draft pass: the tokens the last verification accepted (E per sequence), and the step's prompt tokens
  // (the draft's own prefill); then k - 1 passes of one token per sequence.
  StepLoad first = l;
  first.decode_tokens_per_seq = expected_tokens_per_step(s);
  add(&st, step_time(draft, sys, dw, first), 1);
  if (l.decode_seqs > 0 && s.tokens > 1) {
    StepLoad next;
    next.decode_seqs = l.decode_seqs;
    next.decode_ctx = l.decode_ctx;
    add(&st, step_time(draft, sys, dw, next), s.tokens - 1.0);
  }
  return st;
}

Bytes draft_weight_bytes_per_gpu(const ServingModel& draft, const WorkerPlan& w, SpecMethod method) {
  const WorkerPlan dw = draft_worker(draft.model, w);
  const Bytes all = weight_bytes_per_gpu(draft, dw);
  if (method == SpecMethod::draft_model) return all;
  // The head shares the target's embedding and LM head: only its block and the fusion projection are new.
  const double head = draft.model.tied_embeddings ? 0 : draft.lm_head.bytes.v;
  return all - Bytes((draft.embedding_bytes.v + head) / dw.tp) + fusion_projection(draft.model).bytes;
}

Bytes draft_kv_bytes_per_token(const ServingModel& draft, const WorkerPlan& w, double seq_len) {
  return kv_bytes_per_token(draft, draft_worker(draft.model, w), seq_len);
}

MemoryReport with_draft_weights(MemoryReport r, Bytes draft_weights, Engine e) {
  r.weights += draft_weights;
  switch (e) {
    case Engine::llamacpp: break;
    case Engine::trtllm: r.kv_cache -= draft_weights * r.fraction; break;
    case Engine::sglang:
    case Engine::vllm:
    case Engine::other: r.kv_cache -= draft_weights; break;
  }
  settle_memory(&r);
  return r;
}

std::string spec_engine_args(Engine e, const SpecDecode& s, const std::string& draft) {
  if (!s.enabled()) return "";
  const std::string k = std::to_string(s.tokens);
  const std::string path = draft.empty() ? "<draft>" : draft;
  const bool own = s.method == SpecMethod::mtp;  // the target's own modules: no draft path
  switch (e) {
    case Engine::vllm: {
      const char* method = own ? "mtp" : s.method == SpecMethod::eagle ? "eagle" : "draft_model";
      std::string j = std::string("{\"method\":\"") + method + "\",\"num_speculative_tokens\":" + k;
      if (!own) j += ",\"model\":\"" + path + "\"";
      return "--speculative-config '" + j + "}'";
    }
    case Engine::sglang: {
      const char* algo = own ? "NEXTN" : s.method == SpecMethod::eagle ? "EAGLE" : "STANDALONE";
      std::string a = std::string("--speculative-algorithm ") + algo + " --speculative-num-steps " + k +
                      " --speculative-eagle-topk 1 --speculative-num-draft-tokens " + std::to_string(s.tokens + 1);
      if (!own) a += " --speculative-draft-model-path " + path;
      return a;
    }
    case Engine::trtllm:
      if (own) return "(extra_llm_api_options: speculative_config: {decoding_type: MTP, num_nextn_predict_layers: " + k + "})";
      return std::string("(extra_llm_api_options: speculative_config: {decoding_type: ") +
             (s.method == SpecMethod::eagle ? "Eagle" : "Draft_Target") + ", max_draft_len: " + k +
             ", speculative_model: " + path + "})";
    case Engine::llamacpp:  // its draft flags were renamed across releases (--draft-max, --spec-draft-n-max)
    case Engine::other: return "";
  }
  return "";
}

}  // namespace shardplan::serving
