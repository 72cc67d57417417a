// VMEM / SMEM footprints of the grouped-matmul Pallas kernels: megablox v1 gmm / tgmm
// (jax-ml/jax megablox/gmm.py, MaxText's fork, tokamax v1) and GMM v2 / TGMM v2 (tokamax
// gmm_v2, MaxText's pallas_mosaic_tpu_v2_*_kernel.py). Formulas from
// shared/reference/backends.md 1b "VMEM bytes"; the buffers below are those formulas term by
// term, each block then aligned to the native tile (footprint.h), which the kernels' own
// estimates leave out.
//
// Worked example (backends.md 1b): gmm tiles (512, 1024, 1024), f32 in and out:
//   lhs 2 x [512,1024] x 4 B = 4 MiB, rhs 2 x [1024,1024] x 4 B = 8 MiB,
//   out 2 x [512,1024] x 4 B = 4 MiB, acc 1 x [512,1024] x 4 B = 2 MiB      -> 18 MiB.
#include <algorithm>

#include "sim/fit/kernels.h"

namespace perfsim {
namespace {

constexpr int64_t kSublaneRule = 8;  // BlockSpec: second-minor block dim divisible by 8 ...
constexpr int64_t kLaneRule = 128;   // ... and the minor one by 128, or equal to the array's.
// TGMM v2 allocates a fixed 2 MiB zero buffer (`zero_ref`) whatever the tiling.
constexpr int64_t kTgmmV2ZeroRefBytes = int64_t{2} << 20;

bool IsQuantisedType(PrimitiveType dtype) { return IsInteger(dtype) || BitWidth(dtype) <= 8; }

// Megablox computes group metadata in XLA and scalar-prefetches it to SMEM
// (make_group_metadata): group_offsets [G+1], group_ids and m_tile_ids [tiles_m + G - 1]
// (the bound on active tiles), and the group offset. SMEM arrays are counted unpadded.
void AddGroupMetadata(int64_t tiles_m, int64_t groups, KernelFootprint& footprint) {
  const PrimitiveType s32 = PrimitiveType::kS32;
  footprint.buffers.push_back(MakeBuffer("group_offsets", BufferRole::kScalarPrefetch, {groups + 1},
                                         s32, 1, MemorySpace::kSmem));
  footprint.buffers.push_back(MakeBuffer("group_ids", BufferRole::kScalarPrefetch,
                                         {tiles_m + groups - 1}, s32, 1, MemorySpace::kSmem));
  footprint.buffers.push_back(MakeBuffer("m_tile_ids", BufferRole::kScalarPrefetch,
                                         {tiles_m + groups - 1}, s32, 1, MemorySpace::kSmem));
  footprint.buffers.push_back(
      MakeBuffer("group_offset", BufferRole::kScalarPrefetch, {1}, s32, 1, MemorySpace::kSmem));
}

// The BlockSpec rule for the three tiles: tm is a second-minor block dim (lhs, out), tk and tn
// are each minor in some block (lhs, out or rhs).
void CheckBlockRules(const ProblemShape& s, const Tiling& t, KernelFootprint& footprint) {
  CheckBlockDim("tm", t.tm, "m", s.m, kSublaneRule, footprint);
  CheckBlockDim("tk", t.tk, "k", s.k, kLaneRule, footprint);
  CheckBlockDim("tn", t.tn, "n", s.n, kLaneRule, footprint);
}

// gmm: grid (tiles_n, active m-tiles, tiles_k); out[m,n] accumulated over k in f32 scratch.
//   VMEM = b·tm·tk·s_lhs + 2·tk·tn·s_rhs + 2·tm·tn·s_out + 4·tm·tn [+ 2·tm·tn·s_out existing_out]
void GmmV1(const KernelProblem& p, const Tiling& t, KernelFootprint& f) {
  const ProblemShape& s = p.shape;
  const OperandDtypes& d = p.dtypes;
  // Megablox checks: bf16/f32 operands, m % tm == 0 ("ValueError" otherwise).
  CheckDtype("lhs dtype", d.lhs, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  CheckDtype("rhs dtype", d.rhs, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  CheckDtype("out dtype", d.out, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  CheckDivides("tm", t.tm, "m", s.m, f);
  CheckBlockRules(s, t, f);
  const int64_t b = p.options.lhs_buffer_count;
  f.buffers.push_back(
      MakeBuffer("lhs", BufferRole::kPipelined, {t.tm, t.tk}, d.lhs, b, MemorySpace::kVmem));
  const Dims rhs_block = p.options.transpose_rhs ? Dims{t.tn, t.tk} : Dims{t.tk, t.tn};
  f.buffers.push_back(
      MakeBuffer("rhs", BufferRole::kPipelined, rhs_block, d.rhs, 2, MemorySpace::kVmem));
  f.buffers.push_back(
      MakeBuffer("out", BufferRole::kPipelined, {t.tm, t.tn}, d.out, 2, MemorySpace::kVmem));
  if (p.options.existing_out) {
    f.buffers.push_back(MakeBuffer("existing_out", BufferRole::kPipelined, {t.tm, t.tn}, d.out, 2,
                                   MemorySpace::kVmem));
  }
  f.buffers.push_back(MakeBuffer("acc", BufferRole::kScratch, {t.tm, t.tn}, PrimitiveType::kF32, 1,
                                 MemorySpace::kVmem));
  AddGroupMetadata(CeilDiv(s.m, t.tm), s.groups, f);
}

// tgmm: lhs [k,m] is read as [m,k] blocks; grid (tiles_n, tiles_k, active m-tiles) with the
// ragged m innermost; dW[g] accumulated in f32 scratch [tk, tn].
//   VMEM = b·(tm·tk·s_lhs + tm·tn·s_rhs) + 2·tk·tn·s_out + 4·tk·tn
void TgmmV1(const KernelProblem& p, const Tiling& t, KernelFootprint& f) {
  const ProblemShape& s = p.shape;
  const OperandDtypes& d = p.dtypes;
  CheckDtype("lhs dtype", d.lhs, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  CheckDtype("rhs dtype", d.rhs, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  CheckDtype("out dtype", d.out, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  CheckDivides("tm", t.tm, "m", s.m, f);
  CheckBlockRules(s, t, f);
  const int64_t b = p.options.lhs_buffer_count;
  f.buffers.push_back(
      MakeBuffer("lhs", BufferRole::kPipelined, {t.tm, t.tk}, d.lhs, b, MemorySpace::kVmem));
  f.buffers.push_back(
      MakeBuffer("rhs", BufferRole::kPipelined, {t.tm, t.tn}, d.rhs, b, MemorySpace::kVmem));
  f.buffers.push_back(
      MakeBuffer("out", BufferRole::kPipelined, {t.tk, t.tn}, d.out, 2, MemorySpace::kVmem));
  f.buffers.push_back(MakeBuffer("acc", BufferRole::kScratch, {t.tk, t.tn}, PrimitiveType::kF32, 1,
                                 MemorySpace::kVmem));
  AddGroupMetadata(CeilDiv(s.m, t.tm), s.groups, f);
}

constexpr std::initializer_list<PrimitiveType> kV2InputTypes = {
    PrimitiveType::kBF16,     PrimitiveType::kF32,    PrimitiveType::kS8,
    PrimitiveType::kF8E4M3FN, PrimitiveType::kF8E5M2, PrimitiveType::kS4};

// GMM v2 (_gmm_vmem_estimate): lhs double-buffered, rhs TRIPLE-buffered (pl.Buffered(3)),
// f = 2 rhs when the activation is fused:
//   VMEM = 2·tm·tk·b_lhs + f·(3·tk·tn·b_rhs + 2·⌈tk/qblk⌉·tn·4 + 2·tn·4) + tm·(f·tn)·acc
//          + 2·tm·tn·b_out [+ 2·tm·tn·b_out partial_sum] + sublane·tn·b_out
// acc is 4 bytes, 2 when the lhs is quantised. The bias row is counted as the estimate counts
// it (rank 1, no sublane padding). The group metadata in SMEM is assumed to be v1's.
void GmmV2(const KernelProblem& p, const Tiling& t, KernelFootprint& f) {
  const ProblemShape& s = p.shape;
  const OperandDtypes& d = p.dtypes;
  CheckDtype("lhs dtype", d.lhs, kV2InputTypes, f);
  CheckDtype("rhs dtype", d.rhs, kV2InputTypes, f);
  CheckDtype("out dtype", d.out, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  CheckBlockRules(s, t, f);
  const KernelOptions& o = p.options;
  const int64_t rhs_count = o.fuse_activation ? 2 : 1;
  const int64_t wide_tn = rhs_count * t.tn;
  f.buffers.push_back(
      MakeBuffer("lhs", BufferRole::kPipelined, {t.tm, t.tk}, d.lhs, 2, MemorySpace::kVmem));
  const Dims rhs_block = o.transpose_rhs ? Dims{wide_tn, t.tk} : Dims{t.tk, wide_tn};
  f.buffers.push_back(
      MakeBuffer("rhs", BufferRole::kPipelined, rhs_block, d.rhs, 3, MemorySpace::kVmem));
  if (IsQuantisedType(d.rhs)) {
    const int64_t block = o.quant_block_size > 0 ? o.quant_block_size : s.k;
    f.buffers.push_back(MakeBuffer("rhs_scales", BufferRole::kPipelined,
                                   {CeilDiv(t.tk, block), wide_tn}, PrimitiveType::kF32, 2,
                                   MemorySpace::kVmem));
  }
  if (o.bias) {
    f.buffers.push_back(MakeBuffer("bias", BufferRole::kPipelined, {wide_tn}, PrimitiveType::kF32,
                                   2, MemorySpace::kVmem));
  }
  const PrimitiveType acc = IsQuantisedType(d.lhs) ? PrimitiveType::kBF16 : PrimitiveType::kF32;
  f.buffers.push_back(
      MakeBuffer("acc", BufferRole::kScratch, {t.tm, wide_tn}, acc, 1, MemorySpace::kVmem));
  f.buffers.push_back(
      MakeBuffer("out", BufferRole::kPipelined, {t.tm, t.tn}, d.out, 2, MemorySpace::kVmem));
  if (o.existing_out) {
    f.buffers.push_back(MakeBuffer("partial_sum", BufferRole::kPipelined, {t.tm, t.tn}, d.out, 2,
                                   MemorySpace::kVmem));
  }
  // The estimate's `sublane·tn·b_out` term: one native tile row of output.
  f.buffers.push_back(MakeBuffer("out_tile_row", BufferRole::kScratch,
                                 {NativeSublanes(d.out), t.tn}, d.out, 1, MemorySpace::kVmem));
  AddGroupMetadata(CeilDiv(s.m, t.tm), s.groups, f);
}

// TGMM v2 (calculate_tgmm_tiling):
//   VMEM = tk·tn·(acc + 2·out) [+ 2·tk·tn·out partial_sum] + 3·tm·tk·lhs + 2·tm·tn·rhs + 2 MiB
void TgmmV2(const KernelProblem& p, const Tiling& t, KernelFootprint& f) {
  const ProblemShape& s = p.shape;
  const OperandDtypes& d = p.dtypes;
  CheckDtype("lhs dtype", d.lhs, kV2InputTypes, f);
  CheckDtype("rhs dtype", d.rhs, kV2InputTypes, f);
  CheckDtype("out dtype", d.out, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  CheckBlockRules(s, t, f);
  f.buffers.push_back(MakeBuffer("acc", BufferRole::kScratch, {t.tk, t.tn}, PrimitiveType::kF32, 1,
                                 MemorySpace::kVmem));
  f.buffers.push_back(
      MakeBuffer("out", BufferRole::kPipelined, {t.tk, t.tn}, d.out, 2, MemorySpace::kVmem));
  if (p.options.existing_out) {
    f.buffers.push_back(MakeBuffer("partial_sum", BufferRole::kPipelined, {t.tk, t.tn}, d.out, 2,
                                   MemorySpace::kVmem));
  }
  f.buffers.push_back(
      MakeBuffer("lhs", BufferRole::kPipelined, {t.tm, t.tk}, d.lhs, 3, MemorySpace::kVmem));
  f.buffers.push_back(
      MakeBuffer("rhs", BufferRole::kPipelined, {t.tm, t.tn}, d.rhs, 2, MemorySpace::kVmem));
  f.buffers.push_back(MakeBuffer("zero_ref", BufferRole::kFixed, {kTgmmV2ZeroRefBytes},
                                 PrimitiveType::kU8, 1, MemorySpace::kVmem));
  AddGroupMetadata(CeilDiv(s.m, t.tm), s.groups, f);
}

}  // namespace

KernelFootprint MegabloxFootprint(const KernelProblem& problem, const Tiling& tiling) {
  KernelFootprint footprint;
  footprint.buffers.reserve(10);
  switch (problem.kernel) {
    case KernelKind::kGmm:
      GmmV1(problem, tiling, footprint);
      break;
    case KernelKind::kTgmm:
      TgmmV1(problem, tiling, footprint);
      break;
    case KernelKind::kGmmV2:
      GmmV2(problem, tiling, footprint);
      break;
    case KernelKind::kTgmmV2:
      TgmmV2(problem, tiling, footprint);
      break;
    case KernelKind::kFusedFfnDTiled:
    case KernelKind::kFusedFfnFTiled:
    case KernelKind::kRaggedGather:
    case KernelKind::kGpuGroupedGemm:
      break;  // Not a megablox kernel; ComputeFootprint never sends these here.
  }
  return footprint;
}

}  // namespace perfsim
