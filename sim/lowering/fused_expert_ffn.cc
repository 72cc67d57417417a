// fused_expert_ffn: the argsort permutation of sparse_ragged_dot, then ONE kernel custom-call
// (perfsim.fused_ffn, convention in sim/interp/custom_calls.h) computing the whole gated expert
// FFN of every group: out[rows of e] = act(x_rows·wi_0[e], x_rows·wi_1[e])·wo[e]. The kernel
// tiles over F or over D (spec.knobs.fused_tiling / fused_tile); both tilings compute the same
// math and differ only in VMEM need, which sim/fit models as fused_ffn_f_tiled (tm, D, tf) and
// fused_ffn_d_tiled (tm, td, F). The references source no training kernel of this kind (the
// one fused path MaxText has, `fused_moe_matmul` -> tpu_inference `fused_moe_func`, is
// inference only: backends.md 1a, dispatch order item 1); the tilings and their VMEM model are
// perfsim's (sim/fit/fused_ffn_footprint.cc).
// Data parallel (with or without fsdp: the driver gathers the weights) only.
//
// Tiling, backend_config {"tiling":[tm,td,tf],"tiled_dim":"F"|"D","activation":...}:
//   tm = min(wi.fwd.tm, m) — the rows are padded to m_p = ⌈m / tm⌉·tm as for megablox_gmm
//        (megablox_calls.h), and tm divides m_p by construction;
//   over F: tf = min(fused_tile, F) (fused_tile 0: the wi.fwd tn, the mlp-dim tile), td = D;
//   over D: td = min(fused_tile, D) (fused_tile 0: the wo.fwd tn, the embed-dim tile), tf = F.
// The padding rows belong to no group: the kernel leaves them poisoned and the slice back to
// m rows drops them.
//
// Forward:
//   permute   argsort, rows = x[token] (·σ(v) for Llama 4), gs = bincount       (as sparse)
//   experts   out = fused_ffn(pad(rows), wi_0, wi_1, wo, gs)[:m]
//   combine   y = Σ_k w[t,k]·out[row of (t,k)] (f32)
// Backward (the kernel keeps no h, so the backward recomputes it with megablox kernels, the
// usual rematerialisation of a fused forward):
//   experts_bwd  h_j = gmm(rows, wi_j) (wi.fwd); a = act(h0, h1); then exactly megablox_gmm's
//                backward: da = gmm(d_out, wo, transpose_rhs), d_wo = tgmm(aᵀ, d_out),
//                d_wi_j = tgmm(rowsᵀ, dh_j), d_rows = Σ_j gmm(dh_j, wi_j, transpose_rhs)
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/backends_internal.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/megablox_calls.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The shortest of %.15g..%.17g that reads back as `value`, so a config carries the model's
// constant exactly and still reads "1.702".
std::string ExactNumber(double value) {
  for (int digits = 15; digits < 17; ++digits) {
    const std::string text = absl::StrFormat("%.*g", digits, value);
    if (std::strtod(text.c_str(), nullptr) == value) return text;
  }
  return absl::StrFormat("%.17g", value);
}

absl::string_view ActivationName(ActivationKind kind) {
  switch (kind) {
    case ACTIVATION_KIND_SILU:
      return "silu";
    case ACTIVATION_KIND_GELU:
      return "gelu";
    case ACTIVATION_KIND_CLIPPED_SWIGLU:
      return "clipped_swiglu";
    default:
      return "";
  }
}

// The fused kernel's (tm, td, tf) before the clamp to the problem.
GmmTiling FusedTiling(const StepSpec& spec) {
  const BackendKnobs& k = spec.knobs;
  const int64_t d = spec.model.d_model(), f = spec.ffn_per_device();
  if (k.fused_tiling == FusedFfnTiling::kOverF) {
    return {k.wi.fwd.tm, d, k.fused_tile != 0 ? k.fused_tile : k.wi.fwd.tn};
  }
  return {k.wi.fwd.tm, k.fused_tile != 0 ? k.fused_tile : k.wo.fwd.tn, f};
}

