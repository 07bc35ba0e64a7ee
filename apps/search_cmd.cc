// shardplan search: every plan of the space, the fastest that fit, why the others did not, and launcher files.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include "apps/text.h"
#include "apps/command.h"
#include "apps/plan_file.h"
#include "apps/progress.h"
#include "apps/report_table.h"
#include "apps/run_flags.h"
#include "apps/search_flags.h"
#include "modeler/io/output.h"
#include "modeler/io/emit.h"
#include "modeler/io/model_io.h"
#include "modeler/io/run_json.h"
#include "modeler/io/plan_json.h"
#include "modeler/io/search_json.h"
#include "modeler/io/validation_record_io.h"

namespace shardplan::cli {

namespace {


std::string right(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string table(const std::vector<Estimate>& rows, const SearchFlags& f, int gpus) {
  char buf[512];
  int width = 46;  // the plan column widens for long labels (TSP, SDP, MoE) so the numbers stay aligned
  for (const Estimate& e : rows) width = std::max(width, static_cast<int>(plan_label(e.plan).size()));
  std::snprintf(buf, sizeof buf, "%-4s  %-*s %8s %9s %13s %6s\n%4s  %-*s %8s %9s %13s %6s\n", "rank", width, "plan",
                "memory", "step", "tokens/s/GPU", "MFU", "", width, "", "(GiB)", "(s)", "", "(%)");
  std::string s = buf;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Estimate& e = rows[i];
    std::snprintf(buf, sizeof buf, "%4zu  %-*s %8.1f %9.3f %13s %6.1f\n", i + 1, width, plan_label(e.plan).c_str(),
                  to_GiB(e.memory.total()), e.time.step().v, with_commas(e.tokens_per_s_per_gpu).c_str(),
                  100 * e.mfu);
    s += buf;
    s += "      " + predict_command(f, e.plan, gpus) + "\n";
  }
  return s;
}

std::string rejections(const SearchResult& r) {
  std::vector<std::pair<uint64_t, std::string>> by_count;
  for (const auto& [code, n] : r.rejected) by_count.push_back({n, code});
  std::sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string s = "rejected:";
  if (by_count.empty()) s += " none";
  for (size_t i = 0; i < by_count.size(); ++i)
    s += std::string(i ? ";" : "") + " " + with_commas(static_cast<double>(by_count[i].first)) + " " +
         rejection_label(by_count[i].second);
  return s + "\n";
}

/// Memory items over capacity for a near miss: which items are largest and by how much the plan overflows.
std::string explain_miss(const Estimate& e, Bytes headroom) {
  const MemoryBreakdown& m = e.memory;
  std::vector<std::pair<double, const char*>> items = {
      {to_GiB(m.weights), "weights"},     {to_GiB(m.gradients), "gradients"}, {to_GiB(m.optimizer), "optimizer"},
      {to_GiB(m.activations), "activations"}, {to_GiB(m.logits), "logits"},   {to_GiB(m.buffers), "buffers"},
      {to_GiB(m.fragmentation + m.context), "reserve"}};
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string s = "  " + plan_label(e.plan) + ": " + fmt("%.1f", to_GiB(m.total())) + " GiB of " +
                  fmt("%.1f", to_GiB(m.capacity)) +
                  (headroom.v > 0 ? " (less " + fmt("%.1f", to_GiB(headroom)) + " headroom)" : "") + ", over by " +
                  fmt("%.2f", to_GiB(memory_overflow(e, headroom))) + " GiB; largest:";
  for (size_t i = 0; i < 3; ++i)
    s += std::string(i ? "," : "") + " " + items[i].second + " " + fmt("%.1f", items[i].first);
  return s + "\n";
}

std::string explain_exposed(const Estimate& e) {
  const TimeBreakdown& t = e.time;
  const double step = t.step().v;
  std::string s = "  fastest plan's step: compute " + fmt("%.1f%%", 100 * t.compute.v / step);
  for (int k = 0; k < kNumCommKinds; ++k)
    if (t.exposed_comm[k].v > 0)
      s += std::string(", exposed ") + kCommKindNames[k] + " comm " + fmt("%.3f s", t.exposed_comm[k].v) + " (" +
           fmt("%.1f%%", 100 * t.exposed_comm[k].v / step) + ")";
  if (t.bubble.v > 0)
    s += ", bubble " + fmt("%.3f s", t.bubble.v) + " (" + fmt("%.1f%%", 100 * t.bubble.v / step) + ")";
  s += ", optimizer " + fmt("%.1f%%", 100 * t.optimizer.v / step);
  return s + "\n";
}

class SearchCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("search", "search the fastest plans that fit, and why the others do not");
    add_search_flags(sub, &flags_, true);
    add_run_flags(sub, &run_);
    add_objective_flags(sub, &run_);
    add_compare_flag(sub, &flags_);
    sub->add_flag("--json", json_, "print the JSON report (schema_version 1)");
    sub->add_flag("--explain", explain_, "show the nearest misses and the fastest plan's exposed time");
    emit_opt_ = sub->add_option("--emit", emit_,
                                "write the fastest plan: json, megatron, torchtitan (current Python config), "
                                "torchtitan-toml (v0.2.x), deepspeed (Megatron-DeepSpeed) or nemo (Megatron-Bridge); "
                                "without a value, the format of the --framework profile's launcher. A framework's "
                                "format searches under its profile (--emit torchtitan: --framework torchtitan)")
                    ->expected(0, 1);
    framework_opt_ = sub->get_option("--framework");
    sub->add_option("--out", out_,
                    "file for --emit (default, or '-': standard output, the report then goes to stderr)");
    sub->add_flag("--force", force_, "overwrite --out if it exists (a symbolic link is written through)");
    return sub;
  }

