// libFuzzer target: the plan flags of predict and of search, as a command line. The first line holds predict's
// words (--model, system and plan flags), the second search's; each is parsed by the CLI's own CLI11 setup,
// resolved, and evaluated (predict) or turned into a plan space (search), which must stay within its limits.
#include "apps/plan_flags.h"
#include "apps/search_flags.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.emplace_back(line.substr(i, j - i));
    i = j;
  }
  // A command line has no NUL bytes; CLI11 would see a shorter word than the fuzzer wrote.
  for (std::string& w : out) w = w.substr(0, w.find('\0'));
  return out;
}

/// Parses like the CLI (reverse order is CLI11's vector convention); a ParseError is the CLI's exit 2.
bool parse(CLI::App& app, std::vector<std::string> args) {
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
    return true;
  } catch (const CLI::ParseError&) {
    return false;
  }
}

void predict(std::string_view line) {
  using namespace shardplan;
  CLI::App app;
  std::string model = "llama-3-8b";
  cli::SystemFlags sf;
  cli::PlanFlags pf;
  app.add_option("--model", model);
  cli::add_system_flags(&app, &sf, false);
  cli::add_plan_flags(&app, &pf);
  if (!parse(app, words(line))) return;
  if (sf.system.empty() && sf.gpu.empty()) sf.system = "dgx-h100";
  if (sf.gpus && *sf.gpus > 4096) return;  // a system is built rank by rank: keep an input fast
  const System sys = cli::resolve_system(sf);
  const Plan p = cli::resolve_plan(pf, sys);
  const Estimate e = evaluate(io::load_model(model, true), sys, p, cli::resolve_framework(pf.framework));
  if (e.time.compute.v > 0) fuzz::check_estimate(e);
}

void search_space(std::string_view line) {
  using namespace shardplan;
  CLI::App app;
  cli::SearchFlags f;
  cli::add_search_flags(&app, &f, false);
  std::vector<std::string> args = words(line);
  args.insert(args.begin(), {"--model", "llama-3-8b"});
  if (!parse(app, args)) return;
  if (f.system.system.empty() && f.system.gpu.empty()) f.system.system = "dgx-h100";
  const SpaceRequest req = cli::resolve_request(f);
  for (int gpus : cli::resolve_gpu_counts(f.gpus.empty() ? "16" : f.gpus)) {
    if (gpus > 4096) return;
    const PlanSpace space = make_plan_space(io::load_model(f.model, true), cli::system_for(f, gpus), req);
    if (space.size() > kMaxPlanSpace) fuzz::finding("plan space above its limit");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  const std::string_view text = fuzz::as_text(data, size);
  const size_t nl = text.find('\n');
  fuzz::guarded([&] { predict(text.substr(0, nl)); });
  if (nl != std::string_view::npos) fuzz::guarded([&] { search_space(text.substr(nl + 1)); });
  return 0;
}
