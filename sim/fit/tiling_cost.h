// How fast a kernel runs under a tiling: the ranking `perfsim fit --search` uses.
//
// This is a documented proxy that stands in until the cost model (sim/cost, issue 5) can time a
// kernel; everything that ranks tilings calls EstimateTilingCost and nothing else, so swapping
// it is one function. The proxy is a roofline per kernel call, on one device (a chip's figures
// divided by its devices_per_chip, so one v7x TensorCore):
//
//   compute_seconds  = Σ over grid steps of the block's matrix work, each block padded to the
//                      matrix unit (MXU 128/256, GPU MMA), at the dense peak of the operand type
//   memory_seconds   = the HBM bytes the tiling implies (every block fetch the DMA pipeline does
//                      not skip: the lhs once per n tile, the rhs once per active m-tile unless
//                      tk covers k, ...) at the HBM bandwidth
//   overhead_seconds = grid steps × 0.35 us on TPU (the per-step cost the Pallas TPU matmul
//                      guide quotes; recalled, not in shared/reference) + kernel_overhead_seconds
//   seconds          = max(compute_seconds, memory_seconds) + overhead_seconds
//
// GPU: CTAs run in waves over the SMs; a CTA's time is its MMA work at the per-SM peak, derated
// by small_rows_fraction_of_peak when tm is below the chip's full-rate M. The k tile does not
// change a GPU estimate; the search prefers fewer main-loop iterations among equal times.
// Grouped kernels assume every group non-empty, so tiles_m + min(groups, m) - 1 m-tiles are
// active (the megablox bound). f32 operands on a chip with no sourced f32 matmul peak run at a
// third of the bf16 peak (three bf16 passes).
#ifndef PERFSIM_SIM_FIT_TILING_COST_H_
#define PERFSIM_SIM_FIT_TILING_COST_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "sim/fit/kernels.h"
#include "sim/hw/chip.h"

namespace perfsim {

// Pallas TPU fixed cost per grid step, seconds.
inline constexpr double kTpuGridStepOverheadSeconds = 0.35e-6;

struct TilingCostEstimate {
  double seconds = 0;
  double compute_seconds = 0;
  double memory_seconds = 0;
  double overhead_seconds = 0;
  double flops = 0;      // Padded matrix work, FLOP.
  double hbm_bytes = 0;  // Bytes moved between HBM and on-chip memory.
  // TPU: grid steps; GPU: CTA main-loop iterations (CTAs × k steps).
  int64_t grid_steps = 0;
};

TilingCostEstimate EstimateTilingCost(const KernelProblem& problem, const Tiling& tiling,
                                      const Chip& chip);

// One line naming the model, for reports ("roofline proxy (sim/fit/tiling_cost.h): ...").
absl::string_view TilingCostModelName();

}  // namespace perfsim

#endif  // PERFSIM_SIM_FIT_TILING_COST_H_
