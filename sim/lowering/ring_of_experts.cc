// ring_of_experts: MaxText's ring-of-experts path (shared/reference/backends.md 1a.4; maxtext
// src/maxtext/layers/moe.py `use_ring_of_experts=True`, `roe_ag_and_route`): instead of moving
// token rows to the experts with ragged all-to-alls, every shard all-gathers the tokens of its
// EP group, runs only its own E_l = E/EP experts over all of them, and reduce-scatters the
// partial outputs back. No ×K on the wire; the sort and the kernels cover all EP·T_l·K rows.
// The grouped matmuls are megablox kernels (perfsim.gmm / perfsim.tgmm, megablox_calls.h):
// jax.lax.ragged_dot cannot take [E] group sizes with an [E_l, ...] rhs, and its reference
// rejects group_offset, so RoE needs megablox (backends.md 1a.4, code reading).
//
// Forward, per device (T_l tokens, M = EP·T_l·K gathered rows, F_l = F/TP, s = my ep index):
//   dispatch  x_g = all_gather_ep(x) [EP·T_l, D]                                    step 1
//             ids_g, w_g (and Llama 4's σ(v)) all-gathered likewise: the router ran on the
//             local tokens (lowering.cc), MaxText gathers the logits and re-routes; the
//             choices are the same, we move the smaller [T_l, K] tensors
//             rolled = (ids_g − E_l·s) mod E: my experts sort first                    step 2
//             argsort(rolled) → rows = x_g[token] [M, D] (·σ(v)); gs = bincount(rolled) [E]
//   experts   h_j = gmm(rows, wi_j [E_l, D, F_l], gs [E], group_offset 0): only the first E_l
//             groups (mine) are computed, the kernel zeroes every other row
//             (G_local < G, megablox _zero_uninitialized_memory); a = act(h0, h1);
//             out = gmm(a, wo) [M, D] (partial over tp)                               step 3
//             each call pads its rows to the wi forward row tile (MaxText gmm(), see
//             megablox_calls.h) and slices them back
//   combine   tp > 1: out = psum_scatter_tp(out, D)                                  step 4
//             y_g = Σ_k w_g[t,k]·out[row of (t,k)] [EP·T_l, D/TP] (f32 weight sum; the rows
//             of other shards' experts are zero)                                      step 5
//             y = psum_scatter_ep(y_g, T) [T_l, D/TP]                                 step 6
//             tp > 1: y = all_gather_tp(y, D) (ours: the driver's y is replicated over tp)
// With EP = 1 every group is local (G_local = G), so the gmm leaves uncovered rows unwritten
// (poisoned); the only such rows are the tile padding, which the slice after each call drops.
//
// Backward (megablox VJP: dlhs = gmm(dy, rhs, transpose_rhs), drhs = tgmm(lhsᵀ, dy); all-gather
// and reduce-scatter transpose into each other):
//   combine_bwd  dy_l = dy[:, tp slice]; dy_g = all_gather_ep(dy_l); dr = dy_g ⊗ w_g;
//                dw = psum_tp(psum_scatter_ep(Σ_D out·dy_g)); d_out = dr in expert order;
//                tp > 1: all_gather_tp(d_out, D)
//   experts_bwd  da = gmm(d_out, wo, transpose_rhs) (rows of other shards' experts: zero);
//                d_wo = tgmm(aᵀ, d_out); act'; d_wi_j = tgmm(rowsᵀ, dh_j) (local groups
//                only); d_rows = Σ_j gmm(dh_j, wi_j, transpose_rhs)
//   dispatch_bwd dx_g = scatter-add of d_rows by token (Llama 4: d_scale = Σ_D d_rows·x[token]);
//                dx = psum_tp(psum_scatter_ep(dx_g, T)) (x is replicated over tp, F is split)
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/lowering/backends_internal.h"
#include "sim/lowering/collectives.h"
#include "sim/lowering/ep_dispatch.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/megablox_calls.h"
#include "sim/lowering/permute.h"

namespace perfsim {
namespace {

constexpr PrimitiveType kS32 = PrimitiveType::kS32;

// The gathered rows M = EP·T_l·K and their padding to the wi forward row tile.
KernelRows GatheredRows(const StepSpec& spec) {
  KernelRows r;
  r.rows = spec.parallelism.ep * spec.tokens_per_device() * spec.model.experts_per_token();
  r.tm = std::min(spec.knobs.wi.fwd.tm, r.rows);
  r.padded_rows = r.tm > 0 ? (r.rows + r.tm - 1) / r.tm * r.tm : r.rows;
  return r;
}

void SavePermutation(StepState& s, const Permutation& p) {
  s.saved["roe.sort_idx"] = p.sort_idx;
  s.saved["roe.inverse"] = p.inverse;
  s.saved["roe.token"] = p.token;
  s.saved["roe.sorted_experts"] = p.sorted_experts;
  s.saved["roe.x_rows"] = p.rows;
  s.saved["roe.group_sizes"] = p.group_sizes;
}

Permutation LoadPermutation(StepState& s) {
  return Permutation{s.saved["roe.sort_idx"], s.saved["roe.inverse"],
                     s.saved["roe.token"],    s.saved["roe.sorted_experts"],
                     s.saved["roe.x_rows"],   s.saved["roe.group_sizes"]};
}

// This device's D/TP slice of a [T, D] tensor replicated over tp.
Tensor TpSlice(StepState& s, const Tensor& t) {
  if (s.spec.parallelism.tp == 1) return t;
  NamedBuilder& nb = s.nb;
  const int64_t d_l = t.size('D') / s.spec.parallelism.tp;
  Tensor start = nb.Mul(MeshIndex(s, MeshAxis::kTp), nb.Scalar(kS32, d_l));
  return nb.Name(nb.raw().DynamicSlice(t.op, {nb.Scalar(kS32, 0).op, start.op}, {t.size('T'), d_l}),
                 t.dims);
}

class RingOfExperts final : public MoeBackend {
 public:
  absl::string_view name() const override { return "ring_of_experts"; }
  absl::string_view description() const override {
    return "all-gather tokens over EP, local experts only (gmm with G_local < G), "
           "reduce-scatter back";
  }

