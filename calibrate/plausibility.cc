#include "calibrate/plausibility.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace shardplan::calibrate {
namespace {

std::vector<std::string> name_tokens(std::string_view name) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool is_memory_token(const std::string& t) {
  return t.size() > 2 && t.compare(t.size() - 2, 2, "gb") == 0 &&
         std::all_of(t.begin(), t.end() - 2, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * v);
  return buf;
}

std::string gbps(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB/s", bytes_per_s / 1e9);
  return buf;
}

double curve_max(const Curve& c) { return c.y.empty() ? 0.0 : *std::max_element(c.y.begin(), c.y.end()); }

void check_residuals(const std::string& what, const Residuals& r, std::vector<std::string>& out) {
  if (r.median_rel > kMaxMedianError || r.max_rel > kMaxMaxError)
    out.push_back(what + ": the fitted table mispredicts its own " + std::to_string(r.rows) + " rows by " +
                  pct(r.median_rel) + " (median) and " + pct(r.max_rel) + " (max), above the limits of " +
                  pct(kMaxMedianError) + " and " + pct(kMaxMaxError) +
                  ": the measurements are not what the predictor models (host buffers, a different GPU or network, "
                  "a disturbed run)");
}

}  // namespace

std::string gpu_family(std::string_view name) {
  for (const std::string& t : name_tokens(name)) {
    if (is_memory_token(t)) continue;
    if (std::any_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) return t;
  }
  return "";
}

std::string gpu_memory(std::string_view name) {
  for (const std::string& t : name_tokens(name))
    if (is_memory_token(t)) return t;
  return "";
}

bool same_gpu(std::string_view device, std::string_view profile_name) {
  const std::string a = gpu_family(device), b = gpu_family(profile_name);
  if (a.empty() || a != b) return false;
  const std::string ma = gpu_memory(device), mb = gpu_memory(profile_name);
  return ma.empty() || mb.empty() || ma == mb;
}

std::vector<std::string> gpu_mismatches(const std::vector<DeviceSeen>& devices, const System& base) {
  std::vector<std::string> out;
  const DeviceSeen* first = nullptr;
  for (const DeviceSeen& d : devices) {
    if (!same_gpu(d.device, base.gpu.name)) {
      const std::string why = gpu_family(d.device).empty() ? " (not a GPU)" : "";
      out.push_back(d.where + ": measured on '" + d.device + "'" + why + ", but the base cluster '" + base.name +
                    "' has " + base.gpu.name + "; calibrate with a base of the measured GPU");
      break;  // one is enough: the rest repeat it
    }
  }
  for (const DeviceSeen& d : devices) {
    if (!first) {
      first = &d;
    } else if (!same_gpu(d.device, first->device) || !same_gpu(first->device, d.device)) {
      out.push_back("measurements of different GPUs in one fit: '" + first->device + "' (" + first->where + ") and '" +
                    d.device + "' (" + d.where + "); fit each GPU's measurements into its own profile");
      break;
    }
  }
  return out;
}

int tier_for_hosts(const System& base, int nranks, int hosts) {
  if (hosts <= 1) return base.tier_for_group(nranks, 1);
  const long long span = std::max<long long>(static_cast<long long>(hosts) * std::max(1, base.gpus_per_node), nranks);
  for (size_t i = 0; i + 1 < base.tiers.size(); ++i)
    if (base.tiers[i].domain_gpus > 0 && span <= base.tiers[i].domain_gpus) return static_cast<int>(i);
  return static_cast<int>(base.tiers.size()) - 1;
}

std::vector<std::string> implausible_fit(const Fit& fit, const System& base) {
  std::vector<std::string> out;
  for (const TierFit& t : fit.tiers) {
    const Tier& tier = base.tiers[static_cast<size_t>(t.tier)];
    const std::string what = "tier " + tier.name;
    const double line = tier.bw_per_gpu.v / tier.oversubscription;  // what one GPU's traffic can get on it
    const double eff = std::max(t.ab.bw_Bps / line, curve_max(t.busbw_eff));
    if (eff > kMaxLinkEfficiency) {
      std::string hint;
      if (t.tier > 0)
        hint =
            "; a group with several ranks per node also moves data over the inner tiers, which this fit would "
            "attribute to " +
            tier.name + ": measure it with one rank per node";
      else
        hint = "; only in-network reduction (NVLink SHARP, SHARP) exceeds it, and the predictor does not model that";
      out.push_back(what + ": the measured bus bandwidth (" + gbps(t.ab.bw_Bps) + " fitted, curve up to " +
                    pct(curve_max(t.busbw_eff)) + ") is " + pct(eff) + " of the tier's line rate " + gbps(line) +
                    " per GPU, more than a link can carry" + hint);
    }
    if (eff < kMinLinkEfficiency)
      out.push_back(what + ": the measured bus bandwidth (" + gbps(t.ab.bw_Bps) + " fitted, curve up to " +
                    pct(curve_max(t.busbw_eff)) + ") peaks at " + pct(eff) + " of the tier's line rate " + gbps(line) +
                    " per GPU, below the " + pct(kMinLinkEfficiency) +
                    " a working link reaches: the run did not measure this tier (host buffers, NCCL over TCP "
                    "sockets, a disturbed run)");
    check_residuals(what, t.res, out);
  }
  if (fit.gpu.memory && curve_max(*fit.gpu.memory) < kMinLinkEfficiency)
    out.push_back("memory: the streaming kernels reach only " + pct(curve_max(*fit.gpu.memory)) + " of " +
                  base.gpu.name + "'s HBM bandwidth " + gbps(base.gpu.hbm_bw.v) +
                  ": the kernels did not run on this GPU's memory (host buffers, a different device)");
  if (fit.gpu.memory && curve_max(*fit.gpu.memory) > kMaxLinkEfficiency)
    out.push_back("memory: the streaming kernels reach " + pct(curve_max(*fit.gpu.memory)) + " of " + base.gpu.name +
                  "'s HBM bandwidth " + gbps(base.gpu.hbm_bw.v) +
                  ", more than it has (a different GPU, or a "
                  "kernel that does not move the bytes it reports)");
  for (const auto& [what, r] : fit.gpu.res) check_residuals(what, r, out);
  return out;
}

}  // namespace shardplan::calibrate
