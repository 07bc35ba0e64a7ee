#include "modeler/serving/transforms.h"

#include <algorithm>
#include <cmath>

#include "modeler/curve.h"
#include "modeler/serving/tensors.h"

namespace shardplan::serving {

namespace {

// The sparse-kernel table: measured speedup of a sparse GEMM over the dense GEMM of the same shape on the
// compute-bound side, by pattern, against the dense-equivalent FLOPs 2*m*n*k.
//
// 2:4 (NVIDIA Sparse Tensor Cores, cuSPARSELt/CUTLASS kernels through PyTorch's semi-structured tensors):
// measured on one A100 in fp16 on ViT-L MLP shapes by the torchao maintainers (pytorch/ao, commit 881ae2c,
// torchao/sparsity/training/README.md): the 13008 x 1024 -> 4096 linear 1.660793 -> 1.341983 ms (1.24x), the
// 4096 -> 1024 one 1.27x, and the whole MLP at 44160 tokens (1024 -> 4096 -> 1024) 11534.3 -> 9204.7 us
// (1.25x). Those times are forward plus backward; shardplan applies them to the forward GEMMs of serving, on
// every GPU with Sparse Tensor Cores and in fp8 too: the only published shape-level measurement found, far
// below the 2x the datasheet's sparse TFLOPS promise (A100: 624 vs 312 fp16). Clamped outside the points.
const Curve& two_four_speedup() {
  static const Curve c{{2.0 * 13008 * 1024 * 4096, 2.0 * 44160 * 1024 * 4096 * 2},
                       {1.24, 1.25},
                       OutOfRange::clamp,
                       "torchao 881ae2c sparsity/training/README.md, A100 fp16 ViT-L MLP"};
  return c;
}

// Block sparsity (BSR): the kernel's efficiency relative to a dense GEMM doing the same (kept) FLOPs. BLaST's
// fused sparse-MLP kernel is 16.7x faster than dense at 95% sparsity (Okanovic et al., arXiv 2507.03117 v1), so
// eta = 16.7 x 0.05 = 0.835 (techniques.md section 8, derived). One published point: applied at every density,
// block size and shape.
constexpr double kBlockSparseEta = 16.7 * 0.05;

// ggml's block formats have no sparse kernel (llama.cpp runs dense dequantising kernels only), the weight-only
// integer formats run mixed-input GEMMs (Marlin-style) with no 2:4 variant in any engine, and no sparse kernel
// for block-scaled formats (fp8_block, mxfp8, nvfp4, mxfp4) is modelled: the table above has no measurement.
bool sparse_kernel_format(WeightFormat f) {
  switch (f) {
    case WeightFormat::bf16: case WeightFormat::fp16: case WeightFormat::fp8: return true;
    default: return false;
  }
}

// Sparse Tensor Cores arrived with Ampere (NVIDIA A100 whitepaper), together with the bf16 ones; CDNA3 has 2:4
// too (AMD MI300X datasheet lists sparse FLOPS). The profiles carry no architecture field, so the pre-Ampere
// parts shipped in hwprofiles/gpus (Volta V100, Turing T4 and RTX 2080, whose profiles store the fp16 rate as bf16)
// are named here, and the Apple GPUs, which have no tensor cores (philipturner/metal-benchmarks README: Metal's
// simdgroup_matrix runs on the fp32 ALUs); any other profile without a bf16 rate is refused as well.
bool has_sparse_tensor_cores(const Gpu& g) {
  for (const char* old : {"v100", "t4", "rtx-2080", "apple-"})
    if (g.name.rfind(old, 0) == 0) return false;
  return g.peak_for(Dtype::bf16).v > 0;
}

int target_of(const WeightTensor& t) {
  if (t.experts > 0) return kTargetExperts;
  switch (t.role) {
    case TensorRole::attn_q: case TensorRole::attn_k: case TensorRole::attn_v: case TensorRole::attn_output:
      return kTargetAttn;
    case TensorRole::ffn_gate: case TensorRole::ffn_up: case TensorRole::ffn_down: return kTargetMlp;
    default: return 0;  // embedding, LM head, router, norms
  }
}

int parse_targets(const std::string& flag, const std::string& list) {
  int bits = 0;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string t = list.substr(pos, comma - pos);
    if (t == "attn") bits |= kTargetAttn;
    else if (t == "mlp") bits |= kTargetMlp;
    else if (t == "experts") bits |= kTargetExperts;
    else if (t == "all") bits |= kTargetAttn | kTargetMlp | kTargetExperts;
    else throw ConfigError(flag + ": unknown target '" + t + "' (attn, mlp, experts, all; comma separated)");
    pos = comma + 1;
  }
  return bits;
}

double parse_number(const std::string& flag, const std::string& what, const std::string& s) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError(flag + ": " + what + " must be a number, got '" + s + "'");
}