  absl::Status Supports(const StepSpec& spec) const override {
    const int64_t d = spec.model.d_model(), tp = spec.parallelism.tp;
    if (d % tp != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected D divisible by tp (the expert output is reduce-scattered over tp on D); got "
          "D = ",
          d, ", tp = ", tp));
    }
    return absl::OkStatus();
  }

  Parallelism DefaultParallelism(int64_t devices, const StepSpec& spec) const override {
    int64_t ep = 1;
    for (int64_t e = 1; e <= devices; ++e) {
      if (devices % e == 0 && spec.model.num_experts() % e == 0) ep = e;
    }
    return ExpertParallelWithFsdp(devices, ep, spec);
  }

  void Dispatch(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    // A tiling megablox would refuse fails the lowering (as in megablox_gmm), not Supports: the
    // combination is supported, this tiling of it is wrong.
    if (absl::Status tilings = CheckTilings(s.spec); !tilings.ok()) {
      nb.Fail(std::string(tilings.message()), s.x);
      return;
    }
    const int64_t e = s.spec.model.num_experts(), e_l = s.spec.experts_per_device();
    const std::vector<MeshAxis> ep = {MeshAxis::kEp};
    Tensor x_g = AllGather(s, s.x, 'T', ep);
    Tensor ids_g = AllGather(s, s.router.ids, 'T', ep);
    s.saved["roe.weights"] = AllGather(s, s.router.weights, 'T', ep);
    // (e − E_l·s) mod E, kept non-negative: remainder takes the dividend's sign.
    Tensor shift = nb.Sub(nb.Scalar(kS32, static_cast<double>(e)),
                          nb.Mul(MeshIndex(s, MeshAxis::kEp), nb.Scalar(kS32, e_l)));
    Tensor rolled = nb.Binary(Opcode::kRemainder, nb.Add(ids_g, shift), nb.Scalar(kS32, e));
    Permutation p = PermuteByExpert(nb, x_g, rolled, e);
    DeclareGroupRows(p.group_sizes.op, GroupRows::kGatheredAssignments, 0, /*roll=*/e_l);
    Tensor rows = p.rows;
    if (s.router.input_scale.op != nullptr) {
      // Llama 4: each sorted row is scaled by its assignment's σ(v).
      Tensor scale_g = AllGather(s, s.router.input_scale, 'T', ep);
      Tensor flat = nb.Reshape(scale_g, "M", {rows.size('M')});
      Tensor scale = nb.Convert(nb.GatherRows(flat, p.sort_idx), rows.type());
      s.saved["roe.scale"] = scale;
      rows = nb.Mul(rows, scale);
    }
    s.saved["roe.rows"] = rows;
    SavePermutation(s, p);
  }

  void Experts(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const KernelRows kr = GatheredRows(s.spec);
    const Tensor& gs = s.saved["roe.group_sizes"];
    const Tensor& rows = s.saved["roe.rows"];
    Tensor h0 = GmmCall(s, rows, s.wi_0, gs, "wi.fwd", /*transpose_rhs=*/false, kr);
    Tensor h1 = GmmCall(s, rows, s.wi_1, gs, "wi.fwd", /*transpose_rhs=*/false, kr);
    Tensor a = GatedActivation(nb, s.spec.model.proto().activation(), h0, h1);
    s.saved["roe.h0"] = h0;
    s.saved["roe.h1"] = h1;
    s.saved["roe.a"] = a;
    s.saved["roe.out"] = GmmCall(s, a, s.wo, gs, "wo.fwd", /*transpose_rhs=*/false, kr);
  }

  void Combine(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& weights = s.saved["roe.weights"];
    Tensor out = ReduceScatter(s, s.saved["roe.out"], 'D', {MeshAxis::kTp});
    Tensor r = Unpermute(nb, out, LoadPermutation(s), weights.size('T'), weights.size('K'));
    s.saved["roe.r"] = r;
    Tensor y_g = WeightedCombine(nb, r, weights, s.x.type());
    s.y_routed = AllGather(s, ReduceScatter(s, y_g, 'T', {MeshAxis::kEp}), 'D', {MeshAxis::kTp});
  }

