// dense_einsum: every token through every expert, masked combine (backends.md 1a.2, "dense
// dropless"). The numerical reference every other backend is validated against.
//
//   h0 = einsum("TD,EDF->TEF", x, wi_0)      h1 likewise       a = act(h0, h1)
//   o  = einsum("TEF,EFD->TED", a, wo)       y  = einsum("TED,TE->TD", o, G)
// with G the router's combine weights scattered over E (0 for experts not chosen). For Llama 4
// routing the expert input is x·σ(v) per chosen expert, so x becomes xs = x ⊗ S ("TED").
// FLOPs 6·T·E·D·F: the reference pays for every expert.
//
// Backward of sum(y·dy):
//   dG = einsum("TED,TD->TE", o, dy)         do = dy ⊗ G
//   da = einsum("TED,EFD->TEF", do, wo)      dwo = einsum("TEF,TED->EFD", a, do)
//   (dh0, dh1) = act'(da)                    dwi_j = einsum("TD,TEF->EDF", x, dh_j)
//   dx = Σ_j einsum("TEF,EDF->TD", dh_j, wi_j)
// Data parallel (and fsdp) only: tokens split over dp, weights replicated (their gradients are summed
// over dp by the common grad_sync stage).
#include "absl/strings/str_cat.h"
#include "sim/lowering/backends_internal.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/permute.h"

namespace perfsim {
namespace {

class DenseEinsum final : public MoeBackend {
 public:
  absl::string_view name() const override { return "dense_einsum"; }
  absl::string_view description() const override {
    return "dropless, every token through every expert, masked combine (the reference)";
  }

  absl::Status Supports(const StepSpec& spec) const override {
    if (spec.parallelism.ep != 1 || spec.parallelism.tp != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected ep=1 and tp=1 (the reference runs data parallel only); got ",
                       ParallelismToString(spec.parallelism)));
    }
    return absl::OkStatus();
  }

  void Experts(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Tensor in = s.x;
    std::string spec_in = "TD";
    if (s.router.input_scale.op != nullptr) {
      // Llama 4: each expert sees x scaled by its own σ(v) (1 for experts not chosen: their
      // combine weight is 0 anyway). Selected, not computed as (σ − 1) + 1: in f32 that rounds
      // σ ≈ 1e-8 (the tiny_scores routing) to a multiple of 2^-24 ≈ 6e-8, a reference wrong by
      // up to 100% in the expert gradients while every backend scales its rows by σ exactly.
      const int64_t t = s.x.size('T'), e = s.wi_0.size('E');
      Tensor chosen =
          nb.Compare(nb.Reduce(s.router.onehot, "K"),
                     nb.Full(PrimitiveType::kF32, "TE", {t, e}, 0), ComparisonDirection::kGt);
      Tensor scale = nb.Select(chosen, ScatterToExperts(nb, s.router, s.router.input_scale),
                               nb.Full(PrimitiveType::kF32, "TE", {t, e}, 1));
      scale = nb.Convert(scale, s.x.type());
      in = nb.Mul(nb.BroadcastTo(s.x, "TED", {{'E', s.wi_0.size('E')}}), scale);
      spec_in = "TED";
      s.saved["dense.xs"] = in;
      s.saved["dense.scale"] = scale;
    }
    Tensor h0 = nb.Einsum(absl::StrCat(spec_in, ",EDF->TEF"), in, s.wi_0);
    Tensor h1 = nb.Einsum(absl::StrCat(spec_in, ",EDF->TEF"), in, s.wi_1);
    Tensor a = GatedActivation(nb, s.spec.model.proto().activation(), h0, h1);
    Tensor o = nb.Einsum("TEF,EFD->TED", a, s.wo);
    s.saved["dense.h0"] = h0;
    s.saved["dense.h1"] = h1;
    s.saved["dense.a"] = a;
    s.saved["dense.o"] = o;
  }

  void Combine(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Tensor g = nb.Convert(s.router.dense, s.x.type());
    const Tensor& o = s.saved["dense.o"];
    nb.SaveForBackward(kExpertOutputsRole, "the expert outputs the forward combine weighted", o);
    s.y_routed = nb.Einsum("TED,TE->TD", o, g);
  }

  void CombineBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const int64_t mark = nb.InstructionCount();
    Tensor dg = nb.Einsum("TED,TD->TE", s.saved["dense.o"], s.dy, PrimitiveType::kF32);
    nb.UseResidual(kExpertOutputsRole, s.saved["dense.o"], mark);
    s.d_weights = GatherFromExperts(nb, s.router, dg);
    Tensor g = nb.Convert(s.router.dense, s.dy.type());
    s.saved["dense.do"] = nb.Mul(nb.BroadcastTo(s.dy, "TED", {{'E', s.wo.size('E')}}), g);
  }

  void ExpertsBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& d_o = s.saved["dense.do"];
    const Tensor& a = s.saved["dense.a"];
    Tensor da = nb.Einsum("TED,EFD->TEF", d_o, s.wo);
    s.d_wo = nb.Einsum("TEF,TED->EFD", a, d_o);
    auto [dh0, dh1] = GatedActivationGrad(nb, s.spec.model.proto().activation(),
                                          s.saved["dense.h0"], s.saved["dense.h1"], da);
    if (s.router.input_scale.op == nullptr) {
      s.d_wi_0 = nb.Einsum("TD,TEF->EDF", s.x, dh0);
      s.d_wi_1 = nb.Einsum("TD,TEF->EDF", s.x, dh1);
      s.dx_routed = nb.Add(nb.Einsum("TEF,EDF->TD", dh0, s.wi_0),
                           nb.Einsum("TEF,EDF->TD", dh1, s.wi_1));
      return;
    }
    const Tensor& xs = s.saved["dense.xs"];
    s.d_wi_0 = nb.Einsum("TED,TEF->EDF", xs, dh0);
    s.d_wi_1 = nb.Einsum("TED,TEF->EDF", xs, dh1);
    Tensor dxs = nb.Add(nb.Einsum("TEF,EDF->TED", dh0, s.wi_0),
                        nb.Einsum("TEF,EDF->TED", dh1, s.wi_1));
    // xs = x ⊗ scale: dx = Σ_E dxs·scale; dscale = Σ_D dxs·x, read at the chosen experts.
    s.dx_routed = nb.Reduce(nb.Mul(dxs, s.saved["dense.scale"]), "E");
    Tensor dscale = nb.Reduce(nb.Mul(dxs, nb.BroadcastLike(s.x, dxs)), "D");
    s.d_input_scale = GatherFromExperts(nb, s.router, nb.Convert(dscale, PrimitiveType::kF32));
  }
};

}  // namespace

const MoeBackend& DenseEinsumBackend() {
  static const DenseEinsum backend;
  return backend;
}

}  // namespace perfsim
