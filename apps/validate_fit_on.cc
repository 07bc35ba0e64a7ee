#include "apps/validate_fit_on.h"

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/text.h"
#include "calibrate/cross_validate.h"
#include "modeler/io/report_json.h"
#include "modeler/problems.h"

namespace shardplan::cli {

namespace {

using calibrate::CrossValidation;

/// The default seed of `--fit-on half`: any fixed value; stated in every report so a split can be reproduced.
constexpr uint64_t kDefaultSeed = 1;

std::string param_text(const calibrate::ParamValue& v) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s %.3g [%.3g, %.3g]%s", v.ref.label().c_str(), v.value, v.lo95, v.hi95,
                v.at_bound ? " AT BOUND" : "");
  return buf;
}

std::string stats_text(const calibrate::HeldOutStats& s) {
  return fmt("%.1f%%", s.mape) + " over " + std::to_string(s.runs) + " runs (uncalibrated " +
         fmt("%.1f%%", s.base_mape) + ")";
}

void print_cv(const CrossValidation& cv, const char* title) {
  std::printf("%s: %s\n", title, cv.scheme.c_str());
  std::printf("%-52s %-34s %10s %10s %8s %10s %8s\n", "held-out run", "group", "measured", "base", "error", "fitted",
              "error");
  std::printf("%-52s %-34s %10s %10s %8s %10s %8s\n", "", "", "(tok/s/GPU)", "", "(%)", "", "(%)");
  for (const auto& r : cv.held_out)
    std::printf("%-52s %-34s %10.1f %10.1f %+8.1f %10.1f %+8.1f%s%s\n", r.run->id.c_str(), r.group.c_str(),
                r.measured, r.base_predicted, r.base_error_pct(), r.predicted, r.error_pct(), r.run->moe ? "  MoE" : "",
                r.calibrated ? "" : "  (no run of its group to fit on: base profile)");
  std::printf("fitted parameters (value [95%% interval]):\n");
  for (const auto& f : cv.fits) {
    std::string ps;
    for (const auto& v : f.fit.params) ps += (ps.empty() ? "" : ", ") + param_text(v);
    std::printf("  %s%s, %zu runs%s: %s\n", f.group.c_str(), f.fold.empty() ? "" : (" without " + f.fold).c_str(),
                f.fitted_on.size(), f.refused() ? " (REFUSED: a parameter pinned at its range)" : "", ps.c_str());
    for (const auto& c : f.fit.prior_choices) std::printf("      prior chosen: %s\n", c.c_str());
    for (const auto& o : f.fit.out_of_range) std::printf("      %s\n", o.c_str());
  }
  for (const auto& [fold, s] : cv.by_fold) std::printf("  held out %-40s %s\n", fold.c_str(), stats_text(s).c_str());
  std::printf("held-out MAPE: dense %s; MoE %s", stats_text(cv.dense).c_str(), stats_text(cv.moe).c_str());
  if (cv.uncalibrated.runs)
    std::printf("; not calibrated (group had no run to fit on) %s", stats_text(cv.uncalibrated).c_str());
  std::printf("\n");
}

nlohmann::json stats_json(const calibrate::HeldOutStats& s) {
  return {{"runs", s.runs}, {"mape_pct", s.mape}, {"base_mape_pct", s.base_mape}};
}

nlohmann::json cv_json(const CrossValidation& cv) {
  nlohmann::json rows = nlohmann::json::array(), fits = nlohmann::json::array();
  for (const auto& r : cv.held_out)
    rows.push_back({{"id", r.run->id},
                    {"group", r.group},
                    {"fold", r.fold},
                    {"moe", r.run->moe},
                    {"calibrated", r.calibrated},
                    {"measured_tokens_per_s_per_gpu", r.measured},
                    {"base_tokens_per_s_per_gpu", r.base_predicted},
                    {"predicted_tokens_per_s_per_gpu", r.predicted},
                    {"error_pct", r.error_pct()},
                    {"base_error_pct", r.base_error_pct()}});
  for (const auto& f : cv.fits) {
    nlohmann::json params = nlohmann::json::array(), on = nlohmann::json::array();
    for (const auto& v : f.fit.params)
      params.push_back({{"name", v.ref.label()},
                        {"prior", v.prior},
                        {"value", v.value},
                        {"lo95", v.lo95},
                        {"hi95", v.hi95},
                        {"data_share", v.data_share},
                        {"at_bound", v.at_bound}});
    for (const auto* r : f.fitted_on) on.push_back(r->id);
    fits.push_back({{"group", f.group}, {"fold", f.fold}, {"fitted_on", on}, {"parameters", params},
                    {"refused", f.refused()}, {"out_of_range", f.fit.out_of_range},
                    {"prior_choices", f.fit.prior_choices}});
  }
  nlohmann::json folds;
  for (const auto& [fold, s] : cv.by_fold) folds[fold] = stats_json(s);
  return {{"scheme", cv.scheme},     {"held_out", rows},        {"fits", fits},
          {"dense", stats_json(cv.dense)}, {"moe", stats_json(cv.moe)}, {"all", stats_json(cv.all)},
          {"uncalibrated", stats_json(cv.uncalibrated)}, {"by_held_out_source", folds}};
}

}  // namespace

int run_fit_on(const std::vector<io::PublishedRun>& runs, const std::string& runs_file, const std::string& expr,
               bool json) {
  std::vector<std::pair<std::string, CrossValidation>> out;
  if (expr == "half" || expr.rfind("half:", 0) == 0) {
    uint64_t seed = kDefaultSeed;
    if (expr != "half") {
      const std::string s = expr.substr(5);
      char* end = nullptr;
      const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || s[0] == '-')
        throw ConfigError("--fit-on " + expr + ": the seed must be a non-negative integer (half:SEED)");
      seed = v;
    }
    out.emplace_back("random halves", calibrate::cross_validate_half(runs, seed));
    out.emplace_back("leave one source out", calibrate::cross_validate_sources(runs));
  } else if (expr == "sources") {
    out.emplace_back("leave one source out", calibrate::cross_validate_sources(runs));
  } else if (const size_t eq = expr.find('='); eq != std::string::npos && eq > 0) {
    out.emplace_back("filter", calibrate::cross_validate_filter(runs, expr.substr(0, eq), expr.substr(eq + 1)));
  } else {
    throw ConfigError("--fit-on " + expr + ": expected half, half:SEED, sources or FIELD=REGEX "
                      "(FIELD: id, source, framework, gpu, precision)");
  }
  if (json) {
    nlohmann::json j;
    j["schema_version"] = 1;
    io::ReportContext ctx;
    ctx.command = "validate --fit-on";
    j["context"] = io::context_json(ctx);
    j["context"]["runs_file"] = runs_file;
    j["context"]["fit_on"] = expr;
    for (const auto& [name, cv] : out)
      j[name == "random halves" ? "halves" : name == "filter" ? "filter" : "sources"] = cv_json(cv);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (i) std::printf("\n");
    print_cv(out[i].second, out[i].first.c_str());
  }
  std::string last;
  for (const auto& [name, cv] : out)
    last += (last.empty() ? "" : "; ") + name + ": dense held-out MAPE " + fmt("%.1f%%", cv.dense.mape) + " over " +
            std::to_string(cv.dense.runs) + " runs, MoE " + fmt("%.1f%%", cv.moe.mape) + " over " +
            std::to_string(cv.moe.runs);
  std::printf("\n%s\n", last.c_str());
  return 0;
}

}  // namespace shardplan::cli
