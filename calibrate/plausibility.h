// Refusing calibrations that cannot be right (issue 12 item 5): a profile written from them would make every later
// prediction wrong without a word. Each check returns reasons, not exceptions, so the command can list them all,
// refuse with exit 2, or, with --accept-anyway, write the profile and record them in its provenance.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/nccl_tests_log.h"
#include "modeler/system.h"

namespace shardplan::calibrate {

/// The model token of a GPU name, lower case: "h100" for "NVIDIA H100 80GB HBM3" and "h100-sxm5-80gb", "a100"
/// for "NVIDIA A100-SXM4-40GB", "4090" for "NVIDIA GeForce RTX 4090" and "rtx-4090", "mi300x"; "" when the name
/// has none (e.g. "none (host buffers)", the MPI benchmark's context).
std::string gpu_family(std::string_view name);
/// The memory size a name states ("80gb"), or "".
std::string gpu_memory(std::string_view name);
/// Whether a reported device name is the GPU of profile `profile_name`: same model token, and the same memory
/// size where both names state one (an A100-SXM4-40GB is not an a100-sxm4-80gb).
bool same_gpu(std::string_view device, std::string_view profile_name);

/// A device name and where it was read ("file:line").
struct DeviceSeen {
  std::string device, where;
};
/// Reasons the devices do not match the base GPU, or differ among themselves (one fit must measure one GPU).
std::vector<std::string> gpu_mismatches(const std::vector<DeviceSeen>& devices, const System& base);

/// The tier a group of `nranks` ranks on `hosts` hosts exercises: one host, the innermost tier holding the group;
/// several hosts, the innermost tier whose domain holds those whole nodes (an NVL72 rack spans 18 hosts).
int tier_for_hosts(const System& base, int nranks, int hosts);

/// Largest stated efficiency a fitted link or memory curve may reach: data cannot move faster than the line rate.
constexpr double kMaxLinkEfficiency = 1.0;
/// Smallest efficiency a fitted link curve may peak at. A policy limit, not a physical constant: a tier that never
/// reaches 1% of its line rate at any size is not the tier being measured (host staging buffers, NCCL fallen back to
/// TCP sockets over a management network, a disturbed run), and a profile written from it would make every plan
/// that touches the tier look hopeless. Valid logs fit far above it: 78.9% (tests/data/nccl_tests_samples.txt sample 3,
/// 8 A100 sendrecv on dgx-a100) and 84% (tests/data/nccl_tests_captured, InfiniBand on dgx-h100).
constexpr double kMinLinkEfficiency = 0.01;
/// A fitted table must reproduce its own rows: beyond these the tables describe something the predictor's
/// formulas do not (host buffers, a broken or disturbed run). Policy limits, not physical constants, set well above
/// what real logs give: the valid shipped nccl-tests samples fit with median 1.9% / max 12.8% (sample 2, 12 V100
/// all_reduce) and 7.1% / 22.9% (sample 3, A100 sendrecv, 4 rows); the MPI benchmark on host buffers fitted into
/// dgx-h100 gives 50% / 497% (docs/calibration-checks.md).
constexpr double kMaxMedianError = 0.25;
constexpr double kMaxMaxError = 1.0;

/// Reasons a fit is implausible: a tier or HBM faster than its line rate or never reaching kMinLinkEfficiency of
/// it, residuals above the limits.
std::vector<std::string> implausible_fit(const Fit& fit, const System& base);

}  // namespace shardplan::calibrate
