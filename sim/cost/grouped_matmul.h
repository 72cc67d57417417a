// Cost of the megablox grouped matmuls (perfsim.gmm / perfsim.tgmm) and of the fused expert FFN
// (perfsim.fused_ffn); conventions in sim/interp/custom_calls.h, kernel structure in
// shared/reference/backends.md section 1b.
//
//   GroupedMatmulSpec spec{.kind = GroupedMatmulKind::kGmm, .m = 512, .k = 7168, .n = 2048,
//                          .num_groups = 4, .group_sizes = {{100, 0, 300, 112}},
//                          .tm = 128, .tk = 512, .tn = 1024};
//   PERFSIM_ASSIGN_OR_RETURN(GroupedMatmulCost cost, CostGroupedMatmul(spec, chip));
//   // cost.work.visited_m_tiles == 6: groups own rows [0,100) [100,400) [400,512) -> m-tiles
//   // {0}, {0,1,2,3}, {3}; the shared tiles 0 and 3 are visited once per group.
//
// The model follows the kernel's grid. gmm: grid (tiles_n, visited m-tiles, tiles_k); each
// visited m-tile multiplies a (tm, tk) lhs block by its group's (tk, tn) weight block. tgmm:
// grid (tiles_n, tiles_k, visited m-tiles), m innermost, accumulating dW[group] in VMEM.
//   - Visited m-tiles: a group of gs rows starting at row s touches tiles
//     floor(s/tm) .. floor((s+gs-1)/tm); a tile shared by two groups is visited once per group,
//     so tiles_m <= visited <= tiles_m + G - 1. gmm skips empty groups; tgmm gives each empty
//     group one tile (it writes their zero gradient). Unknown group sizes give the upper bound
//     tiles_m + G - 1 (every row in a local group, every boundary splitting a tile).
//   - Flops: useful 2·rows·k·n over the rows the active groups cover (m when the sizes are
//     unknown); executed = visited · tiles_n · tiles_k · 2·tm·tk·tn: the MXU works on whole
//     tiles, so rows of another group in a shared tile are tile waste.
//   - HBM traffic, counting a block DMA whenever the block index differs from the previous
//     grid step (Pallas skips the copy otherwise):
//       gmm  lhs = tiles_n · (tiles_k == 1 ? distinct m-tiles : visited) · tm·k · bytes
//            rhs = tiles_k == 1 ? (groups visited) · k·n · bytes   (fetched once per group run)
//                               : visited · k·n · bytes           (re-streamed per m-tile)
//            out = distinct m-tiles · tm·n · bytes
//       tgmm lhs = tiles_n · distinct · tm·k · bytes, rhs = tiles_k · distinct · tm·n · bytes,
//            out = G_local · k·n · bytes
//     where "distinct" counts the m-tiles touched (consecutive visits of a shared tile reuse
//     the block).
//   - fused_ffn (k = D, n = F, tiles (tm, td, tf); one of td, tf spans its dimension): per
//     visited m-tile the kernel computes act(x·wi_0, x·wi_1)·wo for its group with h kept in
//     VMEM. Flops: 6·rows·D·F for the three matmuls plus 2·rows·F for the gating products, and
//     rows·F transcendentals (the sigmoid or tanh); executed = visited · 3 · 2·tm·D'·F' (D, F
//     padded to their tiles). Traffic: x = visited · tm·D, the three weights
//     3·D·F · (tiles_d·tiles_f == 1 ? groups visited : visited) (re-streamed per m-tile when
//     the kernel loops over tiles), out = distinct · tm·D.
//   - Time (CostGroupedMatmul), TPU: compute = executed flops at the matrix-unit rate of the
//     operand types, the tiles_n steps spread over the TensorCores of a megacore TPU device
//     (the only "parallel" grid dimension), plus fused_ffn's activation on the vector and
//     transcendental units; memory = bytes / (HBM bandwidth · efficiency.hbm_fraction_of_peak).
//     A Pallas kernel (implementation kPallasKernel: the megablox gmm / tgmm / fused_ffn
//     custom-calls) runs a grid whose steps each cost max(step compute, step DMA, step
//     overhead): the DMAs of step i+1 overlap the compute of step i, and a step cannot take
//     less than its fixed cost (compute.grid_step_overhead_seconds, 0.35 us on TPUs). The
//     S = grid_steps_per_core steps compute alike (c = compute / S); their DMA is alike
//     (d = memory / S) except where a weight block is fetched once per group run (gmm with
//     tiles_k = 1, fused_ffn with one D and one F tile): the R = groups visited · n tiles per
//     core steps that start a run also wait for those weights (w = weight bytes / HBM / R):
//       seconds = R · max(c, d' + w, o) + (S - R) · max(c, d', o) + fixed
//     with d' = (memory - weight time) / S, o = the step cost and fixed = the kernel overhead
//     + num_groups · efficiency.grouped_matmul_overhead_seconds_per_group. With alike steps
//     (R = 0) that is max(compute, memory, S · o) + fixed; it is never under the roofline.
//     The grid term is what separates tilings whose
//     roofline is the same: with (tm, 7168, 2048) on a DeepSeek-V3 gmm, tm = 8 runs 16× the
//     grid steps of tm = 128, and once the steps outnumber what compute and DMA hide, the call
//     is overhead bound. A ragged-dot (kGroupedGemmKernel: predict's ragged-dots;
//     kXlaRaggedDot) is not a Pallas kernel and has no grid: seconds = max(compute, memory) +
//     fixed.
//     Pallas double-buffers the output block like the operands, so its write-back overlaps the
//     following grid steps: every byte is under the one roofline.
//       GPU (gmm and tgmm, Pallas or not: a GPU runs its own grouped-GEMM kernel, not the
//     spec's tiling): the CTA tile, waves and L2-aware HBM traffic of sim/cost/gpu_gemm.h,
//     on the routed group sizes (an even split of m when they are unknown), or for
//     kXlaRaggedDot on XLA's dense expansion (GroupedMatmulImplementation); the result's
//     `gpu_gemm` holds that cost and the work's executed flops and bytes are replaced by it.
//     fused_ffn on a GPU keeps the tile model above.
//       GPU: seconds = max(compute, operand streaming) + epilogue + fixed, where operand
//     streaming = (lhs + rhs bytes) and epilogue = out bytes, both at the derated HBM rate. A
//     CTA writes its output tile after its main loop (the epilogue), with its tensor cores
//     idle; a kernel that does not pipeline the epilogue with the next tile's main loop pays
//     it on top, once per wave of CTAs, and the waves of a call are alike, so the sum over the
//     waves is the call's output bytes at the HBM rate. Evidence (shared/reference/
//     calibration.csv M001-M004, DeepGEMM fp8 grouped GEMMs on H800): the FC2 shapes
//     (K = 2048, N = 7168) run at 85% of the FC1 shapes' (K = 7168, N = 4096) throughput, which
//     a roofline cannot express (both are compute bound: 486 vs 178 us and 972 vs 185 us);
//     with the epilogue after the loop, one matmul and one HBM fraction (0.70 and 0.81,
//     `perfsim calibrate`) fit all four within 1%, and each one out of sample within 2%.
//     The bound is compute when compute >= memory (operands + epilogue), else memory, or
//     overhead when the fixed cost exceeds the rest.
//     Example (M002): 4 groups of 8192 rows, k = 2048, n = 7168, fp8 in, bf16 out, on H800
//     (1.979e15 FLOP/s fp8, 3.35e12 B/s, 132 SMs); CTA tile (128, 256): 4·64·28 = 7168 CTAs in
//     55 waves of 132 (7168/132 = 54.3):
//       compute   2·32768·2048·7168 / 1.979e15 · 55·132/7168         = 492 us
//       operands  (32768·2048 + 4·2048·7168) B / 3.35e12            = 37.6 us (under compute;
//                 each group's 14.7 MB weight and 16.8 MB of rows fit the L2)
//       epilogue  32768·7168·2 B / 3.35e12                          = 140 us
//       seconds   492 + 140 + 1 (launch)                            = 633 us
#ifndef PERFSIM_SIM_COST_GROUPED_MATMUL_H_
#define PERFSIM_SIM_COST_GROUPED_MATMUL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/cost/cost_types.h"
#include "sim/cost/gpu_gemm.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {

