#include "modeler/io/gpu_tables_io.h"

#include <cmath>

#include "modeler/io/yaml_reader.h"

namespace shardplan::io {
namespace {

// Efficiencies are fractions of a datasheet rate; above 1 only NVLS all-reduce (system_io.cc states the bound).
constexpr double kMaxEfficiency = 1.2;

void reject_unknown(const YAML::Node& map, const std::string& file, const std::string& path,
                    const std::vector<std::string>& keys) {
  MapReader probe(map, file, path);
  for (const std::string& k : keys) probe.opt_node(k);
  probe.finish();
}

std::vector<double> axis(MapReader& r, const std::string& key) {
  const YAML::Node seq = r.sequence(key);
  std::vector<double> out;
  for (size_t i = 0; i < seq.size(); ++i) {
    double v = 0;
    if (!seq[i].IsScalar() || !YAML::convert<double>::decode(seq[i], v) || !(v > 0) ||
        (!out.empty() && v <= out.back()))
      throw ConfigError(where(seq[i], r.file()) + r.key_path(key) + "[" + std::to_string(i) +
                        "]: expected positive, strictly increasing numbers");
    out.push_back(v);
  }
  if (out.empty()) r.fail(key, "expected at least one point");
  return out;
}

/// {m: [...], n: [...], k: [...], efficiency: [[[v per k] per n] per m], source: "..."}
Grid3 read_grid(const YAML::Node& node, const std::string& file, const std::string& path, Problems& problems) {
  reject_unknown(node, file, path, {"m", "n", "k", "efficiency", "source"});
  MapReader r(node, file, path);
  Grid3 g;
  g.m = axis(r, "m");
  g.n = axis(r, "n");
  g.k = axis(r, "k");
  const YAML::Node eff = r.sequence("efficiency");
  const auto bad_shape = [&](const YAML::Node& at, const std::string& what) {
    throw ConfigError(where(at, file) + path + ".efficiency" + what + ": expected " + std::to_string(g.m.size()) +
                      " x " + std::to_string(g.n.size()) + " x " + std::to_string(g.k.size()) +
                      " values (m, then n, then k)");
  };
  if (eff.size() != g.m.size()) bad_shape(eff, "");
  for (size_t i = 0; i < g.m.size(); ++i) {
    const YAML::Node ni = eff[i];
    if (!ni.IsSequence() || ni.size() != g.n.size()) bad_shape(ni, "[" + std::to_string(i) + "]");
    for (size_t j = 0; j < g.n.size(); ++j) {
      const YAML::Node kj = ni[j];
      const std::string at = "[" + std::to_string(i) + "][" + std::to_string(j) + "]";
      if (!kj.IsSequence() || kj.size() != g.k.size()) bad_shape(kj, at);
      for (size_t l = 0; l < g.k.size(); ++l) {
        double v = 0;
        if (!kj[l].IsScalar() || !YAML::convert<double>::decode(kj[l], v) || !std::isfinite(v))
          throw ConfigError(where(kj[l], file) + path + ".efficiency" + at + "[" + std::to_string(l) +
                            "]: expected a number");
        if (!(v > 0 && v <= kMaxEfficiency))
          problems.push_back({"efficiency_range", where(kj[l], file) + path + ".efficiency" + at + "[" +
                                                      std::to_string(l) + "]: efficiency " + num(v) +
                                                      " is outside (0, " + num(kMaxEfficiency) + "]"});
        g.values.push_back(v);
      }
    }
  }
  g.source = r.string("source");
  r.finish();
  g.index();
  return g;
}

Curve fraction_curve(const YAML::Node& node, const std::string& file, const std::string& path, Problems& problems) {
  Curve c = parse_curve(node, file, path);
  for (size_t i = 0; i < c.y.size(); ++i)
    if (!(c.y[i] > 0 && c.y[i] <= kMaxEfficiency))
      problems.push_back({"efficiency_range", where(node["points"][i], file) + path + ".points[" + std::to_string(i) +
                                                  "]: efficiency " + num(c.y[i]) + " is outside (0, " +
                                                  num(kMaxEfficiency) + "]"});
  return c;
}

}  // namespace

void apply_gpu_tables(std::string_view text, const std::string& filename, GpuProfile* profile) {
  const YAML::Node doc = parse_yaml(text, filename);
  reject_unknown(doc, filename, "", {"schema_version", "kind", "gpu", "provenance", "sources", "gemm", "attention",
                                     "scale_up"});
  MapReader r(doc, filename, "");
  Problems problems;
  const double version = r.number("schema_version");
  if (version != 1)
    r.fail("schema_version", "unsupported schema_version " + num(version) + " (this shardplan reads 1)");
  r.choice("kind", {"gpu_tables"});
  Gpu& gpu = profile->gpu;
  // The GPU the tables were measured on. A profile of the same die may name them (h100-sxm5-96gb: H100 SXM5
  // compute and board, other memory), which its own file states and sources.
  r.string("gpu");
  r.string("provenance");
  r.sequence("sources");

  if (auto gemm = r.opt_map("gemm")) {
    for (int d = 0; d < kNumDtypes; ++d) {
      const std::string dtype = kDtypeNames[static_cast<size_t>(d)];
      const YAML::Node n = gemm->opt_node(dtype);
      if (!n.IsDefined() || n.IsNull()) continue;
      if (gpu.peak[static_cast<size_t>(d)].v <= 0)
        gemm->fail(dtype, "a table for a dtype without a peak (the profile's peak_tflops." + dtype + " is absent)");
      gpu.eff.gemm_grid[static_cast<size_t>(d)] = read_grid(n, filename, gemm->key_path(dtype), problems);
    }
    // Block-scaled fp8 GEMMs (gemm_model.h Fp8Scaling::block), run at the fp8 peak.
    const YAML::Node block = gemm->opt_node("fp8_block");
    if (block.IsDefined() && !block.IsNull()) {
      if (gpu.peak_for(Dtype::fp8).v <= 0)
        gemm->fail("fp8_block", "a table for a dtype without a peak (the profile's peak_tflops.fp8 is absent)");
      gpu.eff.gemm_grid_fp8_block = read_grid(block, filename, gemm->key_path("fp8_block"), problems);
    }
    gemm->finish();
  }
  if (auto attn = r.opt_map("attention")) {
    for (int k = 0; k < kNumAttentionKernels; ++k) {
      const std::string kernel = kAttentionKernelNames[static_cast<size_t>(k)];
      auto kr = attn->opt_map(kernel);
      if (!kr) continue;
      reject_unknown(doc["attention"][kernel], filename, attn->key_path(kernel), {"fwd", "bwd"});
      for (const bool bwd : {false, true}) {
        const std::string dir = bwd ? "bwd" : "fwd";
        const YAML::Node n = kr->opt_node(dir);
        if (!n.IsDefined() || n.IsNull()) kr->fail_here("missing required key '" + kr->key_path(dir) + "'");
        Curve c = fraction_curve(n, filename, kr->key_path(dir), problems);
        (bwd ? gpu.eff.attention_bwd : gpu.eff.attention_fwd)[static_cast<size_t>(k)] = std::move(c);
      }
      kr->finish();
    }
    attn->finish();
  }
  if (auto up = r.opt_map("scale_up")) {
    if (const auto latency = up->opt_number("latency_us")) {
      if (*latency < 0) up->fail("latency_us", "expected a number >= 0, got " + num(*latency));
      profile->node.scale_up.latency = us(*latency);
    }
    auto eff = up->map("busbw_eff");
    for (int c = 0; c < kNumCollectives; ++c) {
      const std::string coll = kCollectiveNames[static_cast<size_t>(c)];
      const YAML::Node n = eff.opt_node(coll);
      if (!n.IsDefined() || n.IsNull()) continue;
      profile->node.scale_up.busbw_eff_by[static_cast<size_t>(c)] =
          fraction_curve(n, filename, eff.key_path(coll), problems);
    }
    eff.finish();
    up->finish();
  }
  r.finish();
  if (!problems.empty()) throw ConfigError(join_problems(problems));
}

}  // namespace shardplan::io
