#include "calibrate/fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

#include "modeler/collectives.h"
#include "modeler/collectives_factors.h"
#include "modeler/gemm_model.h"
#include "modeler/problems.h"

namespace shardplan::calibrate {
namespace {

/// Largest efficiency a profile may state (modeler/io/system_io.cc rejects more). Inverting the GEMM model can
/// exceed it for small GEMMs, where cuBLAS picks smaller tiles than the wave model assumes.
constexpr double kMaxEfficiency = 1.2;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

Residuals residuals(const std::vector<double>& predicted, const std::vector<double>& measured) {
  Residuals r;
  std::vector<double> rel;
  for (size_t i = 0; i < predicted.size(); ++i) rel.push_back(std::abs(predicted[i] - measured[i]) / measured[i]);
  r.rows = static_cast<int>(rel.size());
  if (rel.empty()) return r;
  r.median_rel = median(rel);
  r.max_rel = *std::max_element(rel.begin(), rel.end());
  return r;
}

AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t) {
  return fit_alpha_beta(x, t, std::vector<double>(x.size(), 1.0));
}

AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t, const std::vector<double>& steps) {
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  if (n < 2) throw ConfigError("alpha-beta fit needs at least 2 sizes, got " + std::to_string(n));
  Eigen::MatrixXd A(n, 2);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double w = 1.0 / t[static_cast<size_t>(i)];
    A(i, 0) = steps[static_cast<size_t>(i)] * w;
    A(i, 1) = x[static_cast<size_t>(i)] * w;
    b(i) = 1.0;  // t_i * w
  }
  const Eigen::Vector2d sol = A.colPivHouseholderQr().solve(b);
  if (!(sol(1) > 0))
    throw ConfigError("alpha-beta fit found no positive bandwidth (time does not grow with size); measure a "
                      "wider size range");
  return {std::max(0.0, sol(0)), 1.0 / sol(1)};
}

Curve monotone_curve(std::vector<double> x, std::vector<double> y, const std::string& source) {
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> bins;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] > 0 && y[i] > 0 && std::isfinite(y[i])) {
      auto& b = bins[static_cast<int>(std::floor(std::log2(x[i]) + 0.5))];
      b.first.push_back(x[i]);
      b.second.push_back(y[i]);
    }
  // Pool-adjacent-violators: merge neighbouring blocks while a block's mean is below its predecessor's.
  struct Block { double x, y, w; };
  std::vector<Block> blocks;
  for (auto& [bin, xy] : bins) {
    blocks.push_back({median(xy.first), median(xy.second), static_cast<double>(xy.first.size())});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].y > blocks.back().y) {
      Block hi = blocks.back();
      blocks.pop_back();
      Block& lo = blocks.back();
      lo.y = (lo.y * lo.w + hi.y * hi.w) / (lo.w + hi.w);
      lo.x = std::sqrt(lo.x * hi.x);
      lo.w += hi.w;
    }
  }
  Curve c;
  c.source = source;
  for (const Block& b : blocks) {
    c.x.push_back(b.x);
    c.y.push_back(std::min(b.y, kMaxEfficiency));
  }
  return c;
}