enum class GroupedMatmulKind {
  kGmm,       // out[m, n] = lhs[m, k] @ rhs[group of row][k, n]
  kTgmm,      // out[g, k, n] = lhs[k, rows of g] @ rhs[rows of g, n]
  kFusedFfn,  // out[m, k] = act(x[m, k] @ wi_0[g][k, n], x @ wi_1[g]) @ wo[g][n, k]
};

// What runs the call.
//   kPallasKernel       the megablox custom-calls: on a TPU a Pallas grid (steps, DMAs); on a
//                       GPU a grouped-GEMM kernel (sim/cost/gpu_gemm.h).
//   kGroupedGemmKernel  a grouped-GEMM kernel called on a ragged-dot's operands (cuBLASLt or
//                       CUTLASS grouped GEMM, DeepGEMM, XLA:TPU's ragged-dot emitter): no
//                       Pallas grid on a TPU; on a GPU the grouped-GEMM model.
//   kXlaRaggedDot       XLA's native ragged-dot as jax.lax.ragged_dot gets it. On a TPU as
//                       kGroupedGemmKernel. On a GPU, XLA's RaggedDotRewriter
//                       (xla/hlo/transforms/expanders/ragged_dot_rewriter.cc) masks the ragged
//                       operand into one copy per group and runs ONE dense dot over all of
//                       them: every group computes every row, whatever the routing.
//                         gmm   out[m, n] = Σ_g mask_g(lhs)[m, k] · rhs[g][k, n]: a GEMM of
//                               (m, n) contracting G·k (2·G·m·k·n FLOPs);
//                         tgmm  out[g] = mask_g(lhs)[k, m] · mask_g(rhs)[m, n]: G GEMMs of
//                               (k, n) contracting all m rows (2·G·k·m·n FLOPs);
//                       each timed by sim/cost/gpu_gemm.h, plus the fixed costs. The masking is
//                       not charged apart: on one H200 with jaxlib 0.11.2 all 40 measured
//                       ragged_dots (validation/gpu/h200_measurements.csv, G = 8 and 32,
//                       1,024 to 32,768 rows, uniform and Zipf 1.2 routing) ran at 57-82% of
//                       the bf16 peak counted so, against 2-10% counted as useful work. XLA
//                       hands the op to cuDNN instead where its ragged-dot fusion is enabled
//                       and supported; that path is not modelled.
enum class GroupedMatmulImplementation { kPallasKernel, kGroupedGemmKernel, kXlaRaggedDot };

