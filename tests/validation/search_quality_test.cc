// Search quality against the published runs: for every dense run, the fastest plan the search finds (same model,
// system, batch, sequence, precision and framework) must be predicted at least as fast as the published plan
// (its unknown fields completed by fastest_fitting, as `shardplan validate` does). Prints in how many rows the
// published plan is among the top 10. Runs whose published plan does not fit in the model are counted apart.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "modeler/io/published_runs.h"
#include "modeler/io/system_io.h"
#include "modeler/io/validation_run.h"
#include "modeler/search.h"
#include "modeler/validation.h"

using namespace shardplan;

namespace {

bool same_plan(const Plan& a, const Plan& b) { return !plan_less(a, b) && !plan_less(b, a); }

}  // namespace

TEST_CASE("search finds a plan at least as fast as every published plan, dense and MoE") {
  const char* path = std::getenv("SHARDPLAN_RUNS");
  REQUIRE(path != nullptr);
  const std::vector<io::PublishedRun> runs = io::load_published_runs(path);
  std::map<std::string, io::GpuProfile> gpus;
  int compared = 0, in_top10 = 0, published_oom = 0, worse = 0;
  for (const io::PublishedRun& run : runs) {
    if (!gpus.count(run.gpu)) gpus.emplace(run.gpu, io::load_gpu_profile(run.gpu));
    // Read as `shardplan validate` reads it: framework, power cap, uneven split.
    const System sys = io::run_system(gpus.at(run.gpu), run);
    const Framework* fw = io::framework_for(run);
    REQUIRE(fw != nullptr);
    // A custom pipeline layout (the DeepSeek-V3 recipes') is no search axis: the published plan is compared with
    // the even split it would otherwise run.
    OpenPlan as_run = io::run_plan(run);
    as_run.plan.pipeline_layout.clear();
    const Resolution published = fastest_fitting(run.model, sys, as_run, *fw);
    // The search runs the software as the published run did: compiled where the source says it was (a plan has no
    // compile axis), the framework's fp8 recipe and gathers (a searched plan leaves them to the framework).
    const Framework software = run.plan.compiled.value_or(fw->compiled_by_default) ? compiled(*fw) : *fw;
    if (!published.fits || !published.estimate.feasible()) {
      ++published_oom;
      continue;
    }
    SpaceRequest r;
    r.global_batch = run.plan.plan.global_batch;
    r.seq_len = run.plan.plan.seq_len;
    r.precision = {run.plan.plan.precision};
    r.cp_kind = run.plan.plan.cp_kind;
    SearchOptions opt;
    opt.top_k = 10;
    opt.nearest_misses = 0;
    const SearchResult found = search(run.model, sys, software, make_plan_space(run.model, sys, r), opt);
    ++compared;
    INFO(run.id);
    REQUIRE(!found.top.empty());
    const double best = found.top.front().tokens_per_s_per_gpu;
    const double pub = published.estimate.tokens_per_s_per_gpu;
    CHECK(best >= pub * (1 - 1e-9));
    if (best < pub * (1 - 1e-9)) ++worse;
    bool listed = false;
    for (const Estimate& e : found.top) listed = listed || same_plan(e.plan, published.estimate.plan);
    in_top10 += listed;
    std::printf("%-44s published %9.0f  best %9.0f tok/s/GPU (+%5.1f%%)%s\n", run.id.c_str(), pub, best,
                100 * (best / pub - 1), listed ? "  [published in top 10]" : "");
  }
  std::printf("search quality: %d runs compared, published plan in the top 10 in %d, search worse in %d; "
              "%d published plans do not fit in the model\n",
              compared, in_top10, worse, published_oom);
  CHECK(compared > 0);
}
