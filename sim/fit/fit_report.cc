// Limits per kernel and the fit check (fit_report.h).
#include "sim/fit/fit_report.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// GMM v2 / TGMM v2 set vmem_limit_bytes = 0.9 × VMEM capacity (backends.md 1c).
constexpr double kOwnLimitFractionOfVmem = 0.9;

bool SetsOwnVmemLimit(KernelKind kernel) {
  switch (kernel) {
    case KernelKind::kGmmV2:
    case KernelKind::kTgmmV2:
    case KernelKind::kFusedFfnDTiled:
    case KernelKind::kFusedFfnFTiled:
      return true;
    case KernelKind::kGmm:
    case KernelKind::kTgmm:
    case KernelKind::kRaggedGather:
    case KernelKind::kGpuGroupedGemm:
      return false;
  }
  return false;
}

std::string ChipWord(const Chip& chip) { return chip.is_tpu() ? "TPU" : "GPU"; }

std::string Shortfall(const FitReport& r) {
  const FitLimits& l = r.limits;
  const absl::string_view space = MemorySpaceName(l.space);
  std::string text =
      absl::StrCat("needs ", FormatBytes(r.required_bytes), " of ", space, "; limit ",
                   FormatBytes(l.limit_bytes), " (", l.limit_source, ")");
  if (r.margin_bytes >= 0)
    return absl::StrCat(text, ", ", FormatBytes(r.margin_bytes), " to spare");
  absl::StrAppend(&text, ", short by ", FormatBytes(-r.margin_bytes));
  if (l.physical_bytes > l.limit_bytes) {
    if (r.fits_physical) {
      absl::StrAppend(&text, "; fits the ", FormatBytes(l.physical_bytes), " of physical ", space,
                      ", so a higher vmem_limit_bytes would make it fit");
    } else {
      absl::StrAppend(&text, "; exceeds the ", FormatBytes(l.physical_bytes), " of physical ",
                      space, " too");
    }
  }
  return text;
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  if (bytes < 0) return absl::StrCat("-", FormatBytes(-bytes));
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", value);
  std::string text = buffer;
  // "18.00" -> "18", "57.60" -> "57.6".
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return absl::StrCat(text, " ", kUnits[unit]);
}

absl::StatusOr<FitLimits> ResolveLimits(KernelKind kernel, const Chip& chip,
                                        std::optional<int64_t> vmem_limit_bytes) {
  const absl::string_view name = KernelName(kernel);
  if (IsTpuKernel(kernel) != chip.is_tpu()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected a ", IsTpuKernel(kernel) ? "TPU" : "GPU", " chip for this ",
                     IsTpuKernel(kernel) ? "TPU" : "GPU", " kernel; got ", chip.name(), " (",
                     ChipWord(chip), ")"));
  }
  const MemorySpec& memory = chip.proto().memory();
  FitLimits limits;
  if (kernel == KernelKind::kGpuGroupedGemm || kernel == KernelKind::kRaggedGather) {
    if (vmem_limit_bytes.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": a VMEM limit applies to TensorCore (VMEM) kernels; this kernel runs in ",
          kernel == KernelKind::kRaggedGather ? "SparseCore memory" : "GPU shared memory"));
    }
  }
  if (kernel == KernelKind::kGpuGroupedGemm) {
    limits.space = MemorySpace::kGpuSharedMemory;
    limits.limit_bytes = memory.shared_memory_bytes_per_block();
    limits.default_limit_bytes = limits.limit_bytes;
    limits.physical_bytes = memory.shared_memory_bytes_per_sm();
    limits.limit_source = absl::StrCat("shared memory one CTA may opt into on ", chip.name());
    return limits;
  }
  if (kernel == KernelKind::kRaggedGather) {
    if (memory.sparsecore_memory_bytes_per_subcore() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name,
          ": expected a chip with SparseCore memory "
          "(memory.sparsecore_memory_bytes_per_subcore > 0); got ",
          chip.name(), " with ",
          chip.proto().compute().sparsecores_per_chip() == 0 ? "no SparseCore"
                                                             : "no sourced subcore memory"));
    }
    limits.space = MemorySpace::kSparseCoreMemory;
    limits.limit_bytes = memory.sparsecore_memory_bytes_per_subcore();
    limits.default_limit_bytes = limits.limit_bytes;
    limits.physical_bytes = limits.limit_bytes;
    limits.limit_source = absl::StrCat("memory of one SparseCore subcore of ", chip.name());
    return limits;
  }
  limits.space = MemorySpace::kVmem;
  limits.physical_bytes = memory.vmem_bytes_per_core();
  limits.default_limit_bytes = memory.default_scoped_vmem_limit_bytes();
  limits.smem_limit_bytes = memory.smem_bytes_per_core();
  if (vmem_limit_bytes.has_value()) {
    if (*vmem_limit_bytes < 1 || *vmem_limit_bytes > limits.physical_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "VMEM limit: expected 1 to ", limits.physical_bytes, " bytes (the physical VMEM of ",
          chip.name(), ", ", FormatBytes(limits.physical_bytes), "); got ", *vmem_limit_bytes));
    }
    limits.limit_bytes = *vmem_limit_bytes;
    limits.limit_source = "the given VMEM limit";
  } else if (SetsOwnVmemLimit(kernel)) {
    limits.limit_bytes =
        static_cast<int64_t>(kOwnLimitFractionOfVmem * static_cast<double>(limits.physical_bytes));
    limits.limit_source =
        absl::StrCat("the kernel's own limit, 0.9 x physical VMEM of ", chip.name());
  } else {
    limits.limit_bytes = limits.default_limit_bytes;
    limits.limit_source = absl::StrCat("default scoped VMEM limit of ", chip.name());
  }
  return limits;
}