struct GroupedMatmulSpec {
  GroupedMatmulKind kind = GroupedMatmulKind::kGmm;
  GroupedMatmulImplementation implementation = GroupedMatmulImplementation::kPallasKernel;
  // gmm: lhs [m, k], rhs [G_local, k, n], out [m, n]. tgmm: lhs [k, m], rhs [m, n],
  // out [G_local, k, n]; m is the grouped (contracted) dimension. fused_ffn: x [m, D = k],
  // wi_0 and wi_1 [G_local, k, n = F], wo [G_local, n, k], out [m, k]; rhs_type is the weights'.
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  // G_local: groups this call computes, starting at group_offset.
  int64_t num_groups = 0;
  int64_t group_offset = 0;
  // Sizes of all G groups (G >= group_offset + num_groups), e.g. tokens per expert from a
  // routing; nullopt when not known.
  std::optional<std::vector<int64_t>> group_sizes;
  // Tiling (tm, tk, tn); each is clamped to its dimension (min(tile, dim)).
  int64_t tm = 128;
  int64_t tk = 128;
  int64_t tn = 128;
  PrimitiveType lhs_type = PrimitiveType::kBF16;
  PrimitiveType rhs_type = PrimitiveType::kBF16;
  PrimitiveType out_type = PrimitiveType::kF32;
};

