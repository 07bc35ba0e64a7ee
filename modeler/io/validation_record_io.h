// The shipped validation record (hwprofiles/validation_record.yaml): generated from a validation report by
// `shardplan validate --runs FILE --write-record PATH`, read by predict and search.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "modeler/io/validation_run.h"
#include "modeler/system.h"
#include "modeler/validation_record.h"

namespace shardplan::io {

/// The shipped record's path under the data root, and the command that regenerates it.
std::string shipped_record_path();
inline constexpr const char* kRecordCommand =
    "shardplan validate --runs tests/validation/published_runs.yaml --write-record "
    "hwprofiles/validation_record.yaml --force";

/// The record of a report: one group per GPU generation x framework family, figures rounded to 0.1%.
ValidationRecord record_from_report(const ValidationReport& report, const std::string& runs_file);
std::string record_yaml(const ValidationRecord& record);
/// Parses a record strictly (unknown keys rejected with file, line and key).
ValidationRecord parse_validation_record(std::string_view text, const std::string& filename);
/// The shipped record, or nullopt when the data root has none (predictions then say they are not validated).
std::optional<ValidationRecord> load_shipped_record();

/// The record nearest a prediction on `gpu` under `framework` as reports carry it: the line of record_text and,
/// when a group matched, its generation, framework, runs, MAPE, bias and whether the match is exact.
struct RecordQuote {
  std::string text;
  std::optional<RecordGroup> group;  // a copy: the quote outlives the record it came from
  bool exact = false;
};
RecordQuote quote_record(const std::optional<ValidationRecord>& record, const std::string& gpu,
                         const std::string& framework);
nlohmann::json record_json(const RecordQuote& quote);

/// How far the measured throughput may fall from a prediction: from the profile's fit-runs leave-one-out errors
/// when it has them, else from the quoted record group; null when neither exists.
std::optional<ThroughputInterval> prediction_interval(double predicted, const System& system, const RecordQuote& q);
/// {"basis", "low_tokens_per_s_per_gpu", "high_tokens_per_s_per_gpu", "error_low_pct", "error_high_pct", "runs",
/// "text"}, or null.
nlohmann::json interval_json(const std::optional<ThroughputInterval>& interval);

}  // namespace shardplan::io
