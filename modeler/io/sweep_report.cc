#include "modeler/io/sweep_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace shardplan::io {

namespace {

std::string num(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string layout_label(const Plan& p) {
  std::string s = "tp" + std::to_string(p.tp) + " cp" + std::to_string(p.cp) + " pp" + std::to_string(p.pp);
  if (p.vpp > 1) s += " vpp" + std::to_string(p.vpp);
  return s + " z" + std::to_string(p.zero);
}

std::string sweep_csv(const std::string& vary, const std::vector<SweepPoint>& points) {
  // The best plan's columns, in order; a point where nothing fits leaves them all empty.
  static const char* const kPlanColumns[] = {"tp", "cp", "pp", "vpp", "dp", "ep", "etp", "tsp", "zero",
                                             "sequence_parallel", "tp_comm_overlap", "ep_comm_overlap", "micro_batch",
                                             "recompute", "recompute_layers", "recompute_modules", "precision",
                                             "sdp_keep", "step_s",
                                             "memory_gib", "tokens_per_s_per_gpu", "mfu"};
  std::ostringstream o;
  // The first column is the varied quantity, named "varied_<what>" so that it never clashes with "gpus".
  o << "varied_" << vary << ",gpus,fits";
  for (const char* c : kPlanColumns) o << "," << c;
  o << ",evaluated,feasible\n";
  for (const SweepPoint& pt : points) {
    o << pt.value << "," << pt.gpus << "," << (pt.best ? 1 : 0);
    if (pt.best) {
      const Plan& p = pt.best->plan;
      o << "," << p.tp << "," << p.cp << "," << p.pp << "," << p.vpp << "," << p.dp << "," << p.ep << "," << p.etp
        << "," << p.tsp << "," << p.zero << "," << p.sequence_parallel << "," << p.tp_comm_overlap << ","
        << p.ep_comm_overlap << "," << p.micro_batch << "," << to_string(p.recompute) << "," << p.recompute_layers
        << "," << (p.recompute == Recompute::selective ? recompute_modules_string(p.recompute_modules) : "") << ","
        << to_string(p.precision) << "," << num("%g", p.sdp_keep) << "," << num("%.6g", pt.best->time.step().v) << ","
        << num("%.3f", to_GiB(pt.best->memory.total())) << "," << num("%.2f", pt.best->tokens_per_s_per_gpu) << ","
        << num("%.4f", pt.best->mfu);
    } else {
      for (size_t i = 0; i < std::size(kPlanColumns); ++i) o << ",";
    }
    o << "," << pt.evaluated << "," << pt.feasible << "\n";
  }
  return o.str();
}

nlohmann::json sweep_json(const ReportContext& ctx, const std::string& vary, const std::vector<SweepPoint>& points) {
  nlohmann::json rows = nlohmann::json::array();
  for (const SweepPoint& pt : points) {
    nlohmann::json r = pt.best ? estimate_json(*pt.best) : nlohmann::json::object();
    r["value"] = pt.value;
    r["gpus"] = pt.gpus;
    r["fits"] = pt.best.has_value();
    r["evaluated"] = pt.evaluated;
    r["feasible"] = pt.feasible;
    rows.push_back(r);
  }
  return {{"schema_version", 1}, {"context", context_json(ctx)}, {"vary", vary}, {"results", rows}};
}

std::string sweep_svg(const std::string& vary, const std::string& title, const std::vector<SweepPoint>& points) {
  // Points are spaced evenly (their values may be names or span orders of magnitude). Left axis tokens/s/GPU,
  // right axis MFU (%).
  const double W = 800, H = 440, L = 80, R = 70, T = 50, B = 70;
  const double pw = W - L - R, ph = H - T - B;
  double max_tok = 0;
  for (const SweepPoint& pt : points)
    if (pt.best) max_tok = std::max(max_tok, pt.best->tokens_per_s_per_gpu);
  max_tok = max_tok > 0 ? max_tok * 1.15 : 1;
  const size_t n = points.size();
  auto x_at = [&](size_t i) { return L + (n > 1 ? pw * static_cast<double>(i) / static_cast<double>(n - 1) : pw / 2); };
  auto y_tok = [&](double v) { return T + ph * (1 - v / max_tok); };
  auto y_mfu = [&](double m) { return T + ph * (1 - m); };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << W / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" << xml_escape(title)
    << "</text>\n"
    << "<line x1=\"" << L << "\" y1=\"" << T + ph << "\" x2=\"" << L + pw << "\" y2=\"" << T + ph
    << "\" stroke=\"black\"/>\n"
    << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << T + ph << "\" stroke=\"#1f77b4\"/>\n"
    << "<line x1=\"" << L + pw << "\" y1=\"" << T << "\" x2=\"" << L + pw << "\" y2=\"" << T + ph
    << "\" stroke=\"#d62728\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double f = k / 4.0;
    o << "<text x=\"" << L - 6 << "\" y=\"" << T + ph * (1 - f) + 4 << "\" text-anchor=\"end\" fill=\"#1f77b4\">"
      << num("%.0f", max_tok * f) << "</text>\n"
      << "<text x=\"" << L + pw + 6 << "\" y=\"" << T + ph * (1 - f) + 4 << "\" fill=\"#d62728\">"
      << num("%.0f%%", 100 * f) << "</text>\n";
  }
  o << "<text x=\"20\" y=\"" << T + ph / 2 << "\" transform=\"rotate(-90 20 " << T + ph / 2
    << ")\" text-anchor=\"middle\" fill=\"#1f77b4\">tokens/s/GPU</text>\n"
    << "<text x=\"" << W - 16 << "\" y=\"" << T + ph / 2 << "\" transform=\"rotate(90 " << W - 16 << " " << T + ph / 2
    << ")\" text-anchor=\"middle\" fill=\"#d62728\">MFU</text>\n"
    << "<text x=\"" << L + pw / 2 << "\" y=\"" << H - 16 << "\" text-anchor=\"middle\">" << xml_escape(vary)
    << "</text>\n";
  std::string tok_path, mfu_path;
  std::string prev_layout;
  for (size_t i = 0; i < n; ++i) {
    const SweepPoint& pt = points[i];
    const double x = x_at(i);
    o << "<text x=\"" << x << "\" y=\"" << T + ph + 18 << "\" text-anchor=\"middle\">" << xml_escape(pt.value)
      << "</text>\n";
    if (!pt.best) {
      o << "<text x=\"" << x << "\" y=\"" << T + ph - 6 << "\" text-anchor=\"middle\" fill=\"gray\">no fit</text>\n";
      continue;
    }
    const double yt = y_tok(pt.best->tokens_per_s_per_gpu), ym = y_mfu(pt.best->mfu);
    tok_path += (tok_path.empty() ? "M" : " L") + num("%.1f", x) + " " + num("%.1f", yt);
    mfu_path += (mfu_path.empty() ? "M" : " L") + num("%.1f", x) + " " + num("%.1f", ym);
    o << "<circle cx=\"" << x << "\" cy=\"" << yt << "\" r=\"4\" fill=\"#1f77b4\"><title>"
      << num("%.0f tokens/s/GPU", pt.best->tokens_per_s_per_gpu) << "</title></circle>\n"
      << "<circle cx=\"" << x << "\" cy=\"" << ym << "\" r=\"4\" fill=\"#d62728\"><title>"
      << num("MFU %.1f%%", 100 * pt.best->mfu) << "</title></circle>\n";
    const std::string layout = layout_label(pt.best->plan);
    if (layout != prev_layout) {  // annotate where the best plan changes (and the first point)
      o << "<line class=\"plan-change\" x1=\"" << x << "\" y1=\"" << T << "\" x2=\"" << x << "\" y2=\"" << T + ph
        << "\" stroke=\"gray\" stroke-dasharray=\"3,3\"/>\n"
        << "<text class=\"plan-change\" x=\"" << x + 3 << "\" y=\"" << T + 12 + 14 * static_cast<double>(i % 3)
        << "\" fill=\"gray\" font-size=\"10\">" << xml_escape(layout) << "</text>\n";
      prev_layout = layout;
    }
  }
  if (!tok_path.empty())
    o << "<path d=\"" << tok_path << "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n"
      << "<path d=\"" << mfu_path << "\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>\n";
  o << "</svg>\n";
  return o.str();
}

}  // namespace shardplan::io
