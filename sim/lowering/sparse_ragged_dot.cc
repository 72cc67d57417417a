// sparse_ragged_dot: top-k, argsort, repeat + gather, bincount, ragged-dot ×3, unpermute,
// weighted sum (backends.md 1a.3 without the shard_map; jax.lax.ragged_dot). Dropless: the
// M = T·K sorted rows are exactly covered by the groups. Data parallel (and fsdp) only.
//
// Backward (what jax.grad of ragged_dot gives, lowered explicitly):
//   combine_bwd  dr = dy ⊗ w, dw = Σ_D r·dy; d_out = dr in expert order
//   experts_bwd  da = ragged_dot dlhs(d_out, wo); d_wo = ragged_dot drhs(a, d_out); act';
//                d_wi_j = drhs(rows, dh_j); d_rows = Σ_j dlhs(dh_j, wi_j)
//   permute_bwd  dx = scatter-add of d_rows by token
#include "absl/strings/str_cat.h"
#include "sim/lowering/backends_internal.h"
#include "sim/lowering/checks.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/permute.h"

namespace perfsim {
namespace {

class SparseRaggedDot final : public MoeBackend {
 public:
  absl::string_view name() const override { return "sparse_ragged_dot"; }
  absl::string_view description() const override {
    return "top-k, argsort, gather, bincount, ragged-dot x3, unpermute, weighted sum";
  }

  absl::Status Supports(const StepSpec& spec) const override {
    if (spec.parallelism.ep != 1 || spec.parallelism.tp != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected ep=1 and tp=1 (data parallel only; ep_ragged_a2a shards experts); got ",
          ParallelismToString(spec.parallelism)));
    }
    return absl::OkStatus();
  }

  Parallelism DefaultParallelism(int64_t devices, const StepSpec& spec) const override {
    return DataParallelWithFsdp(devices, spec);
  }

  void Permute(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    PermuteState p{PermuteByExpert(nb, s.x, s.router.ids, s.spec.model.num_experts())};
    DeclareGroupRows(p.perm.group_sizes.op, GroupRows::kAssignments, 0);
    Tensor rows = p.perm.rows;
    if (s.router.input_scale.op != nullptr) {
      // Llama 4: each sorted row is scaled by its assignment's σ(v).
      Tensor flat = nb.Reshape(s.router.input_scale, "M", {rows.size('M')});
      Tensor scale = nb.Convert(nb.GatherRows(flat, p.perm.sort_idx), rows.type());
      s.saved["sparse.scale"] = scale;
      rows = nb.Mul(rows, scale);
    }
    s.saved["sparse.rows"] = rows;
    Save(s, p.perm);
  }

  void Experts(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& gs = s.saved["sparse.group_sizes"];
    const Tensor& rows = s.saved["sparse.rows"];
    Tensor h0 = nb.GroupedForward(rows, s.wi_0, gs);
    Tensor h1 = nb.GroupedForward(rows, s.wi_1, gs);
    Tensor a = GatedActivation(nb, s.spec.model.proto().activation(), h0, h1);
    s.saved["sparse.h0"] = h0;
    s.saved["sparse.h1"] = h1;
    s.saved["sparse.a"] = a;
    s.saved["sparse.out"] = nb.GroupedForward(a, s.wo, gs);
  }

  void Combine(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Permutation p = Load(s);
    Tensor r = Unpermute(nb, s.saved["sparse.out"], p, s.x.size('T'), s.router.ids.size('K'));
    s.saved["sparse.r"] = r;
    s.y_routed = WeightedCombine(nb, r, s.router.weights, s.x.type());
  }

  void CombineBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    auto [dr, dw] = WeightedCombineGrad(nb, s.saved["sparse.r"], s.router.weights, s.dy);
    s.d_weights = dw;
    s.saved["sparse.d_out"] = UnpermuteGrad(nb, dr, Load(s));
  }

  void ExpertsBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& gs = s.saved["sparse.group_sizes"];
    const Tensor& d_out = s.saved["sparse.d_out"];
    Tensor da = nb.GroupedDlhs(d_out, s.wo, gs);
    s.d_wo = nb.GroupedDrhs(s.saved["sparse.a"], d_out, gs);
    auto [dh0, dh1] = GatedActivationGrad(nb, s.spec.model.proto().activation(),
                                          s.saved["sparse.h0"], s.saved["sparse.h1"], da);
    const Tensor& rows = s.saved["sparse.rows"];
    s.d_wi_0 = nb.GroupedDrhs(rows, dh0, gs);
    s.d_wi_1 = nb.GroupedDrhs(rows, dh1, gs);
    s.saved["sparse.d_rows"] =
        nb.Add(nb.GroupedDlhs(dh0, s.wi_0, gs), nb.GroupedDlhs(dh1, s.wi_1, gs));
  }

  void PermuteBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Permutation p = Load(s);
    Tensor d_rows = s.saved["sparse.d_rows"];
    if (s.router.input_scale.op != nullptr) {
      // rows = x[token]·scale: dscale = Σ_D d_rows·x[token], back in assignment order (TK).
      Tensor d_scale = nb.Reduce(nb.Mul(nb.Convert(d_rows, PrimitiveType::kF32),
                                        nb.Convert(p.rows, PrimitiveType::kF32)),
                                 "D");
      Tensor in_order = nb.GatherRows(d_scale, p.inverse);
      s.d_input_scale = nb.Reshape(in_order, "TK", {s.x.size('T'), s.router.ids.size('K')});
      d_rows = nb.Mul(d_rows, s.saved["sparse.scale"]);
    }
    s.dx_routed = PermuteGrad(nb, d_rows, p, s.x.size('T'));
  }

 private:
  struct PermuteState {
    Permutation perm;
  };
  static void Save(StepState& s, const Permutation& p) {
    s.saved["sparse.sort_idx"] = p.sort_idx;
    s.saved["sparse.inverse"] = p.inverse;
    s.saved["sparse.token"] = p.token;
    s.saved["sparse.sorted_experts"] = p.sorted_experts;
    s.saved["sparse.x_rows"] = p.rows;
    s.saved["sparse.group_sizes"] = p.group_sizes;
  }
  static Permutation Load(StepState& s) {
    return Permutation{s.saved["sparse.sort_idx"], s.saved["sparse.inverse"],
                       s.saved["sparse.token"], s.saved["sparse.sorted_experts"],
                       s.saved["sparse.x_rows"], s.saved["sparse.group_sizes"]};
  }
};

}  // namespace

const MoeBackend& SparseRaggedDotBackend() {
  static const SparseRaggedDot backend;
  return backend;
}

}  // namespace perfsim