namespace {

void fit_memory(const std::vector<const Measurement*>& rows, Gpu& gpu, GpuFit& out, const std::string& source) {
  std::vector<double> x, t;
  for (const Measurement* m : rows) {
    x.push_back(m->bytes);
    t.push_back(m->time_s);
  }
  // Kernel overhead = the intercept of t = overhead + bytes / bw over the streaming kernels.
  const AlphaBeta ab = fit_alpha_beta(x, t);
  out.kernel_overhead_s = ab.alpha_s;
  gpu.eff.kernel_overhead = Seconds(ab.alpha_s);
  std::vector<double> eff;
  for (size_t i = 0; i < x.size(); ++i) {
    const double busy = t[i] - ab.alpha_s;
    eff.push_back(busy > 0 ? x[i] / (busy * gpu.hbm_bw.v) : 0.0);
  }
  gpu.eff.memory = monotone_curve(x, eff, source);
  out.memory = gpu.eff.memory;
  std::vector<double> pred;
  for (size_t i = 0; i < x.size(); ++i)
    pred.push_back(ab.alpha_s + x[i] / (gpu.hbm_bw.v * memory_efficiency(gpu, x[i])));
  out.res["memory"] = residuals(pred, t);
}

void fit_gemm(const std::vector<const Measurement*>& rows, Gpu& gpu, GpuFit& out, const std::string& source) {
  std::map<Dtype, std::vector<const Measurement*>> by_dtype;
  int block_scaled = 0;
  for (const Measurement* m : rows) {
    // A profile has FLOPs curves per dtype only; block-scaled fp8 GEMMs have a grid in the GPU tables.
    if (m->block_scaled) ++block_scaled;
    else by_dtype[m->dtype].push_back(m);
  }
  if (block_scaled)
    out.notes.push_back("gemm fp8_block: " + std::to_string(block_scaled) +
                        " rows not used (block-scaled GEMMs are fitted into GPU tables: calibrate fit --gpu-tables)");
  for (auto& [dtype, list] : by_dtype) {
    const std::string dname = kDtypeNames[static_cast<int>(dtype)];
    const FlopsPerSec peak = gpu.peak_for(dtype);
    if (peak.v <= 0) {
      out.notes.push_back("gemm " + dname + ": the base GPU states no peak; rows skipped");
      continue;
    }
    std::vector<double> x, eff;
    int memory_bound = 0, clamped = 0;
    for (const Measurement* m : list) {
      // Invert gemm_time: subtract the overhead, skip rows the memory term explains, divide out wave quantization.
      const double busy = m->time_s - gpu.eff.kernel_overhead.v;
      const Bytes bytes = gemm_bytes(dtype, m->m, m->n, m->k);
      const double mem_s = gpu.hbm_bw.v > 0 ? bytes.v / (gpu.hbm_bw.v * memory_efficiency(gpu, bytes.v)) : 0.0;
      if (busy <= 0 || mem_s >= busy) {
        ++memory_bound;
        continue;
      }
      x.push_back(m->flops);
      // The profile's reduction-depth factor (gemm_model.h) is divided out too: the fitted table is per FLOPs.
      const double depth = gpu.eff.gemm_k.empty() ? 1.0 : gpu.eff.gemm_k.at(m->k);
      eff.push_back(m->flops / (peak.v * wave_efficiency(gpu, m->m, m->n) * depth * busy));
      if (eff.back() > kMaxEfficiency) {
        eff.back() = kMaxEfficiency;
        ++clamped;
      }
    }
    if (clamped)
      out.notes.push_back("gemm " + dname + ": " + std::to_string(clamped) + " rows imply an efficiency above " +
                          std::to_string(kMaxEfficiency).substr(0, 3) +
                          " after dividing out wave quantization (smaller tiles than modeled); clamped");
    if (memory_bound)
      out.notes.push_back("gemm " + dname + ": " + std::to_string(memory_bound) +
                          " rows bound by memory or overhead, not used for the compute efficiency");
    if (x.empty()) continue;
    gpu.eff.gemm[static_cast<int>(dtype)] = monotone_curve(x, eff, source);
    out.gemm[dtype] = gpu.eff.gemm[static_cast<int>(dtype)];
    std::vector<double> pred, meas;
    for (const Measurement* m : list) {
      pred.push_back(gemm_time(gpu, dtype, m->m, m->n, m->k).v);
      meas.push_back(m->time_s);
    }
    out.res["gemm " + dname] = residuals(pred, meas);
  }
}

void fit_attention(const std::vector<const Measurement*>& rows, const Gpu& gpu, GpuFit& out,
                   const std::string& source) {
  std::map<std::pair<std::string, bool>, std::vector<const Measurement*>> groups;
  for (const Measurement* m : rows) {
    if (m->kernel != "flash2" && m->kernel != "flash3") {
      out.notes.push_back("attention rows from kernel '" + m->kernel + "' (backend " + m->backend +
                          ") are not a production fused kernel; not written to the profile");
      continue;
    }
    groups[{m->kernel, m->backward}].push_back(m);
  }
  const double peak = gpu.peak_for(Dtype::bf16).v;  // the 16-bit dense peak, as the profile's curves state
  for (auto& [key, list] : groups) {
    std::vector<double> x, eff, meas;
    for (const Measurement* m : list) {
      x.push_back(m->flops);
      eff.push_back(m->flops / (peak * std::max(1e-9, m->time_s - gpu.eff.kernel_overhead.v)));
      meas.push_back(m->time_s);
    }
    const Curve c = monotone_curve(x, eff, source);
    out.attention[key] = c;
    std::vector<double> pred;
    for (const Measurement* m : list) pred.push_back(gpu.eff.kernel_overhead.v + m->flops / (peak * c.at(m->flops)));
    out.res["attention " + key.first + (key.second ? " bwd" : " fwd")] = residuals(pred, meas);
  }
  std::sort(out.notes.begin(), out.notes.end());
  out.notes.erase(std::unique(out.notes.begin(), out.notes.end()), out.notes.end());
}

/// Inverts modeler/collectives.h: t = latency * latency_steps + S * factor / (bw_per_gpu * eff / oversubscription).
/// Groups spanning several inner domains are modeled hierarchically by the predictor; their rows are inverted with
/// the flat formula, and the residuals (computed with the predictor itself) show how well that holds.
TierFit fit_tier(int index, const std::vector<const Measurement*>& rows, const System& base,
                 const std::string& source) {
  const Tier& tier = base.tiers[static_cast<size_t>(index)];
  TierFit f;
  f.tier = index;
  std::vector<double> x, t, steps;
  for (const Measurement* m : rows) {
    x.push_back(m->bytes * bus_bw_factor(m->collective, m->nranks));
    t.push_back(m->time_s);
    steps.push_back(std::max(1.0, latency_steps(m->collective, m->nranks, index > 0)));
  }
  f.ab = fit_alpha_beta(x, t, steps);
  // Efficiency relative to the tier's stated bandwidth from the time left after the fitted latency. Rows whose
  // time is mostly latency say little about bandwidth and are left out.
  std::vector<double> s, eff, s_p2p, eff_p2p;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double busy = t[i] - f.ab.alpha_s * steps[i];
    if (busy < 0.2 * t[i]) continue;
    const double e = x[i] * tier.oversubscription / (busy * tier.bw_per_gpu.v);
    if (rows[i]->collective == Collective::send_recv) {
      s_p2p.push_back(rows[i]->bytes);
      eff_p2p.push_back(e);
    } else {
      s.push_back(rows[i]->bytes);
      eff.push_back(e);
    }
  }
  if (s.empty()) {  // only send/recv measured: it stands for the tier
    s = s_p2p;
    eff = eff_p2p;
  }
  if (s.empty())
    throw ConfigError("tier '" + tier.name + "': every measured size is latency-bound; measure larger messages");
  f.busbw_eff = monotone_curve(s, eff, source);
  if (!s_p2p.empty()) f.p2p_eff = monotone_curve(s_p2p, eff_p2p, source);
  System fitted = base;
  Tier& ft = fitted.tiers[static_cast<size_t>(index)];
  ft.latency = Seconds(f.ab.alpha_s);
  ft.busbw_eff = f.busbw_eff;
  ft.p2p_eff = f.p2p_eff ? *f.p2p_eff : Curve{};
  std::vector<double> pred;
  for (const Measurement* m : rows) {
    CommOp op{};
    op.collective = m->collective;
    op.bytes = Bytes(m->bytes);
    op.group = m->nranks;
    op.stride = m->stride;
    // A row whose source names its tier (import-nccl-tests) is predicted on that tier: with one rank per inner
    // domain (e.g. one GPU per node for the network tier), not at the default stride that would place the group
    // on the inner tier and make the residuals measure the wrong link.
    if (m->tier == index && index > 0 && fitted.tier_for_group(op.group, op.stride) != index)
      op.stride = std::max(1, fitted.tiers[static_cast<size_t>(index - 1)].domain_gpus);
    pred.push_back(collective_time(fitted, op).v);
  }
  f.res = residuals(pred, t);
  return f;
}

}  // namespace

Fit fit_all(const std::vector<Measurement>& rows, const System& base, const std::string& source) {
  Fit fit;
  Gpu gpu = base.gpu;
  std::vector<const Measurement*> memory, gemm, attention;
  std::map<int, std::vector<const Measurement*>> tiers;
  for (const Measurement& m : rows) {
    switch (m.bench) {
      case Bench::memory: memory.push_back(&m); break;
      case Bench::gemm: gemm.push_back(&m); break;
      case Bench::attention: attention.push_back(&m); break;
      case Bench::collective:
        tiers[m.tier >= 0 ? m.tier : base.tier_for_group(m.nranks, m.stride)].push_back(&m);
        break;
    }
  }
  // Memory first: the kernel overhead and the memory curve enter the GEMM inversion.
  if (!memory.empty()) fit_memory(memory, gpu, fit.gpu, source);
  if (!gemm.empty()) fit_gemm(gemm, gpu, fit.gpu, source);
  if (!attention.empty()) fit_attention(attention, gpu, fit.gpu, source);
  for (const auto& [index, list] : tiers) fit.tiers.push_back(fit_tier(index, list, base, source));
  if (rows.empty()) throw ConfigError("no measurements to fit");
  return fit;
}

}  // namespace shardplan::calibrate