  int run() override {
    const ModelDesc model = io::load_model(flags_.model, /*allow_moe=*/true);
    const bool emitting = emit_opt_->count() > 0;
    std::optional<io::EmitFormat> format;
    if (emitting && !emit_.empty()) {
      // A framework's launch unit holds that framework's plan and numbers: the search runs under its profile.
      format = io::parse_emit_format(emit_);
      if (const char* profile = io::emit_profile(*format)) {
        if (framework_opt_->count() > 0 && flags_.framework != profile)
          throw ConfigError("--emit " + emit_ + " writes plans of the " + profile + " profile, and --framework is " +
                            flags_.framework + "; drop --framework or pass --framework " + profile);
        flags_.framework = profile;
      }
    }
    const Framework& fw = resolve_framework(flags_.framework);
    if (emitting && !format) format = io::default_emit_format(fw);
    SpaceRequest request = resolve_request(flags_);
    request.cp_kind = fw.recipe_cp_kind;  // the framework's K/V exchange, as predict takes it (--cp-kind)
    // A plan searched for a launch unit runs context parallelism as the format can write it (io::emit_cp_kinds;
    // torchtitan main only all-gathers K/V): a plan of another kind would be refused by the emitter after the
    // search.
    if (format && !io::emit_writes_cp_kind(*format, request.cp_kind)) {
      const std::vector<CpKind> kinds = io::emit_cp_kinds(*format);
      if (!kinds.empty()) request.cp_kind = kinds.front();
    }
    const std::vector<int> counts = resolve_gpu_counts(flags_.gpus);
    const RunSpec run_spec = resolve_run_spec(run_);
    const RunObjective objective = resolve_objective(run_);
    const ObjectiveCaps caps = resolve_caps(run_);
    check_search_flags_fit(flags_, model);
    std::optional<io::PlanFile> compare;
    if (!flags_.compare.empty()) {
      if (counts.size() != 1) throw ConfigError("--compare needs a single --gpus value");
      compare = io::load_plan_file(flags_.compare);  // read before the search: a bad file fails at once
    }
    const io::Output emit_out(out_, force_);
    if (emitting) {
      if (counts.size() != 1) throw ConfigError("--emit needs a single --gpus value");
      if (json_ && emit_out.to_stdout())
        throw ConfigError(std::string("--emit ") + io::to_string(*format) +
                          " and --json would both write to standard output; give --out FILE");
      emit_out.check();  // before the search: a refusal must not cost a search
    } else if (!out_.empty()) {
      throw ConfigError("--out goes with --emit FORMAT");
    }
    // The emitted file alone on standard output, so it can be piped or redirected; the report goes to stderr.
    const io::ReportToStderr report_to_stderr(format && emit_out.to_stdout());

    InterruptGuard guard;
    std::vector<System> systems;
    std::vector<SearchResult> results;
    std::vector<double> seconds;
    for (int gpus : counts) {
      systems.push_back(system_for(flags_, gpus));
      const PlanSpace space = make_plan_space(model, systems.back(), request);
      Progress progress("searching " + std::to_string(gpus) + " GPUs", flags_.quiet);
      SearchOptions opt = search_options(flags_);
      opt.cancel = InterruptGuard::flag();
      opt.keep_fit_steps = compare.has_value();
      opt.progress = [&progress](uint64_t done, uint64_t total) { progress.update(done, total); };
      const auto t0 = std::chrono::steady_clock::now();
      results.push_back(search(model, systems.back(), fw, space, opt));
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      progress.finish();
      if (results.back().cancelled) {
        std::cerr << "interrupted: no file written\n";
        return kInterruptedExit;
      }
    }

    // The fastest plan of each GPU count is also its shortest, cheapest and lowest-energy run (run_objective.h).
    std::vector<RunCandidate> candidates;
    std::vector<size_t> candidate_point;
    for (size_t i = 0; i < counts.size(); ++i) {
      if (results[i].top.empty()) continue;
      RunCandidate c{counts[i], results[i].top.front().time.step().v, {}};
      if (wants_run(run_)) c.run = run_cost_for(results[i].top.front(), systems[i], model, fw, run_spec);
      candidates.push_back(c);
      candidate_point.push_back(i);
    }
    const std::optional<size_t> chosen = choose_run(candidates, objective, caps);

    const System& first = systems.front();
    std::optional<Comparison> comparison;
    if (compare) comparison = compare_plan(*compare, flags_, model, first, fw, results.front());
    // How far to trust the ranked throughputs: the validation record of the nearest published runs.
    record_ = io::quote_record(io::load_shipped_record(), first.gpu.name, fw.name);
    if (json_) {
      const std::string system = flags_.system.system.empty() ? flags_.system.gpu : flags_.system.system;
      io::ReportContext ctx{"search", flags_.model, system, first.gpu.name, first.gpus, fw.name, first.provenance};
      std::vector<io::SearchPoint> points;
      for (size_t i = 0; i < counts.size(); ++i) points.push_back({counts[i], &results[i]});
      nlohmann::json j = io::search_json(ctx, points);
      if (wants_run(run_)) {  // results are in point order, each point's top list in rank order
        size_t k = 0;
        for (size_t i = 0; i < counts.size(); ++i)
          for (const Estimate& e : results[i].top)
            j["results"][k++]["run"] = io::run_json(run_cost_for(e, systems[i], model, fw, run_spec), run_spec);
      }
      j["objective"] = {{"name", to_string(objective)},
                        {"max_gpus", caps.max_gpus > 0 ? nlohmann::json(caps.max_gpus) : nlohmann::json(nullptr)},
                        {"max_cost", caps.max_cost > 0 ? nlohmann::json(caps.max_cost) : nlohmann::json(nullptr)},
                        {"chosen", nullptr}};
      if (chosen) {
        const size_t i = candidate_point[*chosen];
        nlohmann::json c = io::estimate_json(results[i].top.front());
        c["gpus"] = counts[i];
        if (wants_run(run_)) c["run"] = io::run_json(candidates[*chosen].run, run_spec);
        j["objective"]["chosen"] = c;
      }
      if (comparison)
        j["compare"] = io::compare_json(*compare, comparison->estimate, comparison->rank, comparison->fitting,
                                        comparison->notes);
      j["validation_record"] = io::record_json(record_);
      std::cout << j.dump(2) << "\n";
    } else {
      for (size_t i = 0; i < counts.size(); ++i) print(model, systems[i], fw, results[i], seconds[i], counts[i]);
      if (counts.size() > 1) print_gpu_front(counts, results);
      if (comparison) std::cout << format_comparison(*comparison, results.front());
      print_runs(candidates, candidate_point, results, chosen, objective, caps);
    }
    if (!candidates.empty() && !chosen) {
      std::cerr << "infeasible: no plan within"
                << (caps.max_gpus > 0 ? " --max-gpus " + std::to_string(caps.max_gpus) : "")
                << (caps.max_cost > 0 ? " --max-cost " + fmt("%.2f", caps.max_cost) : "") << "\n";
      return 2;
    }

    bool any = false;
    for (const SearchResult& r : results) any = any || !r.top.empty();
    if (!any) {
      std::cerr << "infeasible: no plan fits; see the rejection counts" << (explain_ ? "" : " (and --explain)") << "\n";
      return 2;
    }
    if (format) {
      const SearchResult& r = results.front();
      if (r.top.empty()) throw Infeasible("nothing to emit: no plan fits");
      io::EmitInput in{r.top.front(), systems.front(), flags_.model, fw.name, model.layers, model.moe.has_value(),
                       &model};
      const io::PlanInputs inputs = plan_inputs(flags_.model, flags_.system, counts.front(), fw.name);
      in.inputs = &inputs;
      emit_out.write(io::emit_plan(*format, in));
      if (!json_ && !emit_out.to_stdout())
        std::cout << "wrote " << io::to_string(*format) << " plan (rank 1) to " << emit_out.path() << "\n";
    }
    return 0;
  }

