// Sorting token-expert assignments by expert, and back: the argsort path every grouped backend
// shares (backends.md 1a.3 steps 3-6 and 20).
//
//   Permutation p = PermuteByExpert(nb, x, router.ids, E);
//   // p.rows: MD, x's rows in expert order (M = T·K); p.group_sizes: E s32 (bincount)
//   Tensor out_tkd = Unpermute(nb, expert_out_md, p, T, K);
//   Tensor y = WeightedCombine(nb, out_tkd, router.weights, x.type());
//
// The sort is stable on (expert id, assignment index t·K + k), so rows of one expert keep token
// order, as jnp.argsort(stable) gives.
#ifndef PERFSIM_SIM_LOWERING_PERMUTE_H_
#define PERFSIM_SIM_LOWERING_PERMUTE_H_

#include "sim/lowering/named_builder.h"

namespace perfsim {

struct Permutation {
  Tensor sort_idx;        // M s32: the assignment (t·K + k) each sorted row holds
  Tensor inverse;         // M s32: the sorted row of each assignment (argsort of sort_idx)
  Tensor token;           // M s32: the token of each sorted row (sort_idx / K)
  Tensor sorted_experts;  // M s32: the expert of each sorted row, ascending
  Tensor rows;            // MD: x[token]
  Tensor group_sizes;     // E s32: rows per expert
};

// ids: TK s32 global expert ids.
Permutation PermuteByExpert(NamedBuilder& nb, const Tensor& x, const Tensor& ids,
                            int64_t num_experts);

// Rows in expert order (MD) back to assignment order, shaped TKD.
Tensor Unpermute(NamedBuilder& nb, const Tensor& rows, const Permutation& p, int64_t tokens,
                 int64_t k);

// The residual roles (named_builder.h) of the weighted combine: its backward must read the
// very expert outputs and weights the forward combined (known_bugs.md #17: TE's combine
// backward read the shard-local pre-all-to-all expert outputs instead).
inline constexpr char kExpertOutputsRole[] = "combine.expert_outputs";
inline constexpr char kCombineWeightsRole[] = "combine.weights";

// y[t] = Σ_k w[t,k]·r[t,k,:], accumulated in f32 (MaxText float32_weight_sum), result `out`.
// Records r and w as the residuals above.
Tensor WeightedCombine(NamedBuilder& nb, const Tensor& r_tkd, const Tensor& w_tk,
                       PrimitiveType out);

// Backward of WeightedCombine: (dr TKD in dy's type, dw TK f32); r and w are read as the
// residuals above.
std::pair<Tensor, Tensor> WeightedCombineGrad(NamedBuilder& nb, const Tensor& r_tkd,
                                              const Tensor& w_tk, const Tensor& dy);

// Backward of Unpermute: assignment-order TKD gradients to expert order MD.
Tensor UnpermuteGrad(NamedBuilder& nb, const Tensor& d_tkd, const Permutation& p);

// Backward of the row gather x[token]: dx[t] = Σ over sorted rows of t (scatter-add), TD.
Tensor PermuteGrad(NamedBuilder& nb, const Tensor& d_rows, const Permutation& p,
                   int64_t tokens);

// Counts of `values` (rank 1 s32, name any) equal to each of 0..n-1, as s32 named `name`.
Tensor Bincount(NamedBuilder& nb, const Tensor& values, int64_t n, char name);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_PERMUTE_H_
