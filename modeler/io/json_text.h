// Shared by the JSON readers (model_io.cc for config.json, plan_json.cc for plan files): nlohmann reports a number
// beyond double's range ("1e400") as out_of_range naming the literal but not its place, which would otherwise escape
// as an internal error (issue 12; fuzz_hf_config and fuzz_plan_json findings).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace shardplan::io {

/// Throws ConfigError "FILE:LINE: KEY: number LITERAL is out of range (beyond +-1.8e308)", finding the literal that
/// `e` names, and the key before it, in `text`; "FILE: invalid JSON: a number out of range" when it is not found.
[[noreturn]] void throw_json_number_out_of_range(const nlohmann::json::out_of_range& e, std::string_view text,
                                                 const std::string& file);

}  // namespace shardplan::io