 private:
  void print(const ModelDesc& model, const System& sys, const Framework& fw, const SearchResult& r, double secs,
             int gpus) const {
    std::cout << "shardplan search: " << model.name << " on " << sys.name << " (" << sys.gpus << " x " << sys.gpu.name
              << "), gbs " << *flags_.gbs << ", seq " << *flags_.seq << ", framework " << fw.name << "\n"
              << "searched " << with_commas(static_cast<double>(r.evaluated)) << " plans in " << fmt("%.2f", secs)
              << " s: " << with_commas(static_cast<double>(r.feasible)) << " fit"
              << (flags_.headroom_gib > 0 ? " with " + fmt("%.1f", flags_.headroom_gib) + " GiB headroom" : "") << "\n";
    if (!r.top.empty()) std::cout << table(r.top, flags_, gpus) << "trust: " << record_.text << "\n";
    std::cout << rejections(r);
    if (r.pareto.size() > 1) {
      std::cout << "pareto front, step time vs memory headroom:\n";
      for (const Estimate& e : r.pareto)
        std::cout << "  " << fmt("%9.3f s", e.time.step().v) << "  "
                  << fmt("%6.1f GiB free", to_GiB(e.memory.capacity - e.memory.total())) << "  " << plan_label(e.plan)
                  << "\n";
    }
    if (explain_) {
      std::cout << "explain:\n";
      if (!r.top.empty()) std::cout << explain_exposed(r.top.front());
      if (!r.nearest_misses.empty()) std::cout << "  nearest misses (smallest memory overflow):\n";
      for (const Estimate& e : r.nearest_misses) std::cout << "  " << explain_miss(e, GiB(flags_.headroom_gib));
    }
    std::cout << "\n";
  }

