// shardplan sweep: one quantity varied (gpus, seq, gbs or the GPU model), a full search at each point, the best
// plan per point as a table, CSV or JSON, and an SVG chart with the points where the best layout changes.
#include <cstdio>
#include <iostream>

#include "apps/text.h"
#include "apps/command.h"
#include "apps/progress.h"
#include "apps/report_table.h"
#include "apps/search_flags.h"
#include "modeler/io/output.h"
#include "modeler/io/model_io.h"
#include "modeler/io/sweep_report.h"

namespace shardplan::cli {

namespace {


bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int to_int(const std::string& flag, const std::string& v) {
  const AxisSpec a = parse_axis(flag, v);
  if (a.range || a.values.size() != 1 || a.values[0] < 1)
    throw ConfigError(flag + ": '" + v + "' is not a positive integer");
  return a.values[0];
}

class SweepCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("sweep", "search at each value of one quantity; table, CSV/JSON and SVG chart");
    add_search_flags(sub, &flags_, false);
    sub->add_option("--vary", vary_, "the quantity to vary: gpus, seq, gbs or gpu")
        ->required()
        ->check(CLI::IsMember({"gpus", "seq", "gbs", "gpu"}));
    sub->add_option("--values", values_, "comma-separated values (for gpus also a:b, powers of two)")->required();
    sub->add_option("--out", out_,
                    "write the points as CSV (.csv) or JSON (.json); '-' writes them to standard output (the table "
                    "then goes to stderr)");
    sub->add_option("--format", format_,
                    "format of --out: csv or json (default: the --out name's extension; csv for '-')")
        ->check(CLI::IsMember({"csv", "json"}));
    sub->add_option("--svg", svg_, "write an SVG chart of tokens/s/GPU and MFU per point ('-': standard output)");
    sub->add_flag("--force", force_, "overwrite existing output files (a symbolic link is written through)");
    return sub;
  }

  int run() override {
    if (!format_.empty() && out_.empty()) throw ConfigError("--format goes with --out FILE (or --out -)");
    const io::Output points_out(out_, force_), svg_out(svg_, force_);  // omitted: not written; "-": stdout
    const bool points_stdout = !out_.empty() && points_out.to_stdout(),
               svg_stdout = !svg_.empty() && svg_out.to_stdout();
    if (format_.empty() && !out_.empty() && !points_stdout) {
      if (!ends_with(out_, ".csv") && !ends_with(out_, ".json"))
        throw ConfigError("--out " + out_ + ": the name must end in .csv or .json (or give --format csv|json)");
      format_ = ends_with(out_, ".csv") ? "csv" : "json";
    }
    if (format_.empty()) format_ = "csv";
    if (points_stdout && svg_stdout) throw ConfigError("--out and --svg would both write to standard output");
    if (!out_.empty()) points_out.check();  // before any search: a refusal must not cost a sweep
    if (!svg_.empty()) svg_out.check();
    const io::ReportToStderr report_to_stderr(points_stdout || svg_stdout);
    const std::vector<std::string> values =
        vary_ == "gpus" ? gpu_values() : split_commas(values_);
    if (values.empty()) throw ConfigError("--values: no value given");
    if (vary_ == "gpu" && !flags_.system.system.empty())
      throw ConfigError("--vary gpu builds each GPU's standard system: give --gpus N without --system");
    if (vary_ != "gpus" && flags_.gpus.empty()) throw ConfigError("give --gpus N (or vary it with --vary gpus)");
    const ModelDesc model = io::load_model(flags_.model, /*allow_moe=*/true);
    const Framework& fw = resolve_framework(flags_.framework);

    InterruptGuard guard;
    std::vector<io::SweepPoint> points;
    for (const std::string& v : values) {
      SearchFlags f = flags_;
      if (vary_ == "gpus") f.gpus = v;
      if (vary_ == "seq") f.seq = to_int("--values", v);
      if (vary_ == "gbs") f.gbs = to_int("--values", v);
      if (vary_ == "gpu") f.system.gpu = v;
      const std::vector<int> counts = resolve_gpu_counts(f.gpus);
      if (counts.size() != 1) throw ConfigError("--gpus: a sweep point takes a single GPU count, got '" + f.gpus + "'");
      const System sys = system_for(f, counts[0]);
      const PlanSpace space = make_plan_space(model, sys, resolve_request(f));
      Progress progress("sweep " + vary_ + "=" + v, f.quiet);
      SearchOptions opt = search_options(f);
      opt.top_k = 1;
      opt.nearest_misses = 0;
      opt.cancel = InterruptGuard::flag();
      opt.progress = [&progress](uint64_t done, uint64_t total) { progress.update(done, total); };
      const SearchResult r = search(model, sys, fw, space, opt);
      progress.finish();
      if (r.cancelled) {
        std::cerr << "interrupted: no file written\n";
        return kInterruptedExit;
      }
      io::SweepPoint pt{v, counts[0], std::nullopt, r.evaluated, r.feasible};
      if (!r.top.empty()) pt.best = r.top.front();
      points.push_back(pt);
    }

    print(model, fw, points);
    const std::string title = model.name + ": best plan per " + vary_ + " (" + fw.name + ")";
    if (!out_.empty()) {
      const std::string system = flags_.system.system.empty() ? flags_.system.gpu : flags_.system.system;
      io::ReportContext ctx{"sweep", flags_.model, system, "", 0, fw.name, ""};
      const std::string text =
          format_ == "csv" ? io::sweep_csv(vary_, points) : io::sweep_json(ctx, vary_, points).dump(2) + "\n";
      points_out.write(text);
    }
    if (!svg_.empty()) svg_out.write(io::sweep_svg(vary_, title, points));
    for (const io::SweepPoint& pt : points)
      if (pt.best) return 0;
    std::cerr << "infeasible: no plan fits at any point\n";
    return 2;
  }

 private:
  std::vector<std::string> gpu_values() const {
    std::vector<std::string> out;
    for (int n : resolve_gpu_counts(values_)) out.push_back(std::to_string(n));
    return out;
  }

  void print(const ModelDesc& model, const Framework& fw, const std::vector<io::SweepPoint>& points) const {
    std::cout << "shardplan sweep: " << model.name << ", vary " << vary_ << ", framework " << fw.name << "\n"
              << "  " << vary_ << "        gpus      step  tokens/s/GPU    MFU  best plan\n";
    std::string prev;
    char buf[256];
    for (const io::SweepPoint& pt : points) {
      if (!pt.best) {
        std::snprintf(buf, sizeof buf, "  %-10s %6d  no plan fits\n", pt.value.c_str(), pt.gpus);
        std::cout << buf;
        continue;
      }
      const Estimate& e = *pt.best;
      const std::string layout = io::layout_label(e.plan);
      std::snprintf(buf, sizeof buf, "  %-10s %6d %9.3f %13s %6.1f  %s%s\n", pt.value.c_str(), pt.gpus,
                    e.time.step().v, with_commas(e.tokens_per_s_per_gpu).c_str(), 100 * e.mfu,
                    plan_label(e.plan).c_str(), !prev.empty() && layout != prev ? "  <- layout changes" : "");
      std::cout << buf;
      prev = layout;
    }
  }

  SearchFlags flags_;
  std::string vary_, values_, out_, format_, svg_;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<Command> make_sweep_command() { return std::make_unique<SweepCommand>(); }

}  // namespace shardplan::cli
