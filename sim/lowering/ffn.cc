#include "sim/lowering/ffn.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace perfsim {
namespace {

constexpr double kGeluC = 0.7978845608028654;  // √(2/π)
constexpr double kGeluA = 0.044715;

Tensor OneMinus(NamedBuilder& nb, const Tensor& t) {
  return nb.AddScalar(nb.MulScalar(t, -1), 1);
}

// tanh(√(2/π)(x + a·x³))
Tensor GeluInner(NamedBuilder& nb, const Tensor& x) {
  Tensor x3 = nb.Mul(x, nb.Mul(x, x));
  return nb.Unary(Opcode::kTanh, nb.MulScalar(nb.Add(x, nb.MulScalar(x3, kGeluA)), kGeluC));
}

}  // namespace

Tensor GatedActivation(NamedBuilder& nb, const ActivationSpec& spec, const Tensor& h0,
                       const Tensor& h1, absl::string_view role) {
  nb.SaveForBackward(absl::StrCat(role, ".h0"), "the gate projection the activation read", h0);
  nb.SaveForBackward(absl::StrCat(role, ".h1"), "the up projection the activation read", h1);
  switch (spec.kind()) {
    case ACTIVATION_KIND_SILU:
      return nb.Mul(nb.Mul(h0, nb.Unary(Opcode::kLogistic, h0)), h1);
    case ACTIVATION_KIND_GELU: {
      Tensor gelu = nb.Mul(nb.MulScalar(h0, 0.5), nb.AddScalar(GeluInner(nb, h0), 1));
      return nb.Mul(gelu, h1);
    }
    case ACTIVATION_KIND_CLIPPED_SWIGLU: {
      const double limit = spec.clip_limit(), alpha = spec.sigmoid_alpha();
      Tensor lim = nb.Full(h0.type(), h0.dims, h0.shape().dimensions(), limit);
      Tensor g = nb.Binary(Opcode::kMinimum, h0, lim);
      Tensor u = nb.Max(nb.Binary(Opcode::kMinimum, h1, lim), nb.MulScalar(lim, -1));
      Tensor glu = nb.Mul(g, nb.Unary(Opcode::kLogistic, nb.MulScalar(g, alpha)));
      return nb.Mul(glu, nb.AddScalar(u, 1));
    }
    default:
      return nb.Fail("activation: expected silu, gelu or clipped_swiglu; got none", h0);
  }
}

namespace {

std::pair<Tensor, Tensor> GatedActivationGradOf(NamedBuilder& nb, const ActivationSpec& spec,
                                                const Tensor& h0, const Tensor& h1,
                                                const Tensor& da) {
  switch (spec.kind()) {
    case ACTIVATION_KIND_SILU: {
      // d/dx x·σ(x) = σ(x)·(1 + x·(1 − σ(x))).
      Tensor s = nb.Unary(Opcode::kLogistic, h0);
      Tensor silu = nb.Mul(h0, s);
      Tensor dsilu = nb.Mul(s, nb.AddScalar(nb.Mul(h0, OneMinus(nb, s)), 1));
      return {nb.Mul(nb.Mul(da, h1), dsilu), nb.Mul(da, silu)};
    }
    case ACTIVATION_KIND_GELU: {
      // gelu'(x) = (1 + t)/2 + x/2·(1 − t²)·√(2/π)·(1 + 3a·x²), t = tanh(√(2/π)(x + a·x³)).
      Tensor t = GeluInner(nb, h0);
      Tensor gelu = nb.Mul(nb.MulScalar(h0, 0.5), nb.AddScalar(t, 1));
      Tensor sech2 = OneMinus(nb, nb.Mul(t, t));
      Tensor poly = nb.AddScalar(nb.MulScalar(nb.Mul(h0, h0), 3 * kGeluA), 1);
      Tensor dgelu = nb.Add(nb.MulScalar(nb.AddScalar(t, 1), 0.5),
                            nb.Mul(nb.MulScalar(h0, 0.5 * kGeluC), nb.Mul(sech2, poly)));
      return {nb.Mul(nb.Mul(da, h1), dgelu), nb.Mul(da, gelu)};
    }
    case ACTIVATION_KIND_CLIPPED_SWIGLU: {
      const double limit = spec.clip_limit(), alpha = spec.sigmoid_alpha();
      Tensor lim = nb.Full(h0.type(), h0.dims, h0.shape().dimensions(), limit);
      Tensor neg_lim = nb.MulScalar(lim, -1);
      Tensor zero = nb.Full(h0.type(), h0.dims, h0.shape().dimensions(), 0);
      Tensor g = nb.Binary(Opcode::kMinimum, h0, lim);
      Tensor u = nb.Max(nb.Binary(Opcode::kMinimum, h1, lim), neg_lim);
      Tensor s = nb.Unary(Opcode::kLogistic, nb.MulScalar(g, alpha));
      Tensor glu = nb.Mul(g, s);
      // d/dg g·σ(αg) = σ + α·g·σ·(1 − σ); zero where h0 was clipped (h0 > L).
      Tensor dglu = nb.Add(s, nb.Mul(nb.MulScalar(g, alpha), nb.Mul(s, OneMinus(nb, s))));
      Tensor dg = nb.Mul(nb.Mul(da, nb.AddScalar(u, 1)), dglu);
      Tensor dh0 = nb.Select(nb.Compare(h0, lim, ComparisonDirection::kGt), zero, dg);
      Tensor du = nb.Mul(da, glu);
      Tensor inside = nb.Compare(nb.Unary(Opcode::kAbs, h1), lim, ComparisonDirection::kLe);
      Tensor dh1 = nb.Select(inside, du, zero);
      return {dh0, dh1};
    }
    default:
      return {nb.Fail("activation: expected silu, gelu or clipped_swiglu; got none", h0), h1};
  }
}

}  // namespace

std::pair<Tensor, Tensor> GatedActivationGrad(NamedBuilder& nb, const ActivationSpec& spec,
                                              const Tensor& h0, const Tensor& h1,
                                              const Tensor& da, absl::string_view role) {
  const int64_t mark = nb.InstructionCount();
  std::pair<Tensor, Tensor> grads = GatedActivationGradOf(nb, spec, h0, h1, da);
  nb.UseResidual(absl::StrCat(role, ".h0"), h0, mark);
  nb.UseResidual(absl::StrCat(role, ".h1"), h1, mark);
  return grads;
}

}  // namespace perfsim
