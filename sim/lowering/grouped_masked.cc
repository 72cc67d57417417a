// The masked-dense form of the three grouped matmuls (named_builder.h, GroupedForward & co. when
// set_masked_grouped_matmuls(true)): what JAX's own CPU lowering of ragged_dot does (a
// membership mask and dense dots), so that XLA:CPU, which has no ragged-dot emitter in jaxlib
// 0.10.2 (tools/jax/README.md), can run a backend's module. Same semantics as ragged-dot,
// including the rows past Σ group_sizes (zero in the forward forms, ignored in the weight
// gradient), and selects rather than multiplies by the mask, so a poisoned (NaN) row outside
// every group cannot leak into a valid one (known_bugs.md #13).
//
//   ends[g]   = Σ_{i ≤ g} gs[i]        (s32, a select over the [G, G] triangle, summed)
//   member    = start[g] ≤ row < ends[g]  for each row m and group g           [M, G] pred
//   forward   out[m, n] = Σ_g select(member[m, g], (lhs·rhs[g])[m, n], 0)
//   dlhs      out[m, k] = Σ_g select(member[m, g], (dy·rhs[g]ᵀ)[m, k], 0)
//   drhs      out[g, k, n] = Σ_m select(member[m, g], lhs[m, k], 0)·select(valid[m], dy[m, n], 0)
// The dense dots cost G times the grouped ones; the form exists for checking, not for speed.
#include <string>

#include "sim/lowering/named_builder.h"

namespace perfsim {
namespace {

constexpr PrimitiveType kS32 = PrimitiveType::kS32;

std::string Letters(std::initializer_list<char> letters) { return std::string(letters); }

}  // namespace

Tensor NamedBuilder::GroupMembership(const Tensor& group_sizes, char rows_name, int64_t rows,
                                     char group_name) {
  const int64_t g = group_sizes.shape().dimensions(0);
  Tensor gs = Rename(Convert(group_sizes, kS32), std::string(1, group_name));
  // ends[j] = Σ_i gs[i]·(i ≤ j) on an [i = X, j = group] grid.
  const std::string grid = Letters({'X', group_name});
  Tensor i = Iota(kS32, grid, {g, g}, 'X');
  Tensor j = Iota(kS32, grid, {g, g}, group_name);
  Tensor gs_i = BroadcastTo(Rename(gs, "X"), grid, {{group_name, g}});
  Tensor ends = Reduce(Select(Compare(i, j, ComparisonDirection::kLe), gs_i,
                              Full(kS32, grid, {g, g}, 0)),
                       "X");
  Tensor starts = Sub(ends, gs);
  Tensor row = Iota(kS32, Letters({rows_name, group_name}), {rows, g}, rows_name);
  return Binary(Opcode::kAnd, Compare(row, starts, ComparisonDirection::kGe),
                Compare(row, ends, ComparisonDirection::kLt));
}

Tensor NamedBuilder::MaskedForward(const Tensor& lhs, const Tensor& rhs, const Tensor& group_sizes,
                                   bool contract_rhs_last) {
  // lhs [m, a] × rhs [G, b, c]: contract a with rhs dim 1 (forward) or 2 (dlhs).
  const char m = lhs.dims[0], g = rhs.dims[0];
  const char out = contract_rhs_last ? rhs.dims[1] : rhs.dims[2];
  const std::string spec =
      std::string(lhs.dims) + "," + rhs.dims + "->" + Letters({m, g, out});
  Tensor full = Einsum(spec, lhs, rhs);
  Tensor member = GroupMembership(group_sizes, m, lhs.shape().dimensions(0), g);
  Tensor picked = Select(BroadcastLike(member, full), full,
                         Full(full.type(), full.dims, full.shape().dimensions(), 0));
  return Reduce(picked, std::string(1, g));
}

Tensor NamedBuilder::MaskedDrhs(const Tensor& lhs, const Tensor& dy, const Tensor& group_sizes) {
  const char m = lhs.dims[0], k = lhs.dims[1], n = dy.dims[1], g = 'E';
  const int64_t rows = lhs.shape().dimensions(0), groups = group_sizes.shape().dimensions(0);
  Tensor member = GroupMembership(group_sizes, m, rows, g);
  const std::string mgk = Letters({m, g, k});
  const absl::flat_hash_map<char, int64_t> sizes = {
      {m, rows}, {g, groups}, {k, lhs.shape().dimensions(1)}};
  Tensor lhs_g = Select(BroadcastTo(member, mgk, sizes), BroadcastTo(lhs, mgk, sizes),
                        Full(lhs.type(), mgk, {rows, groups, lhs.shape().dimensions(1)}, 0));
  // Rows in no group: zero dy there too, so 0·NaN cannot reach a gradient.
  Tensor total = Reduce(Rename(Convert(group_sizes, kS32), "E"), "E");
  Tensor row = Iota(kS32, std::string(1, m), {rows}, m);
  Tensor valid = Compare(row, BroadcastTo(total, std::string(1, m), {{m, rows}}),
                         ComparisonDirection::kLt);
  Tensor dy_valid = Select(valid, dy, Full(dy.type(), dy.dims, dy.shape().dimensions(), 0));
  return Einsum(mgk + "," + dy.dims + "->" + Letters({g, k, n}), lhs_g, dy_valid);
}

}  // namespace perfsim