  void print_gpu_front(const std::vector<int>& counts, const std::vector<SearchResult>& results) const {
    std::cout << "best plan per GPU count (* = on the front: faster than every smaller count):\n"
              << "   gpus      step  tokens/s/GPU    MFU  plan\n";
    double best = -1;
    for (size_t i = 0; i < counts.size(); ++i) {
      if (results[i].top.empty()) {
        std::cout << fmt("%7.0f", counts[i]) << "  no plan fits\n";
        continue;
      }
      const Estimate& e = results[i].top.front();
      const bool front = best < 0 || e.time.step().v < best;
      if (front) best = e.time.step().v;
      std::cout << fmt("%7.0f", counts[i]) << fmt(" %9.3f", e.time.step().v) << " "
                << right(with_commas(e.tokens_per_s_per_gpu), 13) << fmt(" %6.1f", 100 * e.mfu) << "  "
                << plan_label(e.plan) << (front ? " *" : "") << "\n";
    }
  }

  /// The run of each GPU count's best plan, and the plan the objective recommends.
  void print_runs(const std::vector<RunCandidate>& c, const std::vector<size_t>& point,
                  const std::vector<SearchResult>& results, std::optional<size_t> chosen, RunObjective objective,
                  const ObjectiveCaps& caps) const {
    if (c.empty()) return;
    const bool run = wants_run(run_);
    if (run && c.size() == 1) {
      std::cout << "rank 1's " << format_run(c.front().run, resolve_run_spec(run_), c.front().gpus);
    } else if (run) {
      std::cout << "run of each GPU count's fastest plan:\n"
                << "   gpus         wall  goodput    GPU-hours" << (run_.price ? "         cost" : "")
                << "  energy (MWh)\n";
      for (const RunCandidate& r : c)
        std::cout << fmt("%7.0f", r.gpus) << " " << right(format_duration(r.run.wall.v), 12)
                  << fmt(" %7.1f%%", 100 * r.run.goodput) << " " << right(with_commas(r.run.gpu_hours), 12)
                  << (run_.price ? " " + right(with_commas(r.run.cost), 12) : "")
                  << fmt(" %13.1f", r.run.facility_energy_kwh / 1000) << "\n";
    }
    if (!chosen) return;
    if (c.size() > 1 || objective != RunObjective::step || caps.max_gpus > 0 || caps.max_cost > 0) {
      const size_t i = point[*chosen];
      std::cout << "recommended (--objective " << to_string(objective)
                << (caps.max_gpus > 0 ? ", --max-gpus " + std::to_string(caps.max_gpus) : "")
                << (caps.max_cost > 0 ? ", --max-cost " + fmt("%.2f", caps.max_cost) : "") << "): "
                << c[*chosen].gpus << " GPUs, " << plan_label(results[i].top.front().plan) << "\n      "
                << predict_command(flags_, results[i].top.front().plan, c[*chosen].gpus) << "\n";
    }
  }

  SearchFlags flags_;
  RunFlags run_;
  bool json_ = false, explain_ = false, force_ = false;
  io::RecordQuote record_;
  std::string emit_, out_;
  CLI::Option* emit_opt_ = nullptr;
  CLI::Option* framework_opt_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_search_command() { return std::make_unique<SearchCommand>(); }

}  // namespace shardplan::cli
