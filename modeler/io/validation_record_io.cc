#include "modeler/io/validation_record_io.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "modeler/io/paths.h"
#include "modeler/io/yaml_reader.h"

namespace shardplan::io {

namespace {
double round1(double v) { return std::round(v * 10.0) / 10.0; }
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", round1(v));
  return buf;
}
}  // namespace

std::string shipped_record_path() { return data_root() + "/hwprofiles/validation_record.yaml"; }

ValidationRecord record_from_report(const ValidationReport& report, const std::string& runs_file) {
  ValidationRecord rec;
  rec.runs_file = runs_file;
  rec.command = kRecordCommand;
  for (const auto& [key, g] : report.by_generation_framework) {
    const size_t space = key.find(' ');
    rec.groups.push_back({key.substr(0, space), key.substr(space + 1), g.runs, round1(g.mape), round1(g.bias)});
  }
  return rec;
}

std::string record_yaml(const ValidationRecord& r) {
  std::ostringstream out;
  out << "# Validation record: throughput error of shardplan's predictions on published, measured runs, by GPU\n"
         "# generation x framework family. Generated, do not edit; regenerate after any change to the model or the\n"
         "# tables with:\n#   "
      << r.command << "\n# (tests/validation checks it matches a fresh validate run).\n"
      << "schema_version: 1\nruns_file: " << r.runs_file << "\ncommand: \"" << r.command << "\"\ngroups:\n";
  for (const RecordGroup& g : r.groups)
    out << "  - {generation: " << g.generation << ", framework: " << g.framework << ", runs: " << g.runs
        << ", mape_pct: " << num(g.mape_pct) << ", bias_pct: " << num(g.bias_pct) << "}\n";
  return out.str();
}

ValidationRecord parse_validation_record(std::string_view text, const std::string& filename) {
  const YAML::Node root = parse_yaml(text, filename);
  MapReader r(root, filename, "");
  ValidationRecord rec;
  if (r.positive_int("schema_version") != 1) r.fail("schema_version", "expected schema_version 1");
  rec.runs_file = r.string("runs_file");
  rec.command = r.string("command");
  const YAML::Node groups = r.sequence("groups");
  for (size_t i = 0; i < groups.size(); ++i) {
    MapReader g(groups[i], filename, "groups[" + std::to_string(i) + "]");
    RecordGroup out;
    out.generation = g.string("generation");
    out.framework = g.string("framework");
    out.runs = g.positive_int("runs");
    out.mape_pct = g.number("mape_pct");
    out.bias_pct = g.number("bias_pct");
    g.finish();
    rec.groups.push_back(out);
  }
  r.finish();
  return rec;
}

std::optional<ValidationRecord> load_shipped_record() {
  const std::string path = shipped_record_path();
  if (!std::ifstream(path).good()) return std::nullopt;
  return parse_validation_record(read_file(path), path);
}

RecordQuote quote_record(const std::optional<ValidationRecord>& record, const std::string& gpu,
                         const std::string& framework) {
  if (!record) return {"not validated: no validation record shipped (" + shipped_record_path() + ")", {}};
  const RecordMatch m = nearest_record(*record, gpu, framework);
  RecordQuote q;
  q.text = record_text(m, gpu, framework);
  if (m.group) q.group = *m.group;
  q.exact = m.exact;
  return q;
}

nlohmann::json record_json(const RecordQuote& q) {
  nlohmann::json j{{"text", q.text}, {"exact", q.exact}};
  if (const std::optional<RecordGroup>& g = q.group) {
    j["generation"] = g->generation;
    j["framework"] = g->framework;
    j["runs"] = g->runs;
    j["mape_pct"] = g->mape_pct;
    j["bias_pct"] = g->bias_pct;
  } else {
    j["runs"] = 0;
  }
  return j;
}

std::optional<ThroughputInterval> prediction_interval(double predicted, const System& system, const RecordQuote& q) {
  if (auto iv = interval_from_errors(predicted, system.fit_loo_errors_pct)) return iv;
  if (q.group) return interval_from_record(predicted, *q.group, q.exact);
  return std::nullopt;
}

nlohmann::json interval_json(const std::optional<ThroughputInterval>& iv) {
  if (!iv) return nullptr;
  return {{"basis", iv->basis},
          {"low_tokens_per_s_per_gpu", iv->low},
          {"high_tokens_per_s_per_gpu", iv->high},
          {"error_low_pct", iv->error_low_pct},
          {"error_high_pct", iv->error_high_pct},
          {"runs", iv->runs},
          {"text", iv->text}};
}

}  // namespace shardplan::io
