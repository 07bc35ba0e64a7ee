#include "apps/calibrate_tables.h"

#include <filesystem>
#include <iostream>

#include "calibrate/aic_import.h"
#include "calibrate/fit_tables.h"
#include "calibrate/measurements.h"
#include "calibrate/profile_writer.h"
#include "calibrate/tables_writer.h"
#include "modeler/io/atomic_write.h"
#include "modeler/io/gpu_tables_io.h"
#include "modeler/io/paths.h"
#include "modeler/io/system_io.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

namespace shardplan::cli {
namespace {

namespace fs = std::filesystem;

std::string read_csv(const std::string& dir, const std::string& stem, std::string* name) {
  const fs::path plain = fs::path(dir) / (stem + ".csv");
  *name = plain.string();
  if (fs::exists(plain)) return io::read_file(plain.string());
  if (fs::exists(plain.string() + ".gz"))
    throw ConfigError(plain.string() + ".gz: compressed tables are not read; decompress it (gunzip -k) or run "
                      "calibrate/compact_aic.sh, which writes the rows the tables use as plain CSV");
  return "";
}

}  // namespace

int import_aic(const std::string& dir, const std::string& gpu, const std::string& aic_system_name,
               const std::string& out, bool force) {
  io::check_destination(out, force);  // before any reading (modeler/io/atomic_write.h)
  if (!fs::is_directory(dir)) throw ConfigError(dir + ": not a directory (expected an AIC export: gemm.csv, ...)");
  std::string system = aic_system_name;
  if (system.empty()) {
    const auto s = calibrate::aic_system(gpu);
    if (!s)
      throw ConfigError("--gpu: AIConfigurator has no measurements of '" + gpu +
                        "' (measured: a100-sxm4-80gb h100-sxm5-80gb h200-sxm-141gb b200 gb200 b300 gb300 l40s); "
                        "name its AIC system with --aic-system");
    system = *s;
  }
  io::load_gpu_profile(gpu);  // the GPU must exist: its peaks and node are what the fit divides by
  calibrate::AicTables t;
  t.gemm = read_csv(dir, "gemm", &t.gemm_file);
  t.attention_prefill = read_csv(dir, "attention_prefill", &t.attention_file);
  t.nccl = read_csv(dir, "nccl", &t.nccl_file);
  // FlashAttention-2-class kernels on Ampere; the Hopper/Blackwell kernels (FA3, cuDNN, TRT-LLM) elsewhere.
  const std::string kernel = system == "a100_sxm" || system == "l40s" ? "flash2" : "flash3";
  const calibrate::AicImport imp = calibrate::import_aic(t, system, kernel);
  std::string text;
  for (const auto& line : imp.lines) text += line + "\n";
  io::write_file_atomic(out, text, force);
  std::cout << "wrote " << out << ": " << imp.gemm << " GEMM, " << imp.attention << " attention, "
            << imp.collectives << " collective rows of AIC system " << system << "\n";
  return 0;
}

int fit_gpu_tables(const std::vector<std::string>& inputs, const std::string& gpu, const std::string& out,
                   bool force) {
  const io::GpuProfile profile = io::load_gpu_profile(gpu);
  const System base = io::standard_system(profile, {});
  io::check_destination(out, force);  // before any reading or fitting
  std::vector<calibrate::Measurement> rows;
  std::vector<std::string> contexts;
  std::string what;
  for (const auto& file : inputs) {
    auto raw = calibrate::parse_jsonl(io::read_file(file), file);
    rows.insert(rows.end(), raw.rows.begin(), raw.rows.end());
    for (auto& c : raw.contexts)
      if (std::find(contexts.begin(), contexts.end(), c) == contexts.end()) contexts.push_back(c);
    what += (what.empty() ? "" : ", ") + fs::path(file).filename().string();
  }
  const std::string source = "calibrate fit --gpu-tables (" + what + ")";
  const calibrate::TablesFit fit = calibrate::fit_tables(rows, base, source);
  calibrate::TablesSpec spec;
  spec.gpu = gpu;
  spec.provenance = "shardplan calibrate fit --gpu-tables " + gpu + " from " + what + ", " +
                    std::to_string(rows.size()) + " rows";
  for (const auto& c : contexts) spec.provenance += "; " + c;
  spec.sources = {"NVIDIA AIConfigurator measured kernel database, github.com/ai-dynamo/aiconfigurator @ "
                  "095f58a51c4ca8e61b66ec108d86f223f8d559ce (Apache-2.0); rows in hwprofiles/measured/ (README there)"};
  const std::string text = calibrate::emit_tables(spec, fit);
  io::GpuProfile check = profile;
  try {
    io::apply_gpu_tables(text, out, &check);
  } catch (const ConfigError& e) {
    throw std::logic_error(std::string("the fitted tables do not load: ") + e.what());
  }
  io::write_file_atomic(out, text, force);
  for (const auto& [what_fit, r] : fit.res)
    std::printf("  %s: %d rows, median %.1f%%, max %.1f%%\n", what_fit.c_str(), r.rows, 100 * r.median_rel,
                100 * r.max_rel);
  for (const auto& n : fit.notes) std::cout << "  note: " << n << "\n";
  std::cout << "wrote " << out << " (tables of " << gpu << ")\n";
  return 0;
}

}  // namespace shardplan::cli
