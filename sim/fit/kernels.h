// The kernels perfsim can fit-check, the problem one kernel call solves, and its footprint as a
// function of the tiling. Formulas and their sources are in the .cc file of each family:
//
//   megablox_footprint.cc        gmm, tgmm (megablox v1), gmm_v2, tgmm_v2 (tokamax / MaxText v2)
//   fused_ffn_footprint.cc       fused_ffn_d_tiled, fused_ffn_f_tiled
//   ragged_gather_footprint.cc   ragged_gather (SparseCore)
//   gpu_gemm_footprint.cc        gpu_grouped_gemm (CTA tile with a shared-memory pipeline)
//
// Example: the MaxText default forward tiles of megablox gmm in f32 on any TPU,
//
//   KernelProblem p{KernelKind::kGmm, {/*m=*/16384, /*k=*/1024, /*n=*/1024, /*groups=*/8},
//                   {PrimitiveType::kF32, PrimitiveType::kF32, PrimitiveType::kF32}};
//   KernelFootprint f = ComputeFootprint(p, Tiling{512, 1024, 1024}, chip);
//   f.BytesIn(MemorySpace::kVmem) == 18 * 1024 * 1024;   // 4 + 8 + 4 + 2 MiB
//
// Shapes, per kernel (m, k, n, groups as given to `perfsim fit --shape m,k,n[,groups]`):
//   gmm, gmm_v2, gpu_grouped_gemm   lhs [m, k] x rhs [groups, k, n] -> out [m, n]
//   tgmm, tgmm_v2                   lhs [k, m] x rhs [m, n] -> out [groups, k, n]
//   fused_ffn_*                     x [m, D=k] through wi_0, wi_1 [groups, D, F=n] and
//                                   wo [groups, F, D] -> [m, D]
//   ragged_gather                   m rows of width D=k gathered from an [*, D] array; n is the
//                                   reduce group (1 = plain gather; K = gather-reduce of K rows)
#ifndef PERFSIM_SIM_FIT_KERNELS_H_
#define PERFSIM_SIM_FIT_KERNELS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "sim/fit/footprint.h"
#include "sim/hw/chip.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {

enum class KernelKind {
  kGmm,
  kTgmm,
  kGmmV2,
  kTgmmV2,
  kFusedFfnDTiled,
  kFusedFfnFTiled,
  kRaggedGather,
  kGpuGroupedGemm,
};

// "gmm", "tgmm", "gmm_v2", "tgmm_v2", "fused_ffn_d_tiled", "fused_ffn_f_tiled",
// "ragged_gather", "gpu_grouped_gemm".
absl::string_view KernelName(KernelKind kind);
// Every kernel, in the order above.
const std::vector<KernelKind>& AllKernels();
// The kernel named `name`, or nullopt.
std::optional<KernelKind> ParseKernelName(absl::string_view name);
// Whether the kernel runs on a TPU (Pallas TPU / SparseCore) rather than a GPU.
bool IsTpuKernel(KernelKind kind);

struct ProblemShape {
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  int64_t groups = 1;
};

struct OperandDtypes {
  PrimitiveType lhs = PrimitiveType::kBF16;
  PrimitiveType rhs = PrimitiveType::kBF16;
  PrimitiveType out = PrimitiveType::kBF16;
};

// Tile sizes along m, k and n. For the fused FFN kernels (tm, td, tf); for ragged_gather
// (rows per step, D chunk, unused = 0).
struct Tiling {
  int64_t tm = 0;
  int64_t tk = 0;
  int64_t tn = 0;
  bool operator==(const Tiling& other) const {
    return tm == other.tm && tk == other.tk && tn == other.tn;
  }
};

// "(512, 1024, 1024)"; "(16, 1024)" when tn is 0 (ragged_gather).
std::string TilingToString(const Tiling& tiling);

// Kernel knobs that change the footprint. Each applies to the kernels named.
struct KernelOptions {
  // gmm, tgmm: copies of the lhs block (tokamax v1 `input_buffer_count`; megablox: 2).
  int64_t lhs_buffer_count = 2;
  // gmm: `existing_out` (an aliased output block, double-buffered); gmm_v2, tgmm_v2: the
  // `partial_sum` input, same footprint.
  bool existing_out = false;
  // gmm, gmm_v2, gpu_grouped_gemm: rhs stored [groups, n, k].
  bool transpose_rhs = false;
  // gmm_v2: the activation is fused, so two rhs (wi_0, wi_1) are streamed together.
  bool fuse_activation = false;
  // gmm_v2: a bias row per output column.
  bool bias = false;
  // gmm_v2: rhs quantisation block along k for the f32 scales of an integer / fp8 rhs;
  // 0 = one scale per output column (the block is all of k).
  int64_t quant_block_size = 0;
  // gpu_grouped_gemm: shared-memory pipeline stages (CUTLASS `Stages`).
  int64_t pipeline_stages = 4;
};

