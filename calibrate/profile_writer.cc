#include "calibrate/profile_writer.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

namespace shardplan::calibrate {
namespace {

void emit_curve(YAML::Emitter& out, const Curve& c) {
  out << YAML::BeginMap;
  out << YAML::Key << "points" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (size_t i = 0; i < c.x.size(); ++i) out << YAML::Flow << YAML::BeginSeq << c.x[i] << c.y[i] << YAML::EndSeq;
  out << YAML::EndSeq;
  out << YAML::Key << "policy" << YAML::Value << (c.policy == OutOfRange::error ? "error" : "clamp");
  out << YAML::Key << "source" << YAML::Value << c.source;
  out << YAML::EndMap;
}

std::string residual_text(const Residuals& r) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%d rows, median error %.1f%%, max %.1f%%", r.rows, 100 * r.median_rel,
                100 * r.max_rel);
  return buf;
}

void emit_gpu_overrides(YAML::Emitter& out, const Fit& fit, const std::string& source) {
  const GpuFit& g = fit.gpu;
  if (!g.kernel_overhead_s && !g.memory && g.gemm.empty() && g.attention.empty()) return;
  out << YAML::Key << "gpu_overrides" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "efficiency" << YAML::Value << YAML::BeginMap;
  if (!g.gemm.empty()) {
    out << YAML::Key << "gemm" << YAML::Value << YAML::BeginMap;
    for (const auto& [dtype, curve] : g.gemm) {
      out << YAML::Key << kDtypeNames[static_cast<int>(dtype)] << YAML::Value;
      emit_curve(out, curve);
    }
    out << YAML::EndMap;
  }
  if (!g.attention.empty()) {
    out << YAML::Key << "attention" << YAML::Value << YAML::BeginMap;
    std::string open;
    for (const auto& [key, curve] : g.attention) {
      if (key.first != open) {
        if (!open.empty()) out << YAML::EndMap;
        out << YAML::Key << key.first << YAML::Value << YAML::BeginMap;
        open = key.first;
      }
      out << YAML::Key << (key.second ? "bwd" : "fwd") << YAML::Value;
      emit_curve(out, curve);
    }
    out << YAML::EndMap << YAML::EndMap;
  }
  if (g.memory) {
    out << YAML::Key << "memory" << YAML::Value;
    emit_curve(out, *g.memory);
  }
  if (g.kernel_overhead_s) {
    out << YAML::Key << "kernel_overhead_us" << YAML::Value << *g.kernel_overhead_s * 1e6;
    out << YAML::Key << "kernel_overhead_source" << YAML::Value
        << source + ": intercept of the streaming-kernel fit t = overhead + bytes/bw";
  }
  out << YAML::EndMap << YAML::EndMap;
}

void emit_tier(YAML::Emitter& out, const Tier& t, const TierFit* fit, const std::string& source) {
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << t.name;
  out << YAML::Key << "domain_gpus" << YAML::Value << t.domain_gpus;
  out << YAML::Key << "bw_per_gpu_gbps" << YAML::Value << t.bw_per_gpu.v / 1e9;
  out << YAML::Key << "latency_us" << YAML::Value << (fit ? fit->ab.alpha_s : t.latency.v) * 1e6;
  out << YAML::Key << "oversubscription" << YAML::Value << t.oversubscription;
  const Curve& busbw = fit ? fit->busbw_eff : t.busbw_eff;
  if (!busbw.empty()) {
    out << YAML::Key << "busbw_eff" << YAML::Value;
    emit_curve(out, busbw);
  }
  const Curve& p2p = fit && fit->p2p_eff ? *fit->p2p_eff : t.p2p_eff;
  if (!p2p.empty()) {
    out << YAML::Key << "p2p_eff" << YAML::Value;
    emit_curve(out, p2p);
  }
  std::vector<std::string> sources = t.sources;
  if (fit) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "%s: latency_us and busbw_eff fitted (latency %.2f us per step, bus bandwidth %.1f GB/s = %.0f%% of "
                  "bw_per_gpu; %s)",
                  source.c_str(), fit->ab.alpha_s * 1e6, fit->ab.bw_Bps / 1e9, 100 * fit->ab.bw_Bps / t.bw_per_gpu.v,
                  residual_text(fit->res).c_str());
    sources.push_back(buf);
  }
  out << YAML::Key << "sources" << YAML::Value << YAML::BeginSeq;
  for (const auto& s : sources) out << s;
  out << YAML::EndSeq << YAML::EndMap;
}

}  // namespace

std::string emit_profile(const ProfileSpec& spec, const System& base, const Fit& fit) {
  YAML::Emitter out;
  out.SetDoublePrecision(6);
  out << YAML::BeginMap;
  out << YAML::Key << "schema_version" << YAML::Value << 1;
  out << YAML::Key << "kind" << YAML::Value << "cluster";
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "inherits" << YAML::Value << spec.inherits;
  out << YAML::Key << "provenance" << YAML::Value << spec.provenance;
  out << YAML::Key << "sources" << YAML::Value << YAML::BeginSeq << spec.source + " (shardplan calibrate)"
      << YAML::EndSeq;
  emit_gpu_overrides(out, fit, spec.source);
  if (!fit.tiers.empty()) {
    out << YAML::Key << "tiers" << YAML::Value << YAML::BeginSeq;
    for (size_t i = 0; i < base.tiers.size(); ++i) {
      const TierFit* tf = nullptr;
      for (const TierFit& f : fit.tiers)
        if (f.tier == static_cast<int>(i)) tf = &f;
      emit_tier(out, base.tiers[i], tf, spec.source);
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  if (!out.good()) throw std::logic_error("YAML emitter: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

}  // namespace shardplan::calibrate