std::vector<std::string> split_colons(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t c = s.find(':', pos);
    out.push_back(s.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return out;
}

}  // namespace

Transform parse_sparsity(const std::string& flag, const std::string& spec) {
  const std::vector<std::string> f = split_colons(spec);
  Transform t;
  t.kind = Transform::Kind::sparsify;
  if (f.size() >= 2 && f[0] == "2" && f[1] == "4") {
    if (f.size() > 3) throw ConfigError(flag + ": expected 2:4[:targets], got '" + spec + "'");
    t.sparsity = Sparsity::two_four;
    t.density = 0.5;
    if (f.size() == 3) t.targets = parse_targets(flag, f[2]);
    return t;
  }
  if (!f.empty() && f[0] == "block") {
    if (f.size() < 3 || f.size() > 4)
      throw ConfigError(flag + ": expected block:DENSITY:BLOCK[:targets], got '" + spec + "'");
    t.sparsity = Sparsity::block;
    t.density = parse_number(flag, "block density", f[1]);
    if (!(t.density > 0 && t.density < 1))
      throw ConfigError(flag + ": block density must be in (0, 1) (kept fraction), got " + f[1]);
    const double b = parse_number(flag, "block size", f[2]);
    if (b < 1 || b > 1024 || b != std::floor(b))
      throw ConfigError(flag + ": block size must be an integer from 1 to 1024, got " + f[2]);
    t.block = static_cast<int>(b);
    if (f.size() == 4) t.targets = parse_targets(flag, f[3]);
    return t;
  }
  throw ConfigError(flag + ": expected 2:4[:targets] or block:DENSITY:BLOCK[:targets], got '" + spec + "'");
}

Transform parse_low_rank(const std::string& flag, const std::string& spec) {
  const std::vector<std::string> f = split_colons(spec);
  if (f.size() > 2) throw ConfigError(flag + ": expected RANK[:targets], got '" + spec + "'");
  Transform t;
  t.kind = Transform::Kind::low_rank;
  t.targets = kTargetAttn | kTargetMlp;
  const double r = parse_number(flag, "rank", f[0]);
  if (r < 1 || r != std::floor(r) || r > 1e6)
    throw ConfigError(flag + ": rank must be a positive integer, got '" + f[0] + "'");
  t.rank = static_cast<int>(r);
  if (f.size() == 2) t.targets = parse_targets(flag, f[1]);
  return t;
}

Bytes transformed_bytes(double n, double k, int experts, WeightFormat f, const LinearTransform& x) {
  const double per_elem = bits_per_weight(f) / 8.0;
  const double e = std::max(1, experts);
  const double dense = x.rank > 0 ? x.rank * (n + k) : n * k;
  switch (x.sparsity) {
    case Sparsity::two_four:
      // Kept half, plus a 2-bit index of each kept value within its group of four.
      return Bytes(e * dense * 0.5 * (per_elem + 2.0 / 8.0));
    case Sparsity::block: {
      const double blocks = dense * x.density / (1.0 * x.block * x.block);
      return Bytes(e * (dense * x.density * per_elem + blocks * 4.0));
    }
    case Sparsity::dense: break;
  }
  return Bytes(e * dense * per_elem);
}

