#include "modeler/pipeline_layout.h"

#include <algorithm>
#include <cctype>

namespace shardplan {

namespace {

// A layout longer than this once unrolled is a typo (a 10000-layer model over 1000 stages is ~11000 characters).
constexpr size_t kMaxUnrolled = 1u << 20;

/// Reads the repeat count after '*' at `*i` (capped just past kMaxUnrolled, which append refuses); -1 when none.
long read_count(const std::string& s, size_t* i) {
  if (*i >= s.size() || s[*i] != '*') return -1;
  size_t j = *i + 1;
  long n = 0;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
    n = std::min<long>(n * 10 + (s[j] - '0'), static_cast<long>(kMaxUnrolled) + 1);
    ++j;
  }
  if (j == *i + 1) return -1;
  *i = j;
  return n;
}

bool append(std::string* out, const std::string& piece, long times, std::string* error) {
  if (out->size() + piece.size() * static_cast<size_t>(times) > kMaxUnrolled) {
    *error = "unrolls to more than " + std::to_string(kMaxUnrolled) + " characters";
    return false;
  }
  for (long k = 0; k < times; ++k) *out += piece;
  return true;
}

/// Megatron's two substitutions, in its order: "(group)*N" first (group without ')'), then "x*N".
std::optional<std::string> unroll(const std::string& in, std::string* error) {
  std::string groups;
  for (size_t i = 0; i < in.size();) {
    if (in[i] == ')') {
      *error = "')' without '(' at character " + std::to_string(i + 1);
      return std::nullopt;
    }
    if (in[i] != '(') {
      groups += in[i++];
      continue;
    }
    const size_t close = in.find_first_of("()", i + 1);
    if (close == std::string::npos || in[close] == '(') {
      *error = close == std::string::npos ? "'(' without ')'" : "nested parentheses are not supported";
      return std::nullopt;
    }
    size_t after = close + 1;
    const long n = read_count(in, &after);
    if (n < 0 || close == i + 1) {
      *error = "'(" + in.substr(i + 1, close - i - 1) + ")' must hold something and be followed by *N";
      return std::nullopt;
    }
    if (!append(&groups, in.substr(i + 1, close - i - 1), n, error)) return std::nullopt;
    i = after;
  }
  std::string out;
  for (size_t i = 0; i < groups.size();) {
    const char c = groups[i++];
    if (c == '*') {
      *error = "'*' without a character or group before it";
      return std::nullopt;
    }
    if (i < groups.size() && groups[i] == '*') {
      const long n = read_count(groups, &i);
      if (n < 0) {
        *error = "'*' must be followed by a count";
        return std::nullopt;
      }
      if (!append(&out, std::string(1, c), n, error)) return std::nullopt;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::optional<PipelineLayout> parse_pipeline_layout(const std::string& text, std::string* error) {
  std::string bare;
  for (char c : text)
    if (c != ',') bare += c;  // purely cosmetic (parse_str_to_list)
  const std::optional<std::string> flat = unroll(bare, error);
  if (!flat) return std::nullopt;
  PipelineLayout layout;
  layout.stages.emplace_back();
  for (char c : *flat) {
    LayoutStage& s = layout.stages.back();
    if (c != '|') layout.elements += c;
    switch (c) {
      case '|': layout.stages.emplace_back(); break;
      case 't': ++s.decoders; break;
      case 'm': ++s.mtp; break;
      case 'E':
        if (s.embedding) {
          *error = "'E' (embedding) appears more than once";
          return std::nullopt;
        }
        s.embedding = true;
        break;
      case 'L':
        if (s.loss) {
          *error = "'L' (loss) appears more than once";
          return std::nullopt;
        }
        s.loss = true;
        break;
      default:
        *error = std::string("unknown layer character '") + c + "' (E embedding, t transformer layer, m MTP, L loss)";
        return std::nullopt;
    }
  }
  return layout;
}

std::string pipeline_layout_violation(const PipelineLayout& layout, int pp, int vpp, int layers, int mtp_layers) {
  const int n = static_cast<int>(layout.stages.size());
  if (pp < 1 || n % pp != 0)
    return "has " + std::to_string(n) + " stages, not a multiple of pp (" + std::to_string(pp) + ")";
  if (n != pp * vpp)
    return "has " + std::to_string(n) + " stages = pp " + std::to_string(pp) + " x vpp " + std::to_string(n / pp) +
           ", but the plan's vpp is " + std::to_string(vpp);
  // validate_layer_layout's order checks, on the elements in model order.
  const std::string& e = layout.elements;
  int embeddings = 0, losses = 0, decoders = 0, mtps = 0;
  for (char c : e) {
    embeddings += c == 'E';
    losses += c == 'L';
    decoders += c == 't';
    mtps += c == 'm';
  }
  if (embeddings != 1) return "needs one 'E' (embedding)";
  if (losses != 1) return "needs one 'L' (loss)";
  if (e.front() != 'E') return "must start with 'E' (embedding)";
  if (e.back() != 'L') return "must end with 'L' (loss)";
  const size_t first_mtp = e.find('m');
  if (first_mtp != std::string::npos && e.find('t', first_mtp) != std::string::npos)
    return "transformer layers ('t') must come before the MTP modules ('m')";
  for (int i = 0; i + 1 < n; ++i)
    if (layout.stages[static_cast<size_t>(i)].mtp > 0)
      return "MTP modules ('m') must be in the final stage, with the loss (Megatron-Core keeps them on the last "
             "pipeline rank's last chunk)";
  if (decoders != layers)
    return "has " + std::to_string(decoders) + " transformer layers ('t'); the model has " + std::to_string(layers);
  if (mtps != mtp_layers)
    return "has " + std::to_string(mtps) + " MTP modules ('m'); the plan runs " + std::to_string(mtp_layers) +
           " (mtp_layers)";
  return "";
}

std::vector<LayoutStage> rank_loads(const PipelineLayout& layout, int pp) {
  std::vector<LayoutStage> ranks(static_cast<size_t>(pp > 0 ? pp : 1));
  for (size_t i = 0; i < layout.stages.size(); ++i) {
    const LayoutStage& s = layout.stages[i];
    LayoutStage& r = ranks[i % ranks.size()];
    r.decoders += s.decoders;
    r.mtp += s.mtp;
    r.embedding = r.embedding || s.embedding;
    r.loss = r.loss || s.loss;
  }
  return ranks;
}

std::string pipeline_layout_string(const std::vector<int>& decoders_per_stage, int mtp) {
  std::string s;
  for (size_t i = 0; i < decoders_per_stage.size(); ++i) {
    const int d = decoders_per_stage[i];
    if (i) s += "|";
    if (i == 0) s += "E";
    if (d > 0) s += d == 1 ? "t" : "t*" + std::to_string(d);
    if (i + 1 == decoders_per_stage.size()) {
      if (mtp > 0) s += mtp == 1 ? "m" : "m*" + std::to_string(mtp);
      s += "L";
    }
  }
  return s;
}

}  // namespace shardplan
