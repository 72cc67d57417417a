// How fast a kernel runs under a tiling: the ranking `perfsim fit --search` uses. Everything
// that ranks tilings calls EstimateTilingCost and nothing else.
//
// The grouped-matmul kernels are priced by the cost model, CostGroupedMatmul
// (sim/cost/grouped_matmul.h), on one device of the chip, with the group sizes unknown:
//   gmm, gmm_v2             GroupedMatmulKind::kGmm
//   tgmm, tgmm_v2           GroupedMatmulKind::kTgmm
//   fused_ffn_d_tiled,      GroupedMatmulKind::kFusedFfn with (tm, td, tf)
//   fused_ffn_f_tiled
// so tiles_m + G - 1 visited m-tiles (every group boundary inside a tile), the tile waste of
// whole (tm, tk, tn) tiles on the matrix unit, the weights re-read for every visited m-tile when
// tiles_k > 1 (once per group when tk covers k), at the chip's matrix-unit rate and HBM
// bandwidth (times its efficiency factors), plus the kernel overhead and, on TPUs, a floor of
// compute.grid_step_overhead_seconds per grid step (a Pallas step lasts max(compute, DMA,
// step overhead)): without it, row tiles that move the same bytes tie exactly
// (tests/fit/search_test.cc GridStepOverheadSeparatesRowTilesThatMove...). gmm_v2 with a fused
// activation streams two rhs blocks per step: it is priced as one gmm with n and tn doubled (the work and the rhs traffic double, the
// lhs traffic does not). What the cost model leaves out is the same for every tiling of one
// problem, so it does not change the ranking: the existing_out / partial_sum read (m·n or G·k·n
// bytes), bias and quantisation-scale rows, and the out bytes of the fused activation, which
// the doubling overstates by m·n.
//
// gpu_grouped_gemm is priced by the GPU GEMM model CostGroupedMatmul uses on a GPU
// (sim/cost/gpu_gemm.h CostGpuGemm) with the candidate CTA tile instead of the one the kernel
// heuristic would pick, m split evenly over the groups: CTAs in waves over the SMs (a partial
// last wave costs a whole one), each at the per-SM MMA rate (derated by
// small_rows_fraction_of_peak when tm is under the full-rate M), against the operand bytes
// left after L2 reuse, plus the epilogue's output write and the kernel and per-group fixed
// costs; the k tile only pads k, and the search prefers fewer main-loop iterations among
// equal times. Known gap: the model has no shared-memory / L2-to-SM feed term (the chip
// files give no L2 or shared-memory bandwidth), so a small tile that cuts wave quantisation
// (e.g. (64, 16) on a large problem) ranks above the (128, 256) tile real kernels run at a
// few % more estimated time; ChooseGpuGemmTile, which predict and accuracy use, ranks by
// waves as DeepGEMM does and is not affected.
// The cost model has no price for the SparseCore ragged gather, which keeps a roofline proxy
// (per device: a chip's figures divided by its devices_per_chip):
//   ragged_gather      bytes = the kernel's own cost estimate (backends.md 1a.3),
//                      out_rows·D·dtype·2 + out_rows·4 (+ out_rows·4 with weights), at HBM
//                      bandwidth; plus 0.35 us per step spread over the SparseCores
//   seconds = max(compute_seconds, memory_seconds) + overhead_seconds (+ kernel overhead).
// 0.35 us per grid step is the per-step cost the Pallas TPU matmul guide quotes (recalled, not
// in shared/reference).
#ifndef PERFSIM_SIM_FIT_TILING_COST_H_
#define PERFSIM_SIM_FIT_TILING_COST_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "sim/fit/kernels.h"
#include "sim/hw/chip.h"

namespace perfsim {

// Pallas TPU fixed cost per grid step, seconds (the ragged_gather proxy).
inline constexpr double kTpuGridStepOverheadSeconds = 0.35e-6;

struct TilingCostEstimate {
  double seconds = 0;
  double compute_seconds = 0;
  double memory_seconds = 0;
  double overhead_seconds = 0;
  double flops = 0;      // Matrix work the units execute (whole tiles), FLOP.
  double hbm_bytes = 0;  // Bytes moved between HBM and on-chip memory.
  // TPU: grid steps; GPU: CTA main-loop iterations (CTAs × k steps).
  int64_t grid_steps = 0;
};

// Whether the cost model (CostGroupedMatmul) prices `kernel` (gpu_grouped_gemm: CostGpuGemm
// with the candidate tile; ragged_gather: the proxy).
bool PricedByCostModel(KernelKind kernel);

// The estimate for one legal tiling of a validated problem. A problem the cost model refuses
// (it cannot be, after ValidateProblem and CheckTilingRange) gets an infinite time, so it
// ranks last.
TilingCostEstimate EstimateTilingCost(const KernelProblem& problem, const Tiling& tiling,
                                      const Chip& chip);

// One line naming what ranks `kernel`'s tilings, for reports: "cost model
// (sim/cost/grouped_matmul.h CostGroupedMatmul, group sizes unknown: ...)", "GPU GEMM model
// (sim/cost/gpu_gemm.h CostGpuGemm ...)" or "roofline proxy (sim/fit/tiling_cost.h): ...".
std::string TilingCostModelName(KernelKind kernel);

}  // namespace perfsim

#endif  // PERFSIM_SIM_FIT_TILING_COST_H_
