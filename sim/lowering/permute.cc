#include "sim/lowering/permute.h"

namespace perfsim {

constexpr PrimitiveType kS32 = PrimitiveType::kS32;

Tensor Bincount(NamedBuilder& nb, const Tensor& values, int64_t n, char name) {
  const int64_t m = values.shape().dimensions(0);
  const std::string dims = values.dims + std::string(1, name);
  Tensor iota = nb.Iota(kS32, dims, {m, n}, name);
  Tensor hit = nb.Compare(iota, values, ComparisonDirection::kEq);
  Tensor ones = nb.Select(hit, nb.Full(kS32, dims, {m, n}, 1), nb.Full(kS32, dims, {m, n}, 0));
  return nb.Reduce(ones, values.dims);
}

Permutation PermuteByExpert(NamedBuilder& nb, const Tensor& x, const Tensor& ids,
                            int64_t num_experts) {
  const int64_t t = ids.size('T'), k = ids.size('K'), m = t * k;
  Permutation p;
  Tensor flat = nb.Reshape(ids, "M", {m});
  Tensor order = nb.Iota(kS32, "M", {m}, 'M');
  std::vector<Tensor> sorted = nb.Sort({flat, order});
  p.sorted_experts = sorted[0];
  p.sort_idx = sorted[1];
  p.inverse = nb.Sort({p.sort_idx, order})[1];
  p.token = nb.Div(p.sort_idx, nb.Full(kS32, "M", {m}, static_cast<double>(k)));
  p.rows = nb.GatherRows(x, p.token);
  p.group_sizes = Bincount(nb, flat, num_experts, 'E');
  return p;
}

Tensor Unpermute(NamedBuilder& nb, const Tensor& rows, const Permutation& p, int64_t tokens,
                 int64_t k) {
  Tensor in_order = nb.GatherRows(rows, p.inverse);  // MD in assignment order
  return nb.Reshape(in_order, "TKD", {tokens, k, rows.size('D')});
}

Tensor WeightedCombine(NamedBuilder& nb, const Tensor& r_tkd, const Tensor& w_tk,
                       PrimitiveType out) {
  nb.SaveForBackward(kExpertOutputsRole, "the expert outputs the forward combine weighted", r_tkd);
  nb.SaveForBackward(kCombineWeightsRole, "the combine weights the forward applied", w_tk);
  Tensor r32 = nb.Convert(r_tkd, PrimitiveType::kF32);
  return nb.Convert(nb.Einsum("TKD,TK->TD", r32, nb.Convert(w_tk, PrimitiveType::kF32),
                              PrimitiveType::kF32),
                    out);
}

namespace {

std::pair<Tensor, Tensor> WeightedCombineGradOf(NamedBuilder& nb, const Tensor& r_tkd,
                                                const Tensor& w_tk, const Tensor& dy) {
  Tensor dy32 = nb.Convert(dy, PrimitiveType::kF32);
  Tensor dr = nb.Convert(nb.Mul(nb.BroadcastLike(dy32, nb.Convert(r_tkd, PrimitiveType::kF32)),
                                nb.Convert(w_tk, PrimitiveType::kF32)),
                         dy.type());
  Tensor dw = nb.Einsum("TKD,TD->TK", nb.Convert(r_tkd, PrimitiveType::kF32), dy32,
                        PrimitiveType::kF32);
  return {dr, dw};
}

}  // namespace

std::pair<Tensor, Tensor> WeightedCombineGrad(NamedBuilder& nb, const Tensor& r_tkd,
                                              const Tensor& w_tk, const Tensor& dy) {
  const int64_t mark = nb.InstructionCount();
  std::pair<Tensor, Tensor> grads = WeightedCombineGradOf(nb, r_tkd, w_tk, dy);
  nb.UseResidual(kExpertOutputsRole, r_tkd, mark);
  nb.UseResidual(kCombineWeightsRole, w_tk, mark);
  return grads;
}

Tensor UnpermuteGrad(NamedBuilder& nb, const Tensor& d_tkd, const Permutation& p) {
  const int64_t m = d_tkd.size('T') * d_tkd.size('K');
  Tensor flat = nb.Reshape(d_tkd, "MD", {m, d_tkd.size('D')});
  return nb.GatherRows(flat, p.sort_idx);
}

Tensor PermuteGrad(NamedBuilder& nb, const Tensor& d_rows, const Permutation& p,
                   int64_t tokens) {
  Tensor zeros = nb.Full(d_rows.type(), "TD", {tokens, d_rows.size('D')}, 0);
  return nb.ScatterAddRows(zeros, p.token, d_rows);
}

}  // namespace perfsim
