// The fastest legal tiling that fits, and the runners-up.
//
//   TilingSearchResult r = *SearchTilings(problem, chip, {});
//   r.best->tiling;            // fastest fitting tiling by EstimateTilingCost (tiling_cost.h:
//                              // the cost model for gmm*, tgmm*, fused_ffn_*)
//   r.runners_up;              // the next fastest fitting ones, fastest first
//   r.candidates, r.fitting;   // legal tilings enumerated, and how many of them fit
//
// Candidates (all legal by the kernel's rules, footprint.h / kernels.h):
//   tm     multiples of 8 that divide m, and m itself (megablox requires m % tm == 0; for the v2
//          kernels a tm that does not divide m only adds padded rows, so it is not tried)
//   tk, tn multiples of 128 up to the dimension (every one up to 8192, then powers of two and
//          divisors of the dimension), and the whole dimension
//   fused_ffn_d_tiled: (tm, td, F); fused_ffn_f_tiled: (tm, D, tf)
//   ragged_gather: rows per step K·2^i up to 4096 (and m rounded up to K); D chunks that divide
//          D in multiples of 8, and D
//   gpu_grouped_gemm: tm in 16..256 step 16, tn multiples of the MMA N up to 256, tk multiples
//          of the MMA K up to 256
// Ties in estimated time go to fewer grid steps (GPU: main-loop iterations), then the smaller
// footprint, then the smaller (tm, tk, tn), so the result is deterministic.
#ifndef PERFSIM_SIM_FIT_TILING_SEARCH_H_
#define PERFSIM_SIM_FIT_TILING_SEARCH_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/fit/fit_report.h"
#include "sim/fit/kernels.h"
#include "sim/fit/tiling_cost.h"
#include "sim/hw/chip.h"

namespace perfsim {

struct RankedTiling {
  Tiling tiling;
  TilingCostEstimate cost;
  int64_t required_bytes = 0;
};

struct TilingSearchOptions {
  // Runners-up to return after the best.
  int64_t max_runners_up = 5;
  // Replaces the kernel's VMEM limit (fit_report.h).
  std::optional<int64_t> vmem_limit_bytes;
};

struct TilingSearchResult {
  FitLimits limits;
  int64_t candidates = 0;
  int64_t fitting = 0;
  // The fastest fitting tiling's full report and estimate; empty when nothing fits.
  std::optional<FitReport> best;
  TilingCostEstimate best_cost;
  std::vector<RankedTiling> runners_up;
  // When nothing fits: the candidate with the smallest footprint, to show how far off it is.
  std::optional<FitReport> smallest_misfit;
};

// Legal candidate tilings of `problem` (validated) on `chip`, in a fixed order.
std::vector<Tiling> EnumerateTilings(const KernelProblem& problem, const Chip& chip);

// InvalidArgument as CheckFit for problems and limits that have no answer.
absl::StatusOr<TilingSearchResult> SearchTilings(const KernelProblem& problem, const Chip& chip,
                                                 const TilingSearchOptions& options);

}  // namespace perfsim

#endif  // PERFSIM_SIM_FIT_TILING_SEARCH_H_