FitReport CheckFitWithLimits(const KernelProblem& problem, const Tiling& tiling, const Chip& chip,
                             const FitLimits& limits) {
  KernelFootprint footprint = ComputeFootprint(problem, tiling, chip);
  FitReport r;
  r.kernel = std::string(KernelName(problem.kernel));
  r.chip = chip.name();
  r.problem = problem;
  r.tiling = tiling;
  r.limits = limits;
  r.limit_bytes = limits.limit_bytes;
  r.physical_bytes = limits.physical_bytes;
  r.required_bytes = footprint.BytesIn(limits.space);
  r.smem_required_bytes = footprint.BytesIn(MemorySpace::kSmem);
  r.margin_bytes = limits.limit_bytes - r.required_bytes;
  r.fits_default_limit = r.required_bytes <= limits.default_limit_bytes;
  r.fits_physical = r.required_bytes <= limits.physical_bytes;
  const bool smem_fits =
      r.smem_required_bytes == 0 || r.smem_required_bytes <= limits.smem_limit_bytes;
  r.fits = footprint.violations.empty() && r.margin_bytes >= 0 && smem_fits;
  r.buffers = std::move(footprint.buffers);
  r.violations = std::move(footprint.violations);
  if (!r.violations.empty()) {
    r.reason = absl::StrCat("breaks a rule of ", r.kernel, ": ", r.violations.front());
    if (r.violations.size() > 1) {
      absl::StrAppend(&r.reason, " (and ", r.violations.size() - 1, " more)");
    }
  } else if (r.margin_bytes >= 0 && !smem_fits) {
    r.reason = absl::StrCat("scalar-prefetch metadata needs ", FormatBytes(r.smem_required_bytes),
                            " of SMEM; limit ", FormatBytes(limits.smem_limit_bytes));
  } else {
    r.reason = Shortfall(r);
  }
  return r;
}

absl::StatusOr<FitReport> CheckFit(const KernelProblem& problem, const Tiling& tiling,
                                   const Chip& chip, std::optional<int64_t> vmem_limit_bytes) {
  PERFSIM_RETURN_IF_ERROR(ValidateProblem(problem));
  PERFSIM_RETURN_IF_ERROR(CheckTilingRange(problem, tiling));
  PERFSIM_ASSIGN_OR_RETURN(FitLimits limits, ResolveLimits(problem.kernel, chip, vmem_limit_bytes));
  return CheckFitWithLimits(problem, tiling, chip, limits);
}

std::vector<FitBuffer> LargestBuffers(const std::vector<FitBuffer>& buffers) {
  std::vector<FitBuffer> sorted = buffers;
  std::stable_sort(sorted.begin(), sorted.end(), [](const FitBuffer& a, const FitBuffer& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.name < b.name;
  });
  return sorted;
}

}  // namespace perfsim