Bytes low_rank_rank_bytes(double n, double k, const LinearTransform& x, Bytes bytes, bool column, double div) {
  if (x.rank <= 0 || div <= 1) return bytes / std::max(1.0, div);
  const double in_share = x.rank * k / (x.rank * (n + k));  // B's part of the bytes
  const double out_share = 1.0 - in_share;                 // A's part
  return column ? bytes * (in_share + out_share / div) : bytes * (in_share / div + out_share);
}

double sparse_compute_speedup(const LinearTransform& x, double m, double n, double k) {
  switch (x.sparsity) {
    case Sparsity::two_four: return two_four_speedup().at(2.0 * m * n * k);
    case Sparsity::block: return kBlockSparseEta / x.density;
    case Sparsity::dense: break;
  }
  return 1.0;
}

void apply_transforms(std::vector<WeightTensor>* tensors, const std::vector<Transform>& transforms) {
  for (const Transform& tr : transforms) {
    for (WeightTensor& t : *tensors) {
      if (!(target_of(t) & tr.targets)) continue;
      switch (tr.kind) {
        case Transform::Kind::sparsify:
          if (t.xf.sparsity != Sparsity::dense)
            throw ConfigError("--sparsity: " + t.name + " is already " + transform_label(t.xf) +
                              "; one sparsity per tensor");
          t.xf.sparsity = tr.sparsity;
          t.xf.density = tr.density;
          t.xf.block = tr.block;
          break;
        case Transform::Kind::low_rank:
          if (t.experts > 0)
            throw ConfigError("--low-rank: routed experts (" + t.name + ") are not modelled; target attn,mlp");
          if (tr.rank * (t.n + t.k) >= t.n * t.k)
            throw ConfigError("--low-rank: rank " + num(tr.rank) + " does not shrink " + t.name + " (" + num(t.n) +
                              " x " + num(t.k) + "): needs rank < n*k/(n+k) = " +
                              num(std::floor(t.n * t.k / (t.n + t.k) - 1e-9)));
          t.xf.rank = tr.rank;
          break;
        case Transform::Kind::quantize: t.format = tr.format; break;
      }
    }
  }
  for (WeightTensor& t : *tensors) {
    if (t.xf.sparsity != Sparsity::dense && !sparse_kernel_format(t.format))
      throw ConfigError("--sparsity: no sparse kernel runs " + weight_format_name(t.format) + " weights (" + t.name +
                        "): 2:4 and block sparsity take bf16, fp16 or fp8");
    if (t.xf.sparsity != Sparsity::dense || t.xf.rank > 0)
      t.bytes = transformed_bytes(t.n, t.k, t.experts, t.format, t.xf);
  }
}

Problems check_transform_kernels(const std::vector<WeightTensor>& tensors, const Gpu& gpu) {
  Problems p;
  for (const WeightTensor& t : tensors) {
    if (t.xf.sparsity == Sparsity::dense) continue;
    if (t.xf.sparsity == Sparsity::two_four && !has_sparse_tensor_cores(gpu)) {
      p.push_back({"sparse_tensor_cores", gpu.name + " has no Sparse Tensor Cores (2:4 needs Ampere or later)"});
      break;
    }
    if (t.format == WeightFormat::fp8 && gpu.peak_for(Dtype::fp8).v <= 0) {
      p.push_back({"sparse_fp8", gpu.name + " has no fp8 tensor cores for sparse fp8 weights"});
      break;
    }
  }
  return p;
}

std::string transform_label(const LinearTransform& x) {
  std::string s;
  if (x.sparsity == Sparsity::two_four) s = "2:4";
  if (x.sparsity == Sparsity::block) s = "block " + num(x.density, "%.3g") + " x " + num(x.block);
  if (x.rank > 0) s += (s.empty() ? "" : ", ") + std::string("rank ") + num(x.rank);
  return s;
}

}  // namespace shardplan::serving