struct KernelProblem {
  KernelKind kernel = KernelKind::kGmm;
  ProblemShape shape;
  OperandDtypes dtypes;
  KernelOptions options;
};

// The tiling a kernel runs with when the caller names none (`perfsim fit` without --tiling or
// --search), each tile clamped to its dimension (min(tile, dim)) as MaxText and perfsim's
// lowerings pass tilings; nullopt for a kernel with no fixed default:
//   gmm, tgmm            (128, 128, 128): megablox's `tiling` argument default
//                        (shared/reference/backends.md 1b, the gmm signature; tokamax's
//                        tile_m/k/n default 128 too, 1e)
//   fused_ffn_f_tiled    (512, D, 1024) and
//   fused_ffn_d_tiled    (512, 1024, F): what perfsim's fused_expert_ffn lowering emits with
//                        default knobs (sim/lowering/fused_expert_ffn.cc: tm and tf the wi
//                        forward tiles, td the wo forward tile; MaxText's 512 / 1024 tile
//                        defaults, backends.md 1a). No sourced kernel of this kind exists.
//   gmm_v2, tgmm_v2      none: the kernels shrink their tiles until the estimate fits the limit
//                        (calculate_tiling, backends.md 1b), a heuristic sourced only in outline
//   ragged_gather,       none: the references give no tiling
//   gpu_grouped_gemm
// Example: gmm with m = 64 rows gets (64, 128, 128).
std::optional<Tiling> DefaultTiling(const KernelProblem& problem);

// Where DefaultTiling's value comes from, for reports ("megablox's tiling=(128, 128, 128)
// default, clamped to the dimensions"); why there is none when there is none.
absl::string_view DefaultTilingSource(KernelKind kind);

// Checks what makes a problem meaningless for any tiling (non-positive sizes, sizes past
// 2^40 rows or 2^24 in any other dimension, option values out of range): InvalidArgument
// "expected X; got Y". Unsupported dtypes and tiling rules are not errors here: they are
// footprint violations, reported like a misfit.
absl::Status ValidateProblem(const KernelProblem& problem);

// Buffers and rule violations of `problem` under `tiling` on `chip` (the GPU kernel takes its
// MMA granularity from the chip). Expects ValidateProblem to have passed; tile sizes must be
// positive and at most 2^24 (CheckTilingRange).
KernelFootprint ComputeFootprint(const KernelProblem& problem, const Tiling& tiling,
                                 const Chip& chip);

// InvalidArgument unless every tile size the kernel uses is in [1, 2^24].
absl::Status CheckTilingRange(const KernelProblem& problem, const Tiling& tiling);

// Per-family footprints (the dispatch in ComputeFootprint calls exactly one).
KernelFootprint MegabloxFootprint(const KernelProblem& problem, const Tiling& tiling);
KernelFootprint FusedFfnFootprint(const KernelProblem& problem, const Tiling& tiling);
KernelFootprint RaggedGatherFootprint(const KernelProblem& problem, const Tiling& tiling);
KernelFootprint GpuGroupedGemmFootprint(const KernelProblem& problem, const Tiling& tiling,
                                        const Chip& chip);

// Shared rule helpers for the families.
// Adds "<what>: expected <dtype name> to be one of <allowed>; got <dtype>" when not allowed.
void CheckDtype(absl::string_view what, PrimitiveType dtype,
                std::initializer_list<PrimitiveType> allowed, KernelFootprint& footprint);
// The Pallas BlockSpec rule for a block dimension among the last two: divisible by `multiple`
// or equal to the array dimension.
void CheckBlockDim(absl::string_view tile_name, int64_t tile, absl::string_view dim_name,
                   int64_t dim, int64_t multiple, KernelFootprint& footprint);
// `dim % tile == 0`.
void CheckDivides(absl::string_view tile_name, int64_t tile, absl::string_view dim_name,
                  int64_t dim, KernelFootprint& footprint);

int64_t CeilDiv(int64_t a, int64_t b);

}  // namespace perfsim

#endif  // PERFSIM_SIM_FIT_KERNELS_H_
