// Whether a kernel's tiling fits on-chip memory: FitReport, and the limits it is checked against.
//
//   PERFSIM_ASSIGN_OR_RETURN(Chip chip, ResolveChip("tpu_v5p"));
//   KernelProblem p{KernelKind::kGmm, {16384, 1024, 1024, 8},
//                   {PrimitiveType::kF32, PrimitiveType::kF32, PrimitiveType::kF32}};
//   PERFSIM_ASSIGN_OR_RETURN(FitReport r, CheckFit(p, Tiling{512, 1024, 1024}, chip));
//   r.fits == false; r.required_bytes == 18 MiB; r.limit_bytes == 16 MiB (scoped default);
//   r.fits_physical == true (64 MiB), so raising vmem_limit_bytes would make it fit.
//
// "Does not fit" is a normal result with a reason, not an error. Errors (InvalidArgument) are
// for questions that have no answer: a TPU kernel on a GPU, sizes out of range, a limit above
// physical memory, SparseCore kernels on chips without SparseCore memory.
//
// Limits, per kernel (DESIGN.md "Fit", shared/reference/backends.md 1c):
//   gmm, tgmm (megablox v1)     the chip's default scoped VMEM limit (they set no
//                               vmem_limit_bytes): 16 MiB on v5e/v5p, 32 MiB on v6e/v7x
//   gmm_v2, tgmm_v2             0.9 × physical VMEM (the kernels set vmem_limit_bytes to it)
//   fused_ffn_*                 0.9 × physical VMEM (assumed like GMM v2: a kernel holding
//                               weight blocks this large must raise the limit)
//   ragged_gather               the memory of one SparseCore subcore
//   gpu_grouped_gemm            shared memory one CTA may opt into (physical: per SM)
// `vmem_limit_bytes` overrides the limit of the VMEM kernels (`perfsim fit --vmem-limit`).
#ifndef PERFSIM_SIM_FIT_FIT_REPORT_H_
#define PERFSIM_SIM_FIT_FIT_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/fit/footprint.h"
#include "sim/fit/kernels.h"
#include "sim/hw/chip.h"

namespace perfsim {

// The memory a kernel's main footprint is checked in, and its limits there.
struct FitLimits {
  MemorySpace space = MemorySpace::kVmem;
  // What the kernel may use: the default, the kernel's own limit, or the override.
  int64_t limit_bytes = 0;
  // Where limit_bytes comes from, for people: "default scoped VMEM limit of tpu_v5p".
  std::string limit_source;
  // The chip's default for kernels that set no limit (scoped VMEM, or per-CTA shared memory).
  int64_t default_limit_bytes = 0;
  // Physical memory of the space: VMEM per TensorCore, subcore memory, shared memory per SM.
  int64_t physical_bytes = 0;
  // TPU SMEM per TensorCore for scalar-prefetch buffers; 0 when the kernel has none.
  int64_t smem_limit_bytes = 0;
};

// The limits `problem.kernel` runs under on `chip`, with `vmem_limit_bytes` (when given)
// replacing the VMEM limit. InvalidArgument for a kernel/chip family mismatch, an override on a
// non-VMEM kernel, an override outside [1, physical VMEM], or a SparseCore kernel on a chip with
// no SparseCore memory.
absl::StatusOr<FitLimits> ResolveLimits(KernelKind kernel, const Chip& chip,
                                        std::optional<int64_t> vmem_limit_bytes);

struct FitReport {
  std::string kernel;  // KernelName
  std::string chip;    // Chip::name
  KernelProblem problem;
  Tiling tiling;

  // The tiling is legal and its footprint fits the limit (and SMEM, when used).
  bool fits = false;
  int64_t required_bytes = 0;  // Sum of the buffers in limits.space.
  FitLimits limits;
  int64_t limit_bytes = 0;     // = limits.limit_bytes
  int64_t physical_bytes = 0;  // = limits.physical_bytes
  int64_t margin_bytes = 0;    // limit_bytes - required_bytes; negative when it does not fit.
  bool fits_default_limit = false;
  bool fits_physical = false;
  int64_t smem_required_bytes = 0;
  std::vector<FitBuffer> buffers;
  // Rules of the kernel the tiling or problem breaks (footprint.h).
  std::vector<std::string> violations;
  // One line: why it does not fit (the first violation or the shortfall), or the margin.
  std::string reason;
};

// Footprint of `problem` under `tiling` on `chip`, checked against its limits.
absl::StatusOr<FitReport> CheckFit(const KernelProblem& problem, const Tiling& tiling,
                                   const Chip& chip,
                                   std::optional<int64_t> vmem_limit_bytes = std::nullopt);

// The same check with limits already resolved and the problem already validated (the search
// calls this for every candidate).
FitReport CheckFitWithLimits(const KernelProblem& problem, const Tiling& tiling, const Chip& chip,
                             const FitLimits& limits);

// Buffers sorted by bytes, largest first (ties by name), for messages and tables.
std::vector<FitBuffer> LargestBuffers(const std::vector<FitBuffer>& buffers);

// "18 MiB", "1.5 MiB", "227 KiB", "64 B": binary units, at most 3 significant digits.
std::string FormatBytes(int64_t bytes);

}  // namespace perfsim

#endif  // PERFSIM_SIM_FIT_FIT_REPORT_H_
