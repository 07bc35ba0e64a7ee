#include "calibrate/fit_tables.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "modeler/collectives.h"
#include "modeler/gemm_model.h"
#include "modeler/layer_cost.h"
#include "modeler/problems.h"

namespace shardplan::calibrate {
namespace {

/// Largest efficiency a profile may state (modeler/io/system_io.cc). Small GEMMs inverted with the nominal kernel
/// overhead can exceed it; they are capped and counted.
constexpr double kMaxEfficiency = 1.2;

size_t index_of(const std::vector<double>& axis, double v) {
  return static_cast<size_t>(std::lower_bound(axis.begin(), axis.end(), v) - axis.begin());
}

void fit_gemm_grid(const std::vector<const Measurement*>& rows, Gpu& gpu, TablesFit& out, const std::string& source) {
  // One grid per dtype, and one for block-scaled fp8 (Fp8Scaling::block: its own kernels, same fp8 peak).
  std::map<std::pair<Dtype, bool>, std::vector<const Measurement*>> by_table;
  for (const Measurement* m : rows) by_table[{m->dtype, m->block_scaled && m->dtype == Dtype::fp8}].push_back(m);
  for (auto& [table, list] : by_table) {
    const auto [dtype, block] = table;
    const Fp8Scaling scaling = block ? Fp8Scaling::block : Fp8Scaling::per_tensor;
    const std::string dname = block ? "fp8_block" : kDtypeNames[static_cast<int>(dtype)];
    const double peak = gpu.peak_for(dtype).v;
    if (peak <= 0) {
      out.notes.push_back("gemm " + dname + ": the GPU states no peak; rows skipped");
      continue;
    }
    std::set<double> ms, ns, ks;
    for (const Measurement* m : list) {
      ms.insert(m->m);
      ns.insert(m->n);
      ks.insert(m->k);
    }
    Grid3 g;
    g.m.assign(ms.begin(), ms.end());
    g.n.assign(ns.begin(), ns.end());
    g.k.assign(ks.begin(), ks.end());
    g.source = source;
    const size_t cells = g.m.size() * g.n.size() * g.k.size();
    std::vector<double> eff(cells, 0.0);
    std::vector<std::vector<double>> samples(cells);
    int capped = 0;
    const bool narrow = dtype == Dtype::fp8 || dtype == Dtype::fp4;
    // Bytes per element of x its quantisation writes besides the read: the data, plus for fp8_block an fp32
    // scale per 1x128 group (AIC's fp8_block rows quantise x per call into that layout).
    const double cast_out = dtype_bytes(dtype) + (block ? 4.0 / 128.0 : 0.0);
    for (const Measurement* m : list) {
      const size_t c = (index_of(g.m, m->m) * g.n.size() + index_of(g.n, m->n)) * g.k.size() + index_of(g.k, m->k);
      // Invert gemm_time's compute term: t = overhead + flops / (peak * eff). Rows the memory term would explain
      // keep their compute-side value too, so the max() in gemm_time returns the measured time there as well.
      // An 8- or 4-bit row also quantised its input inside the timed op (AIC's fp8 and nvfp4 GEMMs quantise x
      // per call), which the predictor counts as a kernel of its own (layer_cost.cc: the framework's
      // fp8_cast_passes): one pass of x, read in bf16 and written in the GEMM's dtype, is taken out here with the
      // predictor's own memory_time, so the table holds the scaled GEMM alone.
      const double cast = narrow ? memory_time(gpu, Bytes(m->m * m->k * (2.0 + cast_out))).v : 0.0;
      const double busy = std::max(m->time_s - cast - gpu.eff.kernel_overhead.v, 0.05 * m->time_s);
      double e = m->flops / (peak * busy);
      if (e > kMaxEfficiency) {
        e = kMaxEfficiency;
        ++capped;
      }
      samples[c].push_back(e);
    }
    int filled = 0;
    for (size_t c = 0; c < cells; ++c) {
      if (samples[c].empty()) continue;
      std::sort(samples[c].begin(), samples[c].end());
      eff[c] = samples[c][samples[c].size() / 2];
    }
    // Missing cells (AIC measured no 65536 x 65536 weight): the nearest measured cell in log space.
    for (size_t c = 0; c < cells; ++c) {
      if (!samples[c].empty()) continue;
      const size_t i = c / (g.n.size() * g.k.size()), j = c / g.k.size() % g.n.size(), l = c % g.k.size();
      double best = 1e300;
      for (size_t o = 0; o < cells; ++o) {
        if (samples[o].empty()) continue;
        const size_t a = o / (g.n.size() * g.k.size()), b = o / g.k.size() % g.n.size(), d = o % g.k.size();
        const double dist = std::pow(std::log(g.m[a] / g.m[i]), 2) + std::pow(std::log(g.n[b] / g.n[j]), 2) +
                            std::pow(std::log(g.k[d] / g.k[l]), 2);
        if (dist < best) {
          best = dist;
          eff[c] = eff[o];
        }
      }
      ++filled;
    }
    if (filled)
      out.notes.push_back("gemm " + dname + ": " + std::to_string(filled) +
                          " grid cells not measured, filled from the nearest measured shape");
    if (capped)
      out.notes.push_back("gemm " + dname + ": " + std::to_string(capped) +
                          " rows imply an efficiency above 1.2 after the kernel overhead; capped");
    g.values = eff;
    g.index();
    if (block) {
      gpu.eff.gemm_grid_fp8_block = g;
      out.gemm_fp8_block = g;
    } else {
      gpu.eff.gemm_grid[static_cast<int>(dtype)] = g;
      out.gemm[dtype] = g;
    }
    std::vector<double> pred, meas;
    for (const Measurement* m : list) {
      const double cast = narrow ? memory_time(gpu, Bytes(m->m * m->k * (2.0 + cast_out))).v : 0.0;
      pred.push_back(gemm_time(gpu, dtype, m->m, m->n, m->k, scaling).v + cast);
      meas.push_back(m->time_s);
    }
    out.res["gemm " + dname] = residuals(pred, meas);
  }
}

void fit_attention_fwd(const std::vector<const Measurement*>& rows, const Gpu& gpu, TablesFit& out,
                       const std::string& source) {
  std::set<std::string> kernels;
  std::vector<double> x, eff, meas;
  const double peak = gpu.peak_for(gpu.sixteen_bit()).v;
  for (const Measurement* m : rows) {
    if (m->backward) {
      out.notes.push_back("attention: backward rows are not used for the measured-database tables");
      continue;
    }
    kernels.insert(m->kernel);
    x.push_back(m->flops);
    eff.push_back(m->flops / (peak * std::max(1e-9, m->time_s - gpu.eff.kernel_overhead.v)));
    meas.push_back(m->time_s);
  }
  if (x.empty()) return;
  if (kernels.size() != 1 || (*kernels.begin() != "flash2" && *kernels.begin() != "flash3"))
    throw ConfigError("attention rows must all name one kernel generation, flash2 or flash3");
  out.attention_kernel = *kernels.begin() == "flash2" ? AttentionKernel::flash2 : AttentionKernel::flash3;
  out.attention_fwd = monotone_curve(x, eff, source);
  Curve bwd = out.attention_fwd;
  for (size_t i = 0; i < bwd.x.size(); ++i) {
    bwd.x[i] *= kAttentionBwdFlopsRatio;
    bwd.y[i] *= kAttentionBwdOverFwd;
  }
  bwd.source = source + "; backward derived: the forward curve at 2.5x the FLOPs times 0.958, the backward/forward "
                        "rate of fused attention on H100 (FlashAttention-3 paper, arXiv 2407.08608)";
  out.attention_bwd = bwd;
  std::vector<double> pred;
  for (double f : x) pred.push_back(gpu.eff.kernel_overhead.v + f / (peak * out.attention_fwd.at(f)));
  out.res[std::string("attention ") + *kernels.begin() + " fwd"] = residuals(pred, meas);
}

/// Tier 0 (the scale-up domain): one latency per step for all collectives (as the predictor has), then a busbw
/// curve per collective from the time left after it.
void fit_scale_up(const std::vector<const Measurement*>& all, const System& base, TablesFit& out,
                  const std::string& source) {
  const Tier& tier = base.tiers.front();
  // The largest group measured of each collective (8 GPUs of a DGX/HGX board, 4 of a GB200/GB300 tray): the
  // configuration a tier's busbw names (nccl-tests on the full node), where NVLink SHARP all-reduce engages.
  // Smaller groups on the same switch reach other fractions, which one curve per collective cannot hold.
  std::map<Collective, int> largest;
  for (const Measurement* m : all) largest[m->collective] = std::max(largest[m->collective], m->nranks);
  std::vector<const Measurement*> rows;
  for (const Measurement* m : all)
    if (m->nranks == largest[m->collective]) rows.push_back(m);
  if (rows.size() < all.size())
    out.notes.push_back("scale_up: " + std::to_string(all.size() - rows.size()) +
                        " rows of smaller groups than the largest measured per collective not used");
  std::vector<double> x, t, steps;
  for (const Measurement* m : rows) {
    x.push_back(m->bytes * bus_bw_factor(m->collective, m->nranks));
    t.push_back(m->time_s);
    steps.push_back(std::max(1.0, latency_steps(m->collective, m->nranks, false)));
  }
  const AlphaBeta ab = fit_alpha_beta(x, t, steps);
  out.scale_up_latency_s = ab.alpha_s;
  std::map<Collective, std::pair<std::vector<double>, std::vector<double>>> by;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double busy = t[i] - ab.alpha_s * steps[i];
    if (busy < 0.2 * t[i]) continue;  // latency-bound: says little about bandwidth
    auto& [s, e] = by[rows[i]->collective];
    s.push_back(rows[i]->bytes);
    e.push_back(x[i] * tier.oversubscription / (busy * tier.bw_per_gpu.v));
  }
  System fitted = base;
  fitted.tiers.front().latency = Seconds(ab.alpha_s);
  for (auto& [c, se] : by) {
    out.busbw[c] = monotone_curve(se.first, se.second, source);
    fitted.tiers.front().busbw_eff_by[static_cast<int>(c)] = out.busbw[c];
  }
  std::map<Collective, std::pair<std::vector<double>, std::vector<double>>> pm;
  for (const Measurement* m : rows) {
    CommOp op{};
    op.collective = m->collective;
    op.bytes = Bytes(m->bytes);
    op.group = m->nranks;
    op.stride = 1;
    pm[m->collective].first.push_back(collective_time(fitted, op).v);
    pm[m->collective].second.push_back(m->time_s);
  }
  for (const auto& [c, pmeas] : pm)
    out.res[std::string("scale_up ") + collective_name(c)] = residuals(pmeas.first, pmeas.second);
}

}  // namespace

