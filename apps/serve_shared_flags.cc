#include "apps/serve_shared_flags.h"

#include "apps/text.h"
#include "modeler/problems.h"

namespace shardplan::cli {

using namespace serving;

void add_shared_serve_flags(CLI::App* app, SharedServeFlags* f, bool search) {
  app->add_option("--prefix-hit", f->prefix_hit,
                  "fraction of prompt tokens served from the prefix cache "
                  "(default 0)")
      ->check(CLI::Range(0.0, 0.99));
  app->add_option("--sparsity", f->sparsity,
                  "weight sparsity (docs/transforms.md; default none): 2:4[:targets] or "
                  "block:DENSITY:BLOCK[:targets]; targets: attn,mlp,experts,all "
                  "(default all)");
  app->add_option("--low-rank", f->low_rank,
                  "factorise linears W (n x k) = A (n x r) B (r x k) (default none): "
                  "RANK[:targets], targets attn,mlp (default attn,mlp)");
  if (search)
    app->add_option("--max-batch", f->max_batch,
                    "largest batch the search tries, sequences per attention-DP rank "
                    "(default: the ladder up to 512; N is tried itself)")
        ->check(positive_number());
  else
    app->add_option("--max-batch", f->max_batch,
                    "max running sequences per attention-DP rank (default: the KV "
                    "cache decides)")
        ->check(positive_number());
  app->add_option("--mem-fraction", f->mem_fraction,
                  "engine memory fraction in (0, 1] (vLLM "
                  "gpu_memory_utilization 0.9, SGLang mem_fraction_static by tp, "
                  "TRT-LLM free_gpu_memory_fraction 0.9)")
      ->check(positive_number() & number_in(0.0, 1.0));
}

std::vector<Transform> parse_transforms(const SharedServeFlags& f) {
  std::vector<Transform> t;
  if (!f.sparsity.empty()) t.push_back(parse_sparsity("--sparsity", f.sparsity));
  if (!f.low_rank.empty()) t.push_back(parse_low_rank("--low-rank", f.low_rank));
  return t;
}

void check_transforms_run(const ServingModel& sm, const Gpu& gpu) {
  if (const Problems p = check_transform_kernels(sm.tensors, gpu); !p.empty())
    throw ConfigError("--sparsity: on " + gpu.name + ": " + join_problems(p));
}

std::string transforms_note(const SharedServeFlags& f) {
  std::string s;
  if (!f.sparsity.empty()) s = "sparsity " + f.sparsity;
  if (!f.low_rank.empty()) s += (s.empty() ? "" : ", ") + std::string("low-rank ") + f.low_rank;
  return s;
}

std::vector<int> capped_batches(const std::vector<int>& ladder, int max_batch) {
  if (max_batch <= 0) return ladder;
  std::vector<int> out;
  for (int b : ladder)
    if (b < max_batch) out.push_back(b);
  out.push_back(max_batch);
  return out;
}

}  // namespace shardplan::cli