struct GroupedMatmulWork {
  double flops = 0;            // useful: 2·rows·k·n (fused_ffn: see the file comment)
  double transcendentals = 0;  // fused_ffn's activation
  double executed_flops = 0;   // whole tiles the matrix units run
  double lhs_bytes = 0;        // fused_ffn: x
  double rhs_bytes = 0;        // fused_ffn: the three weights
  double out_bytes = 0;
  double bytes_accessed = 0;  // lhs + rhs + out
  int64_t rows = 0;           // rows the active groups cover
  int64_t tiles_m = 0;
  int64_t tiles_k = 0;
  int64_t tiles_n = 0;
  int64_t visited_m_tiles = 0;   // grid steps along m
  int64_t distinct_m_tiles = 0;  // m-tiles touched
  int64_t groups_visited = 0;    // active groups that get at least one step
  bool group_sizes_known = false;
};

// The GEMMs a GPU runs for a gmm or tgmm spec (sim/cost/gpu_gemm.h): a grouped-GEMM kernel's
// one GEMM per local group on its rows (an even split of m when the sizes are unknown), or
// for kXlaRaggedDot XLA's dense expansion (GroupedMatmulImplementation). Not for fused_ffn.
GpuGemmProblem GpuGemmsOf(const GroupedMatmulSpec& spec);

// Counts; InvalidArgument for non-positive sizes or tiles, negative group sizes, group sizes
// that sum to more than m, or too few group sizes for group_offset + num_groups.
absl::StatusOr<GroupedMatmulWork> CountGroupedMatmul(const GroupedMatmulSpec& spec);

struct GroupedMatmulCost {
  GroupedMatmulWork work;
  // Grid steps one TensorCore runs: ceil(tiles_n / cores) · visited m-tiles · tiles_k (the n
  // tiles are the grid's parallel dimension, split over a megacore device's TensorCores).
  // 0 where there is no Pallas grid (a GPU, or XLA's ragged-dot).
  int64_t grid_steps_per_core = 0;
  double compute_seconds = 0;
  double memory_seconds = 0;  // every byte (lhs + rhs + out) at the derated HBM rate
  // memory_seconds split by phase: the operands streamed through the main loop, and (GPU) the
  // output written by the epilogue after it, not overlapped (the file comment). On a TPU
  // operand_seconds = memory_seconds and epilogue_seconds = 0: every byte is pipelined.
  double operand_seconds = 0;
  double epilogue_seconds = 0;
  // grid_steps_per_core · compute.grid_step_overhead_seconds (Pallas kernels).
  double grid_step_seconds = 0;
  // The fixed costs plus, for a Pallas kernel, what its grid adds over max(compute, memory):
  // steps whose fixed cost exceeds their compute and DMA, and the weight fetches that start
  // each group run. TPU: seconds = max(compute, memory) + overhead; GPU: max(compute,
  // operands) + epilogue + overhead.
  double overhead_seconds = 0;
  double seconds = 0;
  Bound bound = Bound::kNone;
  std::vector<std::string> unknown_rates;
  // GPU gmm / tgmm: the kernel's tile, waves and L2-aware traffic (sim/cost/gpu_gemm.h).
  std::optional<GpuGemmCost> gpu_gemm;
};

// Counts and times one call on one device of `chip`. The predictor passes routing-derived
// group_sizes here (e.g. the spec of GroupedMatmulSpecFromInstruction with sizes filled in).
absl::StatusOr<GroupedMatmulCost> CostGroupedMatmul(const GroupedMatmulSpec& spec,
                                                    const Chip& chip);

// The spec of a perfsim.gmm / perfsim.tgmm / perfsim.fused_ffn custom-call: shapes, element
// types, tiling (backend_config "tiling", default 128 each), group_offset, transpose_rhs, and
// the group sizes when the group_sizes operand is a constant. InvalidArgument naming the
// instruction otherwise.
absl::StatusOr<GroupedMatmulSpec> GroupedMatmulSpecFromInstruction(const Instruction& instruction);

// True for the custom-call targets GroupedMatmulSpecFromInstruction reads.
bool IsGroupedMatmulTarget(absl::string_view target);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_GROUPED_MATMUL_H_
