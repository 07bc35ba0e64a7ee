#include "calibrate/tables_writer.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>

namespace shardplan::calibrate {
namespace {

/// Four significant digits: the measurements' own precision (the AIC export writes 4).
double round4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return std::strtod(buf, nullptr);
}

void emit_curve(YAML::Emitter& out, const Curve& c) {
  out << YAML::BeginMap;
  out << YAML::Key << "points" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (size_t i = 0; i < c.x.size(); ++i)
    out << YAML::Flow << YAML::BeginSeq << round4(c.x[i]) << round4(c.y[i]) << YAML::EndSeq;
  out << YAML::EndSeq;
  out << YAML::Key << "source" << YAML::Value << c.source;
  out << YAML::EndMap;
}

void emit_axis(YAML::Emitter& out, const char* key, const std::vector<double>& axis) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double v : axis) out << v;
  out << YAML::EndSeq;
}

void emit_grid(YAML::Emitter& out, const Grid3& g) {
  out << YAML::BeginMap;
  emit_axis(out, "m", g.m);
  emit_axis(out, "n", g.n);
  emit_axis(out, "k", g.k);
  out << YAML::Key << "efficiency" << YAML::Value << YAML::BeginSeq;
  for (size_t i = 0; i < g.m.size(); ++i) {
    out << YAML::BeginSeq;
    for (size_t j = 0; j < g.n.size(); ++j) {
      out << YAML::Flow << YAML::BeginSeq;
      for (size_t l = 0; l < g.k.size(); ++l) out << round4(g.values[(i * g.n.size() + j) * g.k.size() + l]);
      out << YAML::EndSeq;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "source" << YAML::Value << g.source;
  out << YAML::EndMap;
}

std::string residual_text(const std::map<std::string, Residuals>& res) {
  std::string s;
  for (const auto& [what, r] : res) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s%s %d rows median %.1f%% max %.1f%%", s.empty() ? "" : "; ", what.c_str(),
                  r.rows, 100 * r.median_rel, 100 * r.max_rel);
    s += buf;
  }
  return s;
}

}  // namespace

std::string emit_tables(const TablesSpec& spec, const TablesFit& fit) {
  YAML::Emitter out;
  out.SetDoublePrecision(6);
  out << YAML::BeginMap;
  out << YAML::Key << "schema_version" << YAML::Value << 1;
  out << YAML::Key << "kind" << YAML::Value << "gpu_tables";
  out << YAML::Key << "gpu" << YAML::Value << spec.gpu;
  out << YAML::Key << "provenance" << YAML::Value
      << spec.provenance + "; fit residuals (|predicted - measured| / measured on the fitted rows): " +
             residual_text(fit.res);
  out << YAML::Key << "sources" << YAML::Value << YAML::BeginSeq;
  for (const auto& s : spec.sources) out << s;
  out << YAML::EndSeq;
  if (!fit.gemm.empty() || !fit.gemm_fp8_block.empty()) {
    out << YAML::Key << "gemm" << YAML::Value << YAML::BeginMap;
    for (const auto& [dtype, grid] : fit.gemm) {
      out << YAML::Key << kDtypeNames[static_cast<int>(dtype)] << YAML::Value;
      emit_grid(out, grid);
    }
    if (!fit.gemm_fp8_block.empty()) {
      out << YAML::Key << "fp8_block" << YAML::Value;
      emit_grid(out, fit.gemm_fp8_block);
    }
    out << YAML::EndMap;
  }
  if (fit.attention_kernel) {
    out << YAML::Key << "attention" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << kAttentionKernelNames[static_cast<int>(*fit.attention_kernel)] << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "fwd" << YAML::Value;
    emit_curve(out, fit.attention_fwd);
    out << YAML::Key << "bwd" << YAML::Value;
    emit_curve(out, fit.attention_bwd);
    out << YAML::EndMap << YAML::EndMap;
  }
  if (!fit.busbw.empty()) {
    out << YAML::Key << "scale_up" << YAML::Value << YAML::BeginMap;
    if (fit.scale_up_latency_s)
      out << YAML::Key << "latency_us" << YAML::Value << round4(*fit.scale_up_latency_s * 1e6);
    out << YAML::Key << "busbw_eff" << YAML::Value << YAML::BeginMap;
    for (const auto& [c, curve] : fit.busbw) {
      out << YAML::Key << collective_name(c) << YAML::Value;
      emit_curve(out, curve);
    }
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace shardplan::calibrate
