// The global permutation of TransformerEngine's PURE_JAX token dispatch with per-expert row
// alignment A (shared/reference/backends.md 1d, `pure_jax_token_dispatch` with align_size > 0),
// used by grouped_gemm_aligned. Every expert's rows are padded to a multiple of A so the grouped
// GEMM (an FP8/MXFP8 recipe's requirement) sees aligned groups.
//
//   cnt[e]        = #assignments to e                           (bincount of the T·K ids)
//   pad_needed[e] = (A − cnt[e] % A) % A                          in [0, A − 1]
//   padding block = E·(A − 1) extra slots, slot (e, j) for j < A − 1: it belongs to expert e
//                   and is active iff j < pad_needed[e]; inactive slots get the sentinel id E
//   sort          = stable argsort of [ids (T·K), padding ids (E·(A − 1))]
//   group_sizes   = cnt + pad_needed (multiples of A; Σ = Σ_e ceil(cnt[e]/A)·A)
// Rows: T·K + E·(A − 1) (AlignedPermuteRows). Expert e's block is its real rows in token order,
// then its active padding rows; the inactive slots sort last, past Σ group_sizes.
// Padding rows hold zeros: their token is the sentinel T, which indexes a zero row appended to
// x (the Triton variant zero-initialises its output, PR #2591, to the same effect). A zero row
// gives a zero activation (silu, gelu and the clipped SwiGLU all map 0 to 0) and a zero
// weight-gradient contribution, and the unpermute reads only the T·K real assignments, so
// padding never reaches y or a gradient.
//
//   AlignedPermutation p = PermuteByExpertAligned(nb, x, ids, E, A, AlignedPermuteRows(T·K, E, A));
//   Tensor out_tkd = UnpermuteAligned(nb, expert_out, p, T, K);
//
// With A <= 1 there is no padding block, and this is the plain argsort permutation.
#ifndef PERFSIM_SIM_LOWERING_ALIGNED_PERMUTE_H_
#define PERFSIM_SIM_LOWERING_ALIGNED_PERMUTE_H_

#include <cstdint>

#include "sim/lowering/named_builder.h"

namespace perfsim {

// T·K + E·(A − 1) for A > 1, else T·K: the most rows the aligned groups can need (every expert's
// count ≡ 1 mod A pads A − 1 rows), which the sorted buffer must hold (known_bugs.md #10).
int64_t AlignedPermuteRows(int64_t assignments, int64_t num_experts, int64_t align);

struct AlignedPermutation {
  Tensor slot;         // M s32 [rows]: slot of each sorted row (< T·K: assignment t·K + k)
  Tensor inverse;      // M s32 [T·K]: the sorted row of each assignment
  Tensor token;        // M s32 [rows]: the token of each sorted row; T for padding rows
  Tensor rows;         // MD [rows]: x[token], zero rows for padding
  Tensor counts;       // E s32: cnt
  Tensor group_sizes;  // E s32: cnt + pad_needed
};

// ids: TK s32 global expert ids; x: TD. `buffer_rows` is the sorted buffer the caller sized:
// AlignedPermuteRows(T·K, E, A); fewer keeps only the first `buffer_rows` sorted rows (the
// undersized buffer of known_bugs.md #10, which tests build on purpose), more is an error.
AlignedPermutation PermuteByExpertAligned(NamedBuilder& nb, const Tensor& x, const Tensor& ids,
                                          int64_t num_experts, int64_t align, int64_t buffer_rows);

// Sorted rows (MD) back to assignment order, shaped TKD.
Tensor UnpermuteAligned(NamedBuilder& nb, const Tensor& rows, const AlignedPermutation& p,
                        int64_t tokens, int64_t k);

// Backward of UnpermuteAligned: TKD gradients to sorted rows (MD), zero on padding rows.
Tensor UnpermuteAlignedGrad(NamedBuilder& nb, const Tensor& d_tkd, const AlignedPermutation& p);

// Backward of the row gather: dx[t] = Σ of the sorted rows holding t (padding rows drop out), TD.
Tensor PermuteAlignedGrad(NamedBuilder& nb, const Tensor& d_rows, const AlignedPermutation& p,
                          int64_t tokens);

// A TK tensor read per sorted row (M), 0 on padding rows.
Tensor PerSortedRow(NamedBuilder& nb, const Tensor& tk, const AlignedPermutation& p);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_ALIGNED_PERMUTE_H_
