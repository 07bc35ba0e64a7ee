#include "apps/serve_spec_flags.h"

#include "apps/text.h"
#include "modeler/io/model_io.h"
#include "modeler/serving/speculative.h"

namespace shardplan::cli {

using namespace serving;

void add_spec_flags(CLI::App* app, SpecFlags* f) {
  app->add_option("--spec", f->method, "speculative decoding: none | mtp (the model's own MTP modules, SGLang "
                                       "NEXTN) | eagle (a one-layer EAGLE head) | draft (a separate draft model, "
                                       "--spec-draft); default none")
      ->capture_default_str();
  app->add_option("--spec-tokens", f->tokens, "draft tokens per sequence and step, k (needed with --spec)");
  app->add_option("--spec-accept", f->accept,
                  "acceptance rate of each draft position given the ones before it were accepted, A1,A2,...,Ak, or "
                  "one A for all, each in (0, 1); no default (it depends on the model, draft and data). Example: "
                  "DeepSeek-V3's report (arXiv 2412.19437 sec. 5.4.3) measured 85-90% for its second token: "
                  "--spec mtp --spec-tokens 1 --spec-accept 0.85");
  app->add_option("--spec-accept-length", f->accept_length,
                  "instead of --spec-accept: mean tokens each step emits per sequence, the bonus token included "
                  "(vLLM's and SGLang's logged mean acceptance length), in [1, k + 1]");
  app->add_option("--spec-draft", f->draft, "draft model for --spec draft (models/ name, YAML or HF config.json; "
                                            "same vocabulary as the target), or an EAGLE head's config for --spec "
                                            "eagle (default: a head of the target's shape)");
}

SpecSetup parse_spec_flags(const SpecFlags& f, const ServingModel& target, const WorkerPlan& w, Engine engine) {
  SpecSetup r;
  const auto method = parse_spec_method(f.method);
  if (!method) throw ConfigError("--spec: unknown method '" + f.method + "' (none mtp eagle draft)");
  r.spec.method = *method;
  if (!r.spec.enabled()) {
    if (f.tokens != 0 || !f.accept.empty() || f.accept_length != 0 || !f.draft.empty())
      throw ConfigError("--spec-tokens, --spec-accept, --spec-accept-length and --spec-draft need --spec METHOD");
    return r;
  }
  if (f.tokens < 1) throw ConfigError("--spec-tokens: --spec " + f.method + " needs k >= 1 draft tokens per step");
  r.spec.tokens = f.tokens;
  if (f.accept.empty() && f.accept_length == 0)
    throw ConfigError("--spec " + f.method + " needs its acceptance: --spec-accept A[,A2,...] (the rate of each "
                      "draft position) or --spec-accept-length L (mean tokens per step); there is no default. "
                      "Example: DeepSeek-V3 MTP, 85-90% second-token acceptance (arXiv 2412.19437 sec. 5.4.3): "
                      "--spec-tokens 1 --spec-accept 0.85");
  if (!f.accept.empty() && f.accept_length != 0)
    throw ConfigError("--spec-accept and --spec-accept-length: give one of them");
  for (const std::string& a : split_commas(f.accept)) {
    double v = 0;
    try {
      size_t used = 0;
      v = std::stod(a, &used);
      if (used != a.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw ConfigError("--spec-accept: '" + a + "' is not a number");
    }
    if (!(v > 0 && v < 1)) throw ConfigError("--spec-accept: each rate lies in (0, 1), got " + a);
    r.spec.accept.push_back(v);
  }
  if (r.spec.accept.size() > 1 && static_cast<int>(r.spec.accept.size()) != f.tokens)
    throw ConfigError("--spec-accept: " + num(static_cast<double>(r.spec.accept.size())) +
                      " rates for --spec-tokens " + num(f.tokens) + " (give one rate, or one per draft position)");
  if (f.accept_length != 0 && !(f.accept_length >= 1 && f.accept_length <= f.tokens + 1.0))
    throw ConfigError("--spec-accept-length: the mean tokens per step lies in [1, k + 1] = [1, " +
                      num(f.tokens + 1.0) + "], got " + num(f.accept_length));
  r.spec.accept_length = f.accept_length;
  if (r.spec.method == SpecMethod::mtp && !f.draft.empty())
    throw ConfigError("--spec-draft: --spec mtp drafts with the model's own MTP modules");
  if (r.spec.method == SpecMethod::draft_model && f.draft.empty())
    throw ConfigError("--spec-draft: --spec draft needs the draft model");
  std::unique_ptr<ModelDesc> draft_desc;
  if (!f.draft.empty()) draft_desc = std::make_unique<ModelDesc>(io::load_model(f.draft, true));
  // The remaining checks (MTP modules, vocabulary, tp) are the library's; name the flag each concerns.
  const Problems p = check_spec(r.spec, target.model, draft_desc.get(), w);
  if (!p.empty()) {
    const Problem& first = p.front();
    const std::string flag = first.code == "spec_method" ? "--spec"
                             : first.code == "spec_draft" ? "--spec-draft"
                             : first.code == "spec_tokens" ? "--spec-tokens"
                                                           : "--spec-accept";
    throw ConfigError(flag + ": " + first.message);
  }
  r.draft_name = f.draft;
  if (draft_desc) {
    r.draft = std::make_unique<ServingModel>(
        r.spec.method == SpecMethod::eagle
            ? make_draft_head(target, SpecMethod::eagle, draft_desc.get())
            : make_draft_model(*draft_desc, target.precision, engine_step(engine, "", *draft_desc)));
  }
  return r;
}

}  // namespace shardplan::cli
