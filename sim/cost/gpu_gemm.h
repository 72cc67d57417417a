// GPU GEMM and grouped-GEMM cost from what the kernels do: one model for `predict` (XLA
// ragged-dots and perfsim.gmm / perfsim.tgmm on a GPU, through CostGroupedMatmul), `fit
// --search` (gpu_grouped_gemm) and `accuracy` (kernel_grouped_gemm rows on a GPU).
//
//   GpuGemmProblem p{.groups = {{.m = 8192, .n = 14336, .k = 4096}}};  // bf16 in, f32 out
//   GpuGemmTile tile = ChooseGpuGemmTile(p, chip);       // (128, 256), tk 64 on an H100
//   GpuGemmCost c = CostGpuGemm(p, tile, chip);
//   // c.ctas == 64 · 56 = 3584 over 132 SMs: c.waves == 28; c.rhs_bytes == 3 passes of the
//   // 117 MB weight (it does not fit half the 50 MiB L2), c.lhs_bytes == the 67 MB once.
//
// A problem is a list of independent GEMMs, one per group: out[m, n] = lhs[m, k] · rhs[k, n]
// (gmm: m = the group's rows; tgmm: m = K, n = N, k = the group's rows). A persistent grouped
// kernel (CUTLASS grouped GEMM, DeepGEMM m_grouped_*, cuBLASLt grouped) runs the output tiles
// of all groups as one pool of CTAs over the SMs.
//
// Tile (ChooseGpuGemmTile): CTA tiles (tm, tn) with tm in {64, 128, 256} (at least the
// matrix unit's full-rate M, compute.matrix_unit.output_rows_elements), tn a multiple of 16 up
// to 256 (wgmma / tcgen05 N), and tm·tn <= 128·256 (the f32 accumulator of 128x256 fills half
// the register file of a Hopper SM's two consumer warpgroups); ranked as DeepGEMM's
// get_best_configs ranks its block sizes: fewest waves of CTAs over the SMs, then the fullest
// last wave, then the least padding (executed flops), then the wider tn. The k step tk is one
// 128-byte TMA swizzle row of the wider operand (64 bf16, 128 fp8 elements), k padded to it.
//
// Cost (CostGpuGemm), for a given tile:
//   - CTAs = Σ_g ceil(m_g/tm)·ceil(n_g/tn); waves = ceil(CTAs / SMs).
//   - executed flops = Σ_g CTAs_g · 2·tm·tn·pad(k_g, tk); compute = executed flops at the
//     matrix-unit rate (MatmulRateFor, so efficiency.matmul_fraction_of_peak applies; derated
//     by small_rows_fraction_of_peak when tm is under the full-rate M), times waves·SMs/CTAs:
//     a partial last wave leaves SMs idle.
//   - HBM operand traffic: every CTA reads its [tm, k] lhs panel and [k, tn] rhs panel, but
//     re-reads are served by L2 while the data stays there. The tile scheduler walks the output
//     grid in bands (CUTLASS's rasterisation with swizzle, along m or along n, whichever moves
//     less): a band of output rows whose lhs panels fit half the L2 stays resident while the
//     band walks every n tile, so the lhs is read from HBM once; the rhs is read once if it fits
//     the other half of the L2, else once per band. Per group, along m:
//       band = max(1, floor(L2/2 / (tm·k·lhs bytes))) m-tiles
//       lhs = m·k·a;  rhs = k·n·b · (k·n·b <= L2/2 ? 1 : ceil(tiles_m / band))
//     and symmetrically along n; the smaller total wins. When one panel does not fit half the
//     L2 (a contraction of hundreds of thousands, as in XLA's dense expansion of a ragged-dot,
//     grouped_matmul.h), nothing stays resident across waves, but the CTAs of one wave step
//     along k together and share their panels through L2 while the wave's current k-slices
//     fit half of it: along m, with W = ceil(tiles_m · tiles_n / SMs) waves of SMs
//     consecutive tiles,
//       lhs = m·k·a · max(1, tiles_n / SMs);  rhs = k·n·b · min(1, SMs / tiles_n) · W
//     (each capped at every CTA reading its own panel). Example, XLA's expansion of 32 groups
//     of DeepSeek-V3's up projection on an H200: m = 32768, k = 32·7168, n = 2048, tile
//     (128, 256): 2048 CTAs in 16 waves, lhs 15.0 GB once, rhs 0.94 GB per wave: 30 GB, under
//     the 30.8 TFLOP's compute. With no L2 (memory.l2_bytes 0), or k-slices that do not fit,
//     every CTA's panels come from HBM.
//   - Output: m·n·out bytes per group, written once by the epilogue (a group with k = 0, an
//     empty tgmm group, writes its zeros).
//   - operand_seconds = (lhs + rhs) / HBM, epilogue_seconds = out / HBM (bandwidth derated by
//     efficiency.hbm_fraction_of_peak); seconds = max(compute, operands) + epilogue: the
//     epilogue is not overlapped with the main loop (sim/cost/grouped_matmul.h, M001-M004).
//     Fixed costs (kernel launch, per-group overheads) are the caller's.
#ifndef PERFSIM_SIM_COST_GPU_GEMM_H_
#define PERFSIM_SIM_COST_GPU_GEMM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/hw/chip.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {

// One group's GEMM: out [m, n], contraction k. Zero sizes are allowed (an empty group).
struct GpuGemmGroup {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

struct GpuGemmProblem {
  std::vector<GpuGemmGroup> groups;
  PrimitiveType lhs_type = PrimitiveType::kBF16;
  PrimitiveType rhs_type = PrimitiveType::kBF16;
  PrimitiveType out_type = PrimitiveType::kF32;
};

// A CTA tile: output [tm, tn], k step tk.
struct GpuGemmTile {
  int64_t tm = 128;
  int64_t tn = 256;
  int64_t tk = 64;
};

struct GpuGemmCost {
  GpuGemmTile tile;
  int64_t ctas = 0;
  int64_t waves = 0;
  double flops = 0;           // useful: Σ 2·m·n·k
  double executed_flops = 0;  // whole CTA tiles
  double lhs_bytes = 0;       // from HBM, after L2 reuse
  double rhs_bytes = 0;
  double out_bytes = 0;
  // Operand bytes the CTAs read (from L2 or HBM), for comparison with lhs + rhs.
  double operand_reads_bytes = 0;
  double compute_seconds = 0;  // wave-quantised
  double operand_seconds = 0;
  double epilogue_seconds = 0;
  double seconds = 0;          // max(compute, operands) + epilogue
  std::string unknown_rate;    // the chip field a rate needed, when it is 0
};

// The k step for the operand types: 128 bytes of the wider operand.
int64_t GpuGemmKStep(PrimitiveType lhs, PrimitiveType rhs);

// The CTA tile a heuristic kernel picks for `problem` on `chip` (the file comment).
GpuGemmTile ChooseGpuGemmTile(const GpuGemmProblem& problem, const Chip& chip);

// The cost of `problem` run with `tile` (tm, tn, tk > 0) on one device of `chip`.
GpuGemmCost CostGpuGemm(const GpuGemmProblem& problem, const GpuGemmTile& tile, const Chip& chip);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_GPU_GEMM_H_
