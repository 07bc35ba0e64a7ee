#include "modeler/io/json_text.h"

#include <algorithm>

#include "modeler/problems.h"

namespace shardplan::io {

void throw_json_number_out_of_range(const nlohmann::json::out_of_range& e, std::string_view text,
                                    const std::string& file) {
  const std::string what = e.what();
  const size_t q = what.find('\''), q2 = what.rfind('\'');
  const std::string literal = q != std::string::npos && q2 > q ? what.substr(q + 1, q2 - q - 1) : "";
  const size_t pos = literal.empty() ? std::string_view::npos : text.find(literal);
  if (pos == std::string_view::npos) throw ConfigError(file + ": invalid JSON: a number out of range");
  const long line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n');
  std::string key;
  const size_t kq = text.rfind('"', pos), kq0 = kq == std::string_view::npos || kq == 0 ? kq : text.rfind('"', kq - 1);
  if (kq0 != std::string_view::npos && kq != std::string_view::npos)
    key = std::string(text.substr(kq0 + 1, kq - kq0 - 1)) + ": ";
  throw ConfigError(file + ":" + std::to_string(line) + ": " + key + "number " + literal +
                    " is out of range (beyond +-1.8e308)");
}

}  // namespace shardplan::io
