// Footprint of the SparseCore ragged gather (MaxText kernels/ragged/ragged_sort.py, forked from
// vllm-project/tpu-inference; shared/reference/backends.md 1a.3 "Ragged sort"): out[i] =
// x[indices[i]] for the valid rows, and the gather-reduce variant that sums each group of K
// gathered rows weighted by the top-k weights.
//
// The references give the kernel's cost estimate but not its buffers, so the model is ours:
// each SparseCore vector subcore gathers `tr` rows of a `td`-wide chunk of D per step into its
// own memory (TileSPMEM), double-buffered so that the next gather overlaps the write-back:
//   rows [tr, td] x-dtype ×2, indices [tr] s32 ×2,
//   gather-reduce (K > 1) adds: weights [tr] f32 ×2, acc [tr / K, td] f32 ×1.
// Buffers are counted at the block shape: the SparseCore's memory layout granule is not in
// the references. The limit is the memory of ONE subcore (512 KiB on v5p and v7x, 256 KiB on
// v6e), which is why a DeepSeek-V3 row (7168 × bf16 = 14 KiB) must be chunked along D.
#include "absl/strings/str_cat.h"
#include "sim/fit/kernels.h"

namespace perfsim {

KernelFootprint RaggedGatherFootprint(const KernelProblem& p, const Tiling& t) {
  KernelFootprint f;
  f.buffers.reserve(5);
  const int64_t rows_per_step = t.tm;
  const int64_t chunk = t.tk;
  const int64_t width = p.shape.k;
  const int64_t reduce_group = p.shape.n;
  CheckDtype(
      "x dtype", p.dtypes.lhs,
      {PrimitiveType::kBF16, PrimitiveType::kF32, PrimitiveType::kS8, PrimitiveType::kF8E4M3FN}, f);
  CheckDtype("out dtype", p.dtypes.out, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  // Our assumption: the D chunk is a whole number of 8-element DMA granules, or all of D.
  CheckBlockDim("td", chunk, "D", width, 8, f);
  if (chunk > width) {
    f.violations.push_back(absl::StrCat("td: expected at most D (", width, "); got ", chunk));
  }
  // A reduce group must not straddle two steps.
  if (rows_per_step % reduce_group != 0) {
    f.violations.push_back(absl::StrCat("tr % K == 0: expected rows per step (", rows_per_step,
                                        ") divisible by the reduce group K (", reduce_group, ")"));
  }
  const MemorySpace sc = MemorySpace::kSparseCoreMemory;
  f.buffers.push_back(
      MakeBuffer("rows", BufferRole::kPipelined, {rows_per_step, chunk}, p.dtypes.lhs, 2, sc));
  f.buffers.push_back(
      MakeBuffer("indices", BufferRole::kPipelined, {rows_per_step}, PrimitiveType::kS32, 2, sc));
  if (reduce_group > 1) {
    f.buffers.push_back(
        MakeBuffer("weights", BufferRole::kPipelined, {rows_per_step}, PrimitiveType::kF32, 2, sc));
    f.buffers.push_back(MakeBuffer("acc", BufferRole::kScratch,
                                   {CeilDiv(rows_per_step, reduce_group), chunk},
                                   PrimitiveType::kF32, 1, sc));
  }
  return f;
}

}  // namespace perfsim