  void CombineBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Tensor dy_g = AllGather(s, TpSlice(s, s.dy), 'T', {MeshAxis::kEp});
    auto [dr, dw] = WeightedCombineGrad(nb, s.saved["roe.r"], s.saved["roe.weights"], dy_g);
    s.d_weights = AllReduce(s, ReduceScatter(s, dw, 'T', {MeshAxis::kEp}), {MeshAxis::kTp});
    Tensor d_out = UnpermuteGrad(nb, dr, LoadPermutation(s));
    s.saved["roe.d_out"] = AllGather(s, d_out, 'D', {MeshAxis::kTp});
  }

  void ExpertsBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const KernelRows kr = GatheredRows(s.spec);
    const int64_t groups = s.wo.size('E');
    const Tensor& gs = s.saved["roe.group_sizes"];
    const Tensor& d_out = s.saved["roe.d_out"];
    const Tensor& rows = s.saved["roe.rows"];
    Tensor da = GmmCall(s, d_out, s.wo, gs, "wo.dlhs", /*transpose_rhs=*/true, kr);
    s.d_wo = TgmmCall(s, s.saved["roe.a"], d_out, gs, "wo.drhs", kr, groups, s.wo.type());
    auto [dh0, dh1] = GatedActivationGrad(nb, s.spec.model.proto().activation(), s.saved["roe.h0"],
                                          s.saved["roe.h1"], da);
    s.d_wi_0 = TgmmCall(s, rows, dh0, gs, "wi.drhs", kr, groups, s.wi_0.type());
    s.d_wi_1 = TgmmCall(s, rows, dh1, gs, "wi.drhs", kr, groups, s.wi_1.type());
    s.saved["roe.d_rows"] =
        nb.Add(GmmCall(s, dh0, s.wi_0, gs, "wi.dlhs", /*transpose_rhs=*/true, kr),
               GmmCall(s, dh1, s.wi_1, gs, "wi.dlhs", /*transpose_rhs=*/true, kr));
  }

  void DispatchBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const std::vector<MeshAxis> ep = {MeshAxis::kEp}, tp = {MeshAxis::kTp};
    Permutation p = LoadPermutation(s);
    const Tensor& weights = s.saved["roe.weights"];
    Tensor d_rows = s.saved["roe.d_rows"];
    if (s.router.input_scale.op != nullptr) {
      // rows = x_g[token]·scale: dscale = Σ_D d_rows·x_g[token], back in assignment order (TK).
      Tensor d_scale = nb.Reduce(
          nb.Mul(nb.Convert(d_rows, PrimitiveType::kF32), nb.Convert(p.rows, PrimitiveType::kF32)),
          "D");
      Tensor in_order = nb.Reshape(nb.GatherRows(d_scale, p.inverse), "TK",
                                   {weights.size('T'), weights.size('K')});
      s.d_input_scale = AllReduce(s, ReduceScatter(s, in_order, 'T', ep), tp);
      d_rows = nb.Mul(d_rows, s.saved["roe.scale"]);
    }
    Tensor dx_g = PermuteGrad(nb, d_rows, p, weights.size('T'));
    s.dx_routed = AllReduce(s, ReduceScatter(s, dx_g, 'T', ep), tp);
  }

 private:
  // megablox's m % tm rule over the gathered rows, for every kernel the phase runs.
  static absl::Status CheckTilings(const StepSpec& spec) {
    const BackendKnobs& k = spec.knobs;
    const int64_t d = spec.model.d_model(), f = spec.ffn_per_device();
    std::vector<KernelUse> uses = {{"wi.fwd", k.wi.fwd, d, f}, {"wo.fwd", k.wo.fwd, f, d}};
    if (spec.phase == Phase::kForwardBackward) {
      uses.insert(uses.end(), {{"wo.dlhs", k.wo.dlhs, d, f},
                               {"wo.drhs", k.wo.drhs, f, d},
                               {"wi.dlhs", k.wi.dlhs, f, d},
                               {"wi.drhs", k.wi.drhs, d, f}});
    }
    const KernelRows rows = GatheredRows(spec);
    for (const KernelUse& use : uses) {
      const GmmTiling& t = use.tiling;
      if (t.tm < 1 || t.tk < 1 || t.tn < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(use.name, " tiling: expected positive tiles (tm, tk, tn); got (", t.tm,
                         ", ", t.tk, ", ", t.tn, ")"));
      }
      const GmmTiling clamped = ClampTiling(t, rows.padded_rows, use.k, use.n);
      if (rows.padded_rows % clamped.tm != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            use.name, " tiling (", t.tm, ", ", t.tk, ", ", t.tn,
            "): expected tm dividing the padded row count m = ", rows.padded_rows, " (", rows.rows,
            " gathered rows EP·T_l·K padded to a multiple of the wi.fwd row tile ", rows.tm,
            "; megablox raises ValueError otherwise); got tm = ", clamped.tm));
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace

const MoeBackend& RingOfExpertsBackend() {
  static const RingOfExperts backend;
  return backend;
}

}  // namespace perfsim