std::string FusedBackendConfig(const GmmTiling& t, FusedFfnTiling tiling,
                               const ActivationSpec& act) {
  std::string config =
      absl::StrCat(R"({"tiling":[)", t.tm, ",", t.tk, ",", t.tn, R"(],"tiled_dim":")",
                   tiling == FusedFfnTiling::kOverF ? "F" : "D", R"(","activation":")",
                   ActivationName(act.kind()), R"(")");
  if (act.kind() == ACTIVATION_KIND_CLIPPED_SWIGLU) {
    absl::StrAppend(&config, R"(,"clip_limit":)", ExactNumber(act.clip_limit()),
                    R"(,"sigmoid_alpha":)", ExactNumber(act.sigmoid_alpha()));
  }
  return absl::StrCat(config, R"(,"group_offset":0})");
}

class FusedExpertFfn final : public SortedKernelBackend {
 public:
  absl::string_view name() const override { return "fused_expert_ffn"; }
  absl::string_view description() const override {
    return "argsort permutation, one fused expert-FFN kernel tiled over F or D; gmm/tgmm "
           "backward";
  }

  absl::Status Supports(const StepSpec& spec) const override {
    PERFSIM_RETURN_IF_ERROR(SortedKernelBackend::Supports(spec));
    const ActivationKind kind = spec.model.proto().activation().kind();
    if (ActivationName(kind).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected a silu, gelu or clipped_swiglu activation (what the kernel implements); got ",
          ActivationKind_Name(kind)));
    }
    return absl::OkStatus();
  }

  void Experts(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const KernelRows rows = KernelRowsOf(s.spec);
    const Tensor x_rows = s.saved[kRows];
    if (s.spec.knobs.grouped_matmul != GroupedMatmulForm::kNative) {
      // What the kernel computes, as grouped matmuls (step_spec.h GroupedMatmulForm).
      const Tensor gs = s.saved[kGroupSizes];
      Tensor h0 = GmmCall(s, x_rows, s.wi_0, gs, "wi.fwd", /*transpose_rhs=*/false, rows);
      Tensor h1 = GmmCall(s, x_rows, s.wi_1, gs, "wi.fwd", /*transpose_rhs=*/false, rows);
      Tensor a = GatedActivation(nb, s.spec.model.proto().activation(), h0, h1);
      s.saved[kOut] = GmmCall(s, a, s.wo, gs, "wo.fwd", /*transpose_rhs=*/false, rows);
      return;
    }
    const GmmTiling t =
        ClampTiling(FusedTiling(s.spec), rows.padded_rows, s.x.size('D'), s.wi_0.size('F'));
    Tensor out = nb.CustomCall(
        {PadRows(s, x_rows, rows.padded_rows), s.wi_0, s.wi_1, s.wo, s.saved[kGroupSizes]},
        x_rows.type(), "MD", {rows.padded_rows, x_rows.size('D')}, kFusedFfnTarget,
        FusedBackendConfig(t, s.spec.knobs.fused_tiling, s.spec.model.proto().activation()));
    UpdateAnnotation(out.op, [&](Annotation& a) {
      *a.mutable_kernel() =
          KernelConfig(Kernel::KERNEL_FUSED_FFN, Kernel::PROJECTION_UNSPECIFIED, t);
    });
    // Rows [m, m_p) belong to no group: unwritten (poisoned) by the kernel, dropped here.
    s.saved[kOut] = FirstRows(nb, out, rows.rows);
  }

  void ExpertsBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const KernelRows rows = KernelRowsOf(s.spec);
    const Tensor gs = s.saved[kGroupSizes];
    const Tensor x_rows = s.saved[kRows];
    Tensor h0 = GmmCall(s, x_rows, s.wi_0, gs, "wi.fwd", /*transpose_rhs=*/false, rows);
    Tensor h1 = GmmCall(s, x_rows, s.wi_1, gs, "wi.fwd", /*transpose_rhs=*/false, rows);
    Tensor a = GatedActivation(nb, s.spec.model.proto().activation(), h0, h1);
    ExpertsBwdWithKernels(s, h0, h1, a);
  }

 protected:
  std::vector<KernelUse> KernelUses(const StepSpec& spec) const override {
    const int64_t d = spec.model.d_model(), f = spec.ffn_per_device();
    std::vector<KernelUse> uses = {{"fused_ffn", FusedTiling(spec), d, f}};
    if (spec.phase == Phase::kForwardBackward) {
      uses.push_back({"wi.fwd (recompute)", spec.knobs.wi.fwd, d, f});
      for (KernelUse& use : BackwardKernelUses(spec)) uses.push_back(std::move(use));
    }
    return uses;
  }
};

}  // namespace

const MoeBackend& FusedExpertFfnBackend() {
  static const FusedExpertFfn backend;
  return backend;
}

}  // namespace perfsim
