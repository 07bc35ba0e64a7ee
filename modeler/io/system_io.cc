#include "modeler/io/system_io.h"

#include <cmath>
#include <optional>
#include <sstream>

#include "modeler/io/gpu_tables_io.h"
#include "modeler/fit_parameters.h"
#include "modeler/io/paths.h"
#include "modeler/io/yaml_reader.h"

namespace shardplan::io {
namespace {

// Efficiencies are fractions of a datasheet rate. Above 1 is legitimate for NVLS all-reduce, whose busbw is
// ~1.07x the NVLink line rate on 8x H100 (nccl-tests#212, hardware.md 3.1); 1.2 leaves room for that and nothing
// more, so a percentage typed as 80 instead of 0.80 is caught.
constexpr double kMaxEfficiency = 1.2;
constexpr int kMaxInheritDepth = 8;
const std::vector<std::string> kYamlExt = {".yaml"};


/// "file:line: path.key: message" at a key of `map` (the map's own line when the key is absent).
std::string at_key(const YAML::Node& map, const MapReader& r, const std::string& key, const std::string& message) {
  const YAML::Node v = map[key];
  return where(v.IsDefined() ? v : map, r.file()) + r.key_path(key) + ": " + message;
}

/// Rejects keys outside `keys` before any required key is read, so a misspelled required key is reported as the
/// typo it is ("did you mean") rather than as a missing key.
void reject_unknown(const YAML::Node& map, const std::string& file, const std::string& path,
                    const std::vector<std::string>& keys) {
  MapReader probe(map, file, path);
  for (const std::string& k : keys) probe.opt_node(k);
  probe.finish();
}

/// A node that must be present (not null); marks the key as known.
YAML::Node required_node(MapReader& r, const std::string& key) {
  const YAML::Node v = r.opt_node(key);
  if (!v.IsDefined() || v.IsNull()) r.fail_here("missing required key '" + r.key_path(key) + "'");
  return v;
}

/// An efficiency table: a curve whose values are fractions in (0, kMaxEfficiency].
std::optional<Curve> opt_fraction(MapReader& r, const std::string& key, Problems& problems) {
  const YAML::Node node = r.opt_node(key);
  if (!node.IsDefined() || node.IsNull()) return std::nullopt;
  const std::string path = r.key_path(key);
  Curve c = parse_curve(node, r.file(), path);
  const YAML::Node points = node["points"];
  for (size_t i = 0; i < c.y.size(); ++i)
    if (c.y[i] > kMaxEfficiency)
      problems.push_back({"efficiency_range", where(points[i], r.file()) + path + ".points[" + std::to_string(i) +
                                                  "]: efficiency " + num(c.y[i]) + " is outside (0, " +
                                                  num(kMaxEfficiency) + "]"});
  return c;
}

Curve fraction(MapReader& r, const std::string& key, Problems& problems) {
  auto c = opt_fraction(r, key, problems);
  if (!c) r.fail_here("missing required key '" + r.key_path(key) + "'");
  return *c;
}

/// A non-empty list of strings (the `sources` of every profile and tier).
std::vector<std::string> string_list(MapReader& r, const std::string& key) {
  const YAML::Node seq = r.sequence(key);
  std::vector<std::string> out;
  for (size_t i = 0; i < seq.size(); ++i) {
    if (!seq[i].IsScalar() || seq[i].Scalar().empty())
      throw ConfigError(where(seq[i], r.file()) + r.key_path(key) + "[" + std::to_string(i) +
                        "]: expected a non-empty string");
    out.push_back(seq[i].Scalar());
  }
  if (out.empty()) r.fail(key, "expected at least one source");
  return out;
}

void read_header(MapReader& r, const YAML::Node& map, const std::string& kind) {
  const double version = r.number("schema_version");
  if (version != 1) throw ConfigError(at_key(map, r, "schema_version", "unsupported schema_version " + num(version) +
                                                                          " (this shardplan reads 1)"));
  r.choice("kind", {kind});
}

Tier read_tier(const YAML::Node& node, const std::string& file, const std::string& path, Problems& problems) {
  reject_unknown(node, file, path, {"name", "domain_gpus", "bw_per_gpu_gbps", "latency_us", "oversubscription",
                                    "busbw_eff", "p2p_eff", "sources"});
  MapReader r(node, file, path);
  Tier t;
  t.name = r.string("name");
  t.domain_gpus = r.opt_int("domain_gpus", 0, 1 << 30).value_or(0);
  t.bw_per_gpu = GBps(r.positive("bw_per_gpu_gbps"));
  const double latency = r.number("latency_us");
  if (latency < 0)
    problems.push_back({"tier", at_key(node, r, "latency_us", "expected a number >= 0, got " + num(latency))});
  t.latency = us(latency);
  t.oversubscription = r.opt_number("oversubscription").value_or(1.0);
  if (t.oversubscription < 1)
    problems.push_back({"tier", at_key(node, r, "oversubscription",
                                       "expected a ratio >= 1 (1 = full bisection), got " + num(t.oversubscription))});
  t.busbw_eff = fraction(r, "busbw_eff", problems);
  if (auto p2p = opt_fraction(r, "p2p_eff", problems)) t.p2p_eff = *p2p;
  t.sources = string_list(r, "sources");
  r.finish();
  return t;
}

/// Checks a tier list (innermost first) against the node size: inner tiers bound their domain, domains grow
/// outwards, and each bounded domain is whole nodes or a whole fraction of one.
void check_tiers(const std::vector<Tier>& tiers, const std::vector<YAML::Node>& nodes, const std::string& file,
                 const std::vector<std::string>& paths, int gpus_per_node, Problems& problems) {
  for (size_t i = 0; i < tiers.size(); ++i) {
    const int d = tiers[i].domain_gpus;
    const std::string here = where(nodes[i]["domain_gpus"].IsDefined() ? nodes[i]["domain_gpus"] : nodes[i], file) +
                             paths[i] + ".domain_gpus: ";
    if (d == 0) {
      if (i + 1 < tiers.size())
        problems.push_back({"tier", here + "only the outermost tier may be unbounded (0); '" + tiers[i].name +
                                        "' is inside '" + tiers[i + 1].name + "'"});
      continue;
    }
    if (i > 0 && d <= tiers[i - 1].domain_gpus)
      problems.push_back({"tier", here + std::to_string(d) + " GPUs is not larger than the inner tier '" +
                                      tiers[i - 1].name + "' (" + std::to_string(tiers[i - 1].domain_gpus) + ")"});
    if (d % gpus_per_node != 0 && gpus_per_node % d != 0)
      problems.push_back({"tier", here + std::to_string(d) +
                                      " GPUs is neither a multiple nor a divisor of gpus_per_node (" +
                                      std::to_string(gpus_per_node) + ")"});
  }
}

void throw_if_any(const Problems& problems) {
  if (!problems.empty()) throw ConfigError(join_problems(problems));
}

std::string resolve_from(const YAML::Node& ref, const std::string& file, const std::string& key,
                         const std::string& dir, const std::string& what);

/// Applies the GPU file's `tables:` (hwprofiles/tables/<name>.yaml) to the profile, except the tables that
/// `overrides` (a cluster's gpu_overrides) states itself: a calibrated curve replaces the shipped measurement.
void apply_tables(const YAML::Node& ref, const std::string& file, const YAML::Node& overrides, GpuProfile* p) {
  const std::string tables_file = resolve_from(ref, file, "tables", "hwprofiles/tables", "GPU tables");
  const ComputeEfficiency before = p->gpu.eff;
  apply_gpu_tables(read_file(tables_file), tables_file, p);
  if (!overrides.IsDefined() || !overrides.IsMap()) return;
  const YAML::Node eff = overrides["efficiency"];
  if (!eff.IsDefined() || !eff.IsMap()) return;
  const YAML::Node gemm = eff["gemm"];
  for (int d = 0; d < kNumDtypes; ++d)
    if (gemm.IsDefined() && gemm.IsMap() && gemm[kDtypeNames[static_cast<size_t>(d)]].IsDefined())
      p->gpu.eff.gemm_grid[static_cast<size_t>(d)] = Grid3{};
  // An override of the fp8 curve calibrates fp8 GEMMs; the shipped block-scaled grid would not reflect it.
  if (gemm.IsDefined() && gemm.IsMap() && gemm["fp8"].IsDefined()) p->gpu.eff.gemm_grid_fp8_block = Grid3{};
  const YAML::Node attn = eff["attention"];
  for (int k = 0; k < kNumAttentionKernels; ++k)
    if (attn.IsDefined() && attn.IsMap() && attn[kAttentionKernelNames[static_cast<size_t>(k)]].IsDefined()) {
      p->gpu.eff.attention_fwd[static_cast<size_t>(k)] = before.attention_fwd[static_cast<size_t>(k)];
      p->gpu.eff.attention_bwd[static_cast<size_t>(k)] = before.attention_bwd[static_cast<size_t>(k)];
    }
}

GpuProfile read_gpu(const YAML::Node& doc, const std::string& file, const std::string& path,
                    const YAML::Node& overrides = YAML::Node()) {
  reject_unknown(doc, file, path, {"schema_version", "kind", "name", "sources", "peak_tflops", "hbm_capacity_gib",
                                   "hbm_bw_gbps", "l2_mib", "sm_count", "host_link_gbps", "unified_memory", "tdp_w",
                                   "compute_capability", "efficiency", "node",
                                   "scale_out", "host_memory_gib_per_gpu", "host_memory_bw_gbps_per_gpu",
                                   "nvme_gib_per_gpu", "nvme_read_gbps_per_gpu", "nvme_write_gbps_per_gpu", "tables"});
  MapReader r(doc, file, path);
  Problems problems;
  GpuProfile p;
  Gpu& g = p.gpu;
  read_header(r, doc, "gpu");
  g.name = r.string("name");
  g.sources = string_list(r, "sources");

  MapReader peaks = r.map("peak_tflops");
  for (int d = 0; d < kNumDtypes; ++d)
    g.peak[static_cast<size_t>(d)] = TFlops(peaks.opt_positive(kDtypeNames[static_cast<size_t>(d)]).value_or(0.0));
  peaks.finish();
  if (g.peak_for(Dtype::bf16).v <= 0 && g.peak_for(Dtype::fp16).v <= 0)
    problems.push_back({"gpu", at_key(doc, r, "peak_tflops",
                                      "needs a bf16 or fp16 peak (attention efficiencies refer to the 16-bit peak)")});

  g.hbm_capacity = GiB(r.positive("hbm_capacity_gib"));
  g.hbm_bw = GBps(r.positive("hbm_bw_gbps"));
  g.l2 = MiB(r.positive("l2_mib"));
  g.sm_count = r.positive_int("sm_count");
  // A unified-memory part reads the host's DRAM itself: it has no host link to state (system.h).
  g.unified_memory = r.opt_boolean("unified_memory").value_or(false);
  if (!g.unified_memory) g.host_link_bw = GBps(r.positive("host_link_gbps"));
  else if (r.has("host_link_gbps"))
    r.fail("host_link_gbps", "a unified_memory part has no host link (its GPU reads the host's DRAM)");
  g.tdp_w = r.opt_positive("tdp_w").value_or(0);
  // NVIDIA's compute capabilities run from 1.0 (Tesla) to 12.x (Blackwell GeForce) with one minor digit
  // (developer.nvidia.com/cuda-gpus); anything else is a typo (75 for 7.5).
  if (auto cc = r.opt_number_in("compute_capability", 1.0, 19.9)) {
    if (std::abs(*cc * 10 - std::round(*cc * 10)) > 1e-9)
      r.fail("compute_capability", "expected major.minor with one minor digit (7.5), got " + num(*cc));
    g.compute_capability = *cc;
  }

  const YAML::Node eff_node = required_node(r, "efficiency");
  reject_unknown(eff_node, file, r.key_path("efficiency"),
                 {"gemm", "gemm_k", "attention", "memory", "kernel_overhead_us", "kernel_overhead_source"});
  MapReader eff(eff_node, file, r.key_path("efficiency"));
  const YAML::Node gemm_node = required_node(eff, "gemm");
  reject_unknown(gemm_node, file, eff.key_path("gemm"), {kDtypeNames.begin(), kDtypeNames.end()});
  MapReader gemm(gemm_node, file, eff.key_path("gemm"));
  for (int d = 0; d < kNumDtypes; ++d) {
    const std::string dtype = kDtypeNames[static_cast<size_t>(d)];
    // bf16's table is required: it is also the fallback for dtypes without their own (system.h).
    auto c =
        dtype == "bf16" ? std::optional<Curve>(fraction(gemm, dtype, problems)) : opt_fraction(gemm, dtype, problems);
    if (!c) continue;
    if (dtype != "bf16" && g.peak[static_cast<size_t>(d)].v <= 0)
      problems.push_back({"gpu", at_key(gemm_node, gemm, dtype, "a table for a dtype without a peak (peak_tflops." +
                                                                    dtype + " is absent or null)")});
    g.eff.gemm[static_cast<size_t>(d)] = *c;
  }
  gemm.finish();
  if (auto k = opt_fraction(eff, "gemm_k", problems)) g.eff.gemm_k = *k;

  const YAML::Node attn_node = required_node(eff, "attention");
  reject_unknown(attn_node, file, eff.key_path("attention"), {"flash2", "flash3", "flash1"});
  MapReader attn(attn_node, file, eff.key_path("attention"));
  const auto& kernels = kAttentionKernelNames;
  for (int k = 0; k < kNumAttentionKernels; ++k) {
    // flash2 is required: it is what a GPU without Hopper-class kernels runs, and the fallback (system.h).
    const YAML::Node kn = k == 0 ? required_node(attn, kernels[k]) : attn.opt_node(kernels[k]);
    if (!kn.IsDefined() || kn.IsNull()) continue;
    reject_unknown(kn, file, attn.key_path(kernels[k]), {"fwd", "bwd"});
    MapReader kr(kn, file, attn.key_path(kernels[k]));
    g.eff.attention_fwd[static_cast<size_t>(k)] = fraction(kr, "fwd", problems);
    g.eff.attention_bwd[static_cast<size_t>(k)] = fraction(kr, "bwd", problems);
    kr.finish();
  }
  attn.finish();
  g.eff.memory = fraction(eff, "memory", problems);
  const double overhead = eff.number("kernel_overhead_us");
  if (overhead < 0)
    problems.push_back(
        {"gpu", at_key(eff_node, eff, "kernel_overhead_us", "expected a number >= 0, got " + num(overhead))});
  g.eff.kernel_overhead = us(overhead);
  if (eff.string("kernel_overhead_source").empty())
    eff.fail("kernel_overhead_source", "every constant names its source");
  eff.finish();

  const YAML::Node node_node = required_node(r, "node");
  reject_unknown(node_node, file, r.key_path("node"), {"gpus_per_node", "scale_up"});
  MapReader node(node_node, file, r.key_path("node"));
  p.node.gpus_per_node = node.positive_int("gpus_per_node");
  const YAML::Node up = required_node(node, "scale_up");
  p.node.scale_up = read_tier(up, file, node.key_path("scale_up"), problems);
  node.finish();
  const YAML::Node out = required_node(r, "scale_out");
  p.node.scale_out = read_tier(out, file, r.key_path("scale_out"), problems);
  p.node.host_memory_per_gpu = GiB(r.positive("host_memory_gib_per_gpu"));
  if (const auto bw = r.opt_positive("host_memory_bw_gbps_per_gpu")) p.node.host_memory_bw_per_gpu = GBps(*bw);
  if (const auto v = r.opt_positive("nvme_gib_per_gpu")) p.node.nvme_per_gpu = GiB(*v);
  if (const auto v = r.opt_positive("nvme_read_gbps_per_gpu")) p.node.nvme_read_bw_per_gpu = GBps(*v);
  if (const auto v = r.opt_positive("nvme_write_gbps_per_gpu")) p.node.nvme_write_bw_per_gpu = GBps(*v);
  const YAML::Node tables = r.opt_node("tables");
  r.finish();
  if (tables.IsDefined() && !tables.IsNull()) apply_tables(tables, file, overrides, &p);

  if (p.node.scale_up.domain_gpus == 0)
    problems.push_back({"tier", where(up, file) + node.key_path("scale_up") +
                                    ".domain_gpus: the scale-up tier must bound its domain (got 0)"});
  if (p.node.scale_out.domain_gpus != 0)
    problems.push_back({"tier", where(out["domain_gpus"], file) + r.key_path("scale_out") +
                                    ".domain_gpus: the scale-out network spans the whole cluster (0 or absent), got " +
                                    std::to_string(p.node.scale_out.domain_gpus)});
  check_tiers({p.node.scale_up}, {up}, file, {node.key_path("scale_up")}, p.node.gpus_per_node, problems);
  throw_if_any(problems);
  return p;
}

/// overlay deep-merged onto base: maps merge key by key, anything else in overlay replaces. Builds new map nodes
/// and shares the leaves, so neither input changes and values keep the line of the file they came from.
YAML::Node merged(const YAML::Node& overlay, const YAML::Node& base) {
  if (!overlay.IsMap() || !base.IsMap()) return overlay;
  YAML::Node out(YAML::NodeType::Map);
  // A non-scalar key (`[a, b]: 1`) is carried over unmerged, for the reader's finish() to report with its line.
  for (auto it = base.begin(); it != base.end(); ++it) {
    const YAML::Node ov = it->first.IsScalar() ? overlay[it->first.Scalar()] : YAML::Node();
    out[it->first] = ov.IsDefined() ? merged(ov, it->second) : it->second;
  }
  for (auto it = overlay.begin(); it != overlay.end(); ++it)
    if (!it->first.IsScalar() || !base[it->first.Scalar()].IsDefined()) out[it->first] = it->second;
  return out;
}

std::string resolve_from(const YAML::Node& ref, const std::string& file, const std::string& key,
                         const std::string& dir, const std::string& what) {
  if (!ref.IsScalar()) throw ConfigError(where(ref, file) + key + ": expected a " + what + " name or path");
  try {
    return resolve_data_file(ref.Scalar(), dir, kYamlExt, what);
  } catch (const ConfigError& e) {
    throw ConfigError(where(ref, file) + key + ": " + e.what());
  }
}

System read_cluster(const YAML::Node& doc, const std::string& file, int gpus);

/// The cluster document with its `inherits` chain merged in; each ancestor is validated under its own file name.
YAML::Node with_ancestors(const YAML::Node& doc, const std::string& file, int depth) {
  if (!doc.IsMap()) return doc;
  const YAML::Node ref = doc["inherits"];
  if (!ref.IsDefined() || ref.IsNull()) return doc;
  if (depth >= kMaxInheritDepth)
    throw ConfigError(where(ref, file) + "inherits: more than " + std::to_string(kMaxInheritDepth) +
                      " levels of inheritance (a cycle?)");
  const std::string base_file = resolve_from(ref, file, "inherits", "hwprofiles/clusters", "cluster");
  const YAML::Node base = with_ancestors(parse_yaml(read_file(base_file), base_file), base_file, depth + 1);
  read_cluster(base, base_file, 0);
  return merged(doc, base);
}

/// A profile's `fitted:` block (calibrate fit-runs, docs/fit-runs.md): scales on the tables above, each within
/// the range of modeler/fit_parameters.h, applied once the GPU's tables and the tiers are known.
void read_fitted(const YAML::Node& node, const std::string& file, System* s, Problems& problems) {
  reject_unknown(node, file, "fitted",
                 {"gemm_scale", "attention_scale", "memory_bw_scale", "busbw_scale", "alltoall_scale",
                  "overlap_efficiency", "host_layer_pass_ms", "memory_reserve_gib", "loo_errors_pct", "source"});
  MapReader r(node, file, "fitted");
  const auto in_range = [&](const YAML::Node& map, MapReader& m, const std::string& key,
                            FitParameter p) -> std::optional<double> {
    const FitParameterSpec& spec = fit_parameter_spec(p);
    const std::optional<double> v = m.opt_number(key);
    if (v && !(*v >= spec.lo && *v <= spec.hi)) {
      problems.push_back({"fitted", at_key(map, m, key, num(*v) + " is outside the physical range [" + num(spec.lo) +
                                                            ", " + num(spec.hi) + "] (" + spec.why + ")")});
      return std::nullopt;
    }
    return v;
  };
  if (std::optional<MapReader> gemm = r.opt_map("gemm_scale")) {
    // bf16 last: a dtype that falls back to bf16's tables takes a copy of them unscaled (scale_gemm_efficiency).
    for (int d : {0, 1, 3, 4, 5, 2})
      if (const auto k = in_range(node["gemm_scale"], *gemm, kDtypeNames[static_cast<size_t>(d)],
                                  FitParameter::gemm_scale)) {
        if (s->gpu.peak[static_cast<size_t>(d)].v <= 0)
          problems.push_back({"fitted", file + ": fitted.gemm_scale." + kDtypeNames[static_cast<size_t>(d)] +
                                            ": the GPU states no peak of that dtype"});
        else
          scale_gemm_efficiency(&s->gpu, static_cast<Dtype>(d), *k);
      }
    gemm->finish();
  }
  if (const auto k = in_range(node, r, "attention_scale", FitParameter::attention_scale))
    scale_attention_efficiency(&s->gpu, *k);
  if (const auto k = in_range(node, r, "memory_bw_scale", FitParameter::memory_bw_scale))
    scale_memory_efficiency(&s->gpu, *k);
  // A tier with an alltoall_scale of its own: busbw_scale leaves its all-to-all alone (fit_parameters.h).
  std::vector<std::optional<double>> alltoall(s->tiers.size());
  if (std::optional<MapReader> a2a = r.opt_map("alltoall_scale")) {
    for (size_t i = 0; i < s->tiers.size(); ++i)
      alltoall[i] = in_range(node["alltoall_scale"], *a2a, s->tiers[i].name, FitParameter::alltoall_scale);
    a2a->finish();
  }
  if (std::optional<MapReader> bus = r.opt_map("busbw_scale")) {
    for (size_t i = 0; i < s->tiers.size(); ++i)
      if (const auto k = in_range(node["busbw_scale"], *bus, s->tiers[i].name, FitParameter::busbw_scale)) {
        scale_busbw(&s->tiers[i], *k);
        if (alltoall[i]) scale_alltoall_busbw(&s->tiers[i], 1.0 / *k);
      }
    bus->finish();  // a tier name the cluster does not have is an unknown key
  }
  for (size_t i = 0; i < s->tiers.size(); ++i)
    if (alltoall[i]) scale_alltoall_busbw(&s->tiers[i], *alltoall[i]);
  if (const auto k = in_range(node, r, "overlap_efficiency", FitParameter::overlap_efficiency))
    s->overlap_efficiency = *k;
  if (const auto k = in_range(node, r, "host_layer_pass_ms", FitParameter::host_layer_pass_ms))
    s->host_layer_pass = ms(*k);
  if (const auto gib = r.opt_number_in("memory_reserve_gib", kMemoryReserveMinGiB, kMemoryReserveMaxGiB))
    s->memory_reserve = GiB(*gib);
  const YAML::Node loo = r.opt_node("loo_errors_pct");
  if (loo.IsDefined() && !loo.IsNull()) {
    if (!loo.IsSequence()) r.fail("loo_errors_pct", "expected a list of signed errors in percent");
    for (size_t i = 0; i < loo.size(); ++i) {
      double v = 0;
      if (!loo[i].IsScalar() || !YAML::convert<double>::decode(loo[i], v) || !std::isfinite(v) || v <= -100)
        throw ConfigError(where(loo[i], file) + "fitted.loo_errors_pct[" + std::to_string(i) +
                          "]: expected a number above -100 (a signed error in percent)");
      s->fit_loo_errors_pct.push_back(v);
    }
  }
  r.opt_string("source");
  r.finish();
}

System read_cluster(const YAML::Node& doc, const std::string& file, int gpus) {
  reject_unknown(doc, file, "", {"schema_version", "kind", "name", "inherits", "gpu", "gpus_per_node", "default_gpus",
                                 "host_memory_gib_per_gpu", "host_memory_bw_gbps_per_gpu", "nvme_gib_per_gpu",
                                 "nvme_read_gbps_per_gpu", "nvme_write_gbps_per_gpu", "tiers", "gpu_overrides",
                                 "provenance", "sources", "fitted"});
  MapReader r(doc, file, "");
  Problems problems;
  read_header(r, doc, "cluster");
  System s;
  s.name = r.string("name");
  r.opt_string("inherits");  // resolved by with_ancestors

  const std::string gpu_file = resolve_from(required_node(r, "gpu"), file, "gpu", "hwprofiles/gpus", "GPU");
  const YAML::Node gpu_doc = parse_yaml(read_file(gpu_file), gpu_file);
  GpuProfile profile = read_gpu(gpu_doc, gpu_file, "");
  const YAML::Node overrides = r.opt_node("gpu_overrides");
  if (overrides.IsDefined() && !overrides.IsNull()) {
    if (!overrides.IsMap()) r.fail("gpu_overrides", "expected a mapping (keys of the GPU profile to replace)");
    profile = read_gpu(merged(overrides, gpu_doc), file, "gpu_overrides", overrides);
  }
  s.gpu = profile.gpu;

  s.gpus_per_node = r.opt_positive_int("gpus_per_node").value_or(profile.node.gpus_per_node);
  const int default_gpus = r.opt_positive_int("default_gpus").value_or(s.gpus_per_node);
  const auto host = r.opt_positive("host_memory_gib_per_gpu");
  s.host_memory_per_gpu = host ? GiB(*host) : profile.node.host_memory_per_gpu;
  const auto host_bw = r.opt_positive("host_memory_bw_gbps_per_gpu");
  s.host_memory_bw_per_gpu = host_bw ? GBps(*host_bw) : profile.node.host_memory_bw_per_gpu;
  const auto nvme = r.opt_positive("nvme_gib_per_gpu");
  s.nvme_per_gpu = nvme ? GiB(*nvme) : profile.node.nvme_per_gpu;
  const auto nvme_r = r.opt_positive("nvme_read_gbps_per_gpu"), nvme_w = r.opt_positive("nvme_write_gbps_per_gpu");
  s.nvme_read_bw_per_gpu = nvme_r ? GBps(*nvme_r) : profile.node.nvme_read_bw_per_gpu;
  s.nvme_write_bw_per_gpu = nvme_w ? GBps(*nvme_w) : profile.node.nvme_write_bw_per_gpu;

  std::vector<YAML::Node> tier_nodes;
  std::vector<std::string> tier_paths;
  const YAML::Node tiers = r.opt_node("tiers");
  if (tiers.IsDefined() && !tiers.IsNull()) {
    if (!tiers.IsSequence() || tiers.size() == 0)
      r.fail("tiers", "expected a non-empty list of tiers, innermost first");
    for (size_t i = 0; i < tiers.size(); ++i) {
      tier_nodes.push_back(tiers[i]);
      tier_paths.push_back("tiers[" + std::to_string(i) + "]");
      s.tiers.push_back(read_tier(tiers[i], file, tier_paths.back(), problems));
    }
    check_tiers(s.tiers, tier_nodes, file, tier_paths, s.gpus_per_node, problems);
  } else {
    s.tiers = {profile.node.scale_up, profile.node.scale_out};
  }
  s.provenance = r.string("provenance");
  string_list(r, "sources");
  const YAML::Node fitted = r.opt_node("fitted");
  r.finish();
  if (fitted.IsDefined() && !fitted.IsNull()) read_fitted(fitted, file, &s, problems);

  if (gpus < 0) throw ConfigError(file + ": gpus must be positive, got " + std::to_string(gpus));
  s.gpus = gpus > 0 ? gpus : default_gpus;
  if (s.gpus > s.gpus_per_node && s.gpus % s.gpus_per_node != 0)
    problems.push_back({"gpus", where(doc["gpus_per_node"].IsDefined() ? doc["gpus_per_node"] : doc, file) +
                                    (gpus > 0 ? "gpus (" : "default_gpus (") + std::to_string(s.gpus) +
                                    ") is not a multiple of gpus_per_node (" + std::to_string(s.gpus_per_node) + ")"});
  throw_if_any(problems);
  return s;
}

}  // namespace

GpuProfile parse_gpu_profile(std::string_view text, const std::string& filename) {
  return read_gpu(parse_yaml(text, filename), filename, "");
}

GpuProfile load_gpu_profile(const std::string& name_or_path) {
  const std::string file = resolve_data_file(name_or_path, "hwprofiles/gpus", kYamlExt, "GPU");
  return parse_gpu_profile(read_file(file), file);
}

Gpu parse_gpu(std::string_view text, const std::string& filename) { return parse_gpu_profile(text, filename).gpu; }

Gpu load_gpu(const std::string& name_or_path) { return load_gpu_profile(name_or_path).gpu; }

System parse_cluster(std::string_view text, const std::string& filename, int gpus) {
  return read_cluster(with_ancestors(parse_yaml(text, filename), filename, 0), filename, gpus);
}

System load_system(const std::string& name_or_path, int gpus) {
  const std::string file = resolve_data_file(name_or_path, "hwprofiles/clusters", kYamlExt, "cluster");
  return parse_cluster(read_file(file), file, gpus);
}

}  // namespace shardplan::io
