// Shared-memory footprint of one CTA of a GPU grouped GEMM (CUTLASS-style: a CTA tile
// M×N×K = (tm, tn, tk), the A and B tiles of `stages` k-steps in flight in shared memory, as in
// TransformerEngine's cuBLASLt / CUTLASS grouped GEMMs, shared/reference/backends.md 1d):
//   A [tm, tk] ×stages, B [tk, tn] ×stages (A and B of one stage are what one TMA / cp.async
//   step loads), the epilogue's staging tile for the output D [tm, tn] ×1 (Hopper's TMA-store
//   epilogue), and the pipeline's barriers: one "full" and one "empty" 8-byte mbarrier per stage.
// The accumulator lives in registers (Hopper) or tensor memory (Blackwell), not shared memory.
// Example: tm = 128, tn = 256, tk = 64, 4 stages, bf16 -> 4 × (16 + 32) KiB + 64 KiB + 64 B
// = 256 KiB + 64 B, over the 227 KiB a Hopper CTA can opt into.
//
// The limit is what one CTA may opt into (shared_memory_bytes_per_block, 227 KiB on H100); the
// physical figure is the SM's carve-out (shared_memory_bytes_per_sm, 228 KiB).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sim/fit/kernels.h"

namespace perfsim {

KernelFootprint GpuGroupedGemmFootprint(const KernelProblem& p, const Tiling& t, const Chip& chip) {
  KernelFootprint f;
  f.buffers.reserve(4);
  const OperandDtypes& d = p.dtypes;
  const std::initializer_list<PrimitiveType> kInputTypes = {
      PrimitiveType::kBF16, PrimitiveType::kF16, PrimitiveType::kF32, PrimitiveType::kF8E4M3FN,
      PrimitiveType::kF8E5M2};
  CheckDtype("lhs dtype", d.lhs, kInputTypes, f);
  CheckDtype("rhs dtype", d.rhs, kInputTypes, f);
  CheckDtype("out dtype", d.out, {PrimitiveType::kBF16, PrimitiveType::kF16, PrimitiveType::kF32},
             f);
  // MMA granularity from the chip: K in 16-bit elements (so 32 for fp8, 8 for tf32), N, and
  // M in multiples of 16 (mma.m16*; the full-rate M the chip states is a speed matter, costed
  // in the search, not a rule).
  const MatrixUnitSpec& unit = chip.proto().compute().matrix_unit();
  const int bits = std::max(BitWidth(d.lhs), BitWidth(d.rhs));
  const int64_t k_granule =
      std::max<int64_t>(1, unit.contracting_elements() * 16 / std::max(bits, 1));
  const int64_t n_granule = std::max<int64_t>(1, unit.output_columns_elements());
  constexpr int64_t kMGranule = 16;
  auto check_multiple = [&](absl::string_view name, int64_t tile, int64_t granule,
                            absl::string_view why) {
    if (tile % granule == 0) return;
    f.violations.push_back(
        absl::StrCat(name, ": expected a multiple of ", granule, " (", why, "); got ", tile));
  };
  check_multiple("tm", t.tm, kMGranule, "MMA M");
  check_multiple("tn", t.tn, n_granule, "MMA N");
  check_multiple("tk", t.tk, k_granule, "MMA K for the operand width");
  const int64_t stages = p.options.pipeline_stages;
  const MemorySpace smem = MemorySpace::kGpuSharedMemory;
  f.buffers.push_back(
      MakeBuffer("a_stages", BufferRole::kPipelined, {t.tm, t.tk}, d.lhs, stages, smem));
  const Dims b_block = p.options.transpose_rhs ? Dims{t.tn, t.tk} : Dims{t.tk, t.tn};
  f.buffers.push_back(MakeBuffer("b_stages", BufferRole::kPipelined, b_block, d.rhs, stages, smem));
  f.buffers.push_back(MakeBuffer("epilogue", BufferRole::kScratch, {t.tm, t.tn}, d.out, 1, smem));
  f.buffers.push_back(
      MakeBuffer("barriers", BufferRole::kFixed, {2 * stages}, PrimitiveType::kU64, 1, smem));
  return f;
}

}  // namespace perfsim
