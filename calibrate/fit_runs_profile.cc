#include "calibrate/fit_runs_profile.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>

namespace shardplan::calibrate {

namespace {

std::string g4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

/// Rounded to 4 significant digits: what the fit resolves, not the solver's last bits.
double round4(double v) { return std::stod(g4(v)); }

}  // namespace

std::string parameters_text(const RunsFit& fit) {
  std::string s;
  for (const ParamValue& v : fit.params)
    s += (s.empty() ? "" : "; ") + v.ref.label() + " " + g4(v.value) + " [" + g4(v.lo95) + ", " + g4(v.hi95) + "]" +
         (v.at_bound ? " (at its bound)" : "");
  if (fit.memory_reserve_gib)
    s += (s.empty() ? "" : "; ") + std::string("memory_reserve_gib ") + g4(*fit.memory_reserve_gib) + " [" +
         g4(fit.memory_lo95) + ", " + g4(fit.memory_hi95) + "]";
  return s;
}

std::string emit_fit_runs_profile(const FitRunsProfileSpec& spec, const RunsFit& fit) {
  std::string ids;
  for (const RunFitRow& r : fit.rows) ids += (ids.empty() ? "" : ", ") + r.run->id;
  const std::string source = "calibrate fit-runs " + spec.date + ": " + std::to_string(fit.rows.size()) +
                             " measured runs of " + spec.runs_file;
  char mapes[160];
  std::snprintf(mapes, sizeof mapes, "throughput MAPE %.1f%% on the base, %.1f%% fitted, %.1f%% leave-one-out",
                fit.base_mape, fit.fit_mape, fit.loo_mape);
  std::string provenance = source + " (" + ids + "); fitted: " + parameters_text(fit) + "; " + mapes;
  if (!fit.not_fitted.empty()) {
    std::string nf;
    for (const std::string& n : fit.not_fitted) nf += (nf.empty() ? "" : ", ") + n;
    provenance += "; not fitted, the base's value kept: " + nf;
  }
  if (!fit.prior_choices.empty()) {
    std::string pc;
    for (const std::string& c : fit.prior_choices) pc += (pc.empty() ? "" : ", ") + c;
    provenance += "; prior chosen by the runs' inner leave-one-out: " + pc;
  }
  if (!spec.accepted_despite.empty()) {
    provenance += "; ACCEPTED WITH --accept-anyway DESPITE:";
    for (const std::string& a : spec.accepted_despite) provenance += " " + a + ";";
  }

  YAML::Emitter out;
  out.SetDoublePrecision(6);
  std::string comment = "Fitted by shardplan calibrate fit-runs (docs/fit-runs.md) to " +
                        std::to_string(fit.rows.size()) + " runs of " + spec.runs_file +
                        ".\nparameter: prior -> fitted [95% interval] (share of the estimate from the runs)";
  for (const ParamValue& v : fit.params) {
    char line[200];
    std::snprintf(line, sizeof line, "\n  %s: %.4g -> %.4g [%.4g, %.4g] (%.0f%%)%s", v.ref.label().c_str(), v.prior,
                  v.value, v.lo95, v.hi95, 100 * v.data_share, v.at_bound ? " AT ITS BOUND" : "");
    comment += line;
  }
  comment += "\n" + std::string(mapes);
  out << YAML::Comment(comment) << YAML::Newline;
  out << YAML::BeginMap;
  out << YAML::Key << "schema_version" << YAML::Value << 1;
  out << YAML::Key << "kind" << YAML::Value << "cluster";
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "inherits" << YAML::Value << spec.inherits;
  out << YAML::Key << "provenance" << YAML::Value << YAML::DoubleQuoted << provenance;

  const ParamValue* overhead = nullptr;
  for (const ParamValue& v : fit.params)
    if (v.ref.kind == FitParameter::kernel_overhead_us) overhead = &v;
  if (overhead) {
    out << YAML::Key << "gpu_overrides" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "efficiency" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "kernel_overhead_us" << YAML::Value << round4(overhead->value);
    out << YAML::Key << "kernel_overhead_source" << YAML::Value
        << source + ", 95% interval [" + g4(overhead->lo95) + ", " + g4(overhead->hi95) + "] us";
    out << YAML::EndMap << YAML::EndMap;
  }

  out << YAML::Key << "fitted" << YAML::Value << YAML::BeginMap;
  const auto scalar = [&](FitParameter kind) {
    for (const ParamValue& v : fit.params)
      if (v.ref.kind == kind) out << YAML::Key << fit_parameter_spec(kind).name << YAML::Value << round4(v.value);
  };
  const auto keyed = [&](FitParameter kind) {
    bool open = false;
    for (const ParamValue& v : fit.params) {
      if (v.ref.kind != kind) continue;
      if (!open) out << YAML::Key << fit_parameter_spec(kind).name << YAML::Value << YAML::Flow << YAML::BeginMap;
      open = true;
      out << YAML::Key
          << (kind == FitParameter::gemm_scale ? kDtypeNames[static_cast<size_t>(v.ref.dtype)] : v.ref.tier)
          << YAML::Value << round4(v.value);
    }
    if (open) out << YAML::EndMap;
  };
  keyed(FitParameter::gemm_scale);
  scalar(FitParameter::attention_scale);
  scalar(FitParameter::memory_bw_scale);
  keyed(FitParameter::busbw_scale);
  keyed(FitParameter::alltoall_scale);
  scalar(FitParameter::overlap_efficiency);
  scalar(FitParameter::host_layer_pass_ms);
  if (fit.memory_reserve_gib)
    out << YAML::Key << "memory_reserve_gib" << YAML::Value << round4(*fit.memory_reserve_gib);
  out << YAML::Key << "loo_errors_pct" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const RunFitRow& r : fit.rows)
    if (const auto e = r.loo_error_pct()) out << std::round(*e * 100) / 100;
  out << YAML::EndSeq;
  out << YAML::Key << "source" << YAML::Value << source;
  out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace shardplan::calibrate