TablesFit fit_tables(const std::vector<Measurement>& rows, const System& base, const std::string& source) {
  if (rows.empty()) throw ConfigError("no measurements to fit");
  TablesFit out;
  Gpu gpu = base.gpu;
  for (Grid3& g : gpu.eff.gemm_grid) g = Grid3{};  // the fit must not depend on the tables it replaces
  gpu.eff.gemm_grid_fp8_block = Grid3{};
  std::vector<const Measurement*> gemm, attention, collective;
  for (const Measurement& m : rows) {
    switch (m.bench) {
      case Bench::gemm: gemm.push_back(&m); break;
      case Bench::attention: attention.push_back(&m); break;
      case Bench::collective:
        if (base.tier_for_group(m.nranks, m.stride) == 0) collective.push_back(&m);
        else out.notes.push_back("collective rows beyond the scale-up domain are not part of the GPU tables");
        break;
      case Bench::memory: out.notes.push_back("memory rows are not part of the GPU tables"); break;
    }
  }
  if (!gemm.empty()) fit_gemm_grid(gemm, gpu, out, source);
  if (!attention.empty()) fit_attention_fwd(attention, gpu, out, source);
  if (!collective.empty()) fit_scale_up(collective, base, out, source);
  std::sort(out.notes.begin(), out.notes.end());
  out.notes.erase(std::unique(out.notes.begin(), out.notes.end()), out.notes.end());
  return out;
}

}  // namespace shardplan::calibrate
