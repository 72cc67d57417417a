#include "sim/lowering/megablox_calls.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/checks.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/permute.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

std::string TilingText(const GmmTiling& t) {
  return absl::StrCat("(", t.tm, ", ", t.tk, ", ", t.tn, ")");
}

// The Permutation is kept in StepState::saved between the forward and backward stages.
void SavePermutation(StepState& s, const Permutation& p) {
  s.saved["kernel.sort_idx"] = p.sort_idx;
  s.saved["kernel.inverse"] = p.inverse;
  s.saved["kernel.token"] = p.token;
  s.saved["kernel.sorted_experts"] = p.sorted_experts;
  s.saved["kernel.x_rows"] = p.rows;
  s.saved[SortedKernelBackend::kGroupSizes] = p.group_sizes;
}

Permutation LoadPermutation(StepState& s) {
  return Permutation{s.saved["kernel.sort_idx"], s.saved["kernel.inverse"],
                     s.saved["kernel.token"],    s.saved["kernel.sorted_experts"],
                     s.saved["kernel.x_rows"],   s.saved[SortedKernelBackend::kGroupSizes]};
}

}  // namespace

KernelRows KernelRowsOf(const StepSpec& spec) {
  KernelRows r;
  r.rows = spec.tokens_per_device() * spec.model.experts_per_token();
  r.tm = std::min(spec.knobs.wi.fwd.tm, r.rows);
  r.padded_rows = r.tm > 0 ? (r.rows + r.tm - 1) / r.tm * r.tm : r.rows;
  return r;
}

GmmTiling GmmCallTiling(const GmmTiling& tiling, int64_t padded_rows) {
  return GmmTiling{std::min(tiling.tm, padded_rows), tiling.tk, tiling.tn};
}

GmmTiling ClampTiling(const GmmTiling& tiling, int64_t padded_rows, int64_t k, int64_t n) {
  return GmmTiling{std::min(tiling.tm, padded_rows), std::min(tiling.tk, k),
                   std::min(tiling.tn, n)};
}

absl::Status CheckKernelTilings(const StepSpec& spec, const std::vector<KernelUse>& uses) {
  const KernelRows rows = KernelRowsOf(spec);
  for (const KernelUse& use : uses) {
    const GmmTiling& t = use.tiling;
    if (t.tm < 1 || t.tk < 1 || t.tn < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          use.name, " tiling: expected positive tiles (tm, tk, tn); got ", TilingText(t)));
    }
    const GmmTiling clamped = ClampTiling(t, rows.padded_rows, use.k, use.n);
    if (rows.padded_rows % clamped.tm != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(use.name, " tiling ", TilingText(t),
                       ": expected tm dividing the padded row count m = ", rows.padded_rows, " (",
                       rows.rows, " sorted rows T_l·K padded to a multiple of the wi.fwd row tile ",
                       rows.tm, "; megablox raises ValueError otherwise); got tm = ", clamped.tm));
    }
  }
  return absl::OkStatus();
}

std::string GmmBackendConfig(const GmmTiling& t, bool transpose_rhs) {
  // No spaces: checks.cc looks for "transpose_rhs":true verbatim.
  return absl::StrCat(R"({"tiling":[)", t.tm, ",", t.tk, ",", t.tn, R"(],"transpose_rhs":)",
                      transpose_rhs ? "true" : "false", R"(,"group_offset":0})");
}

std::string TgmmBackendConfig(const GmmTiling& t) {
  return absl::StrCat(R"({"tiling":[)", t.tm, ",", t.tk, ",", t.tn, R"(],"group_offset":0})");
}

Tensor PadRows(StepState& s, const Tensor& t, int64_t padded_rows) {
  const int64_t m = t.shape().dimensions(0);
  if (m == padded_rows) return t;
  const std::string key = absl::StrCat("kernel.padded.", t.op->name());
  if (auto it = s.saved.find(key); it != s.saved.end()) return it->second;
  NamedBuilder& nb = s.nb;
  std::vector<PaddingDimension> padding(t.rank());
  padding[0].high = padded_rows - m;
  Tensor padded =
      nb.Name(nb.raw().Pad(t.op, nb.Scalar(t.type(), 0).op, std::move(padding)), t.dims);
  s.saved[key] = padded;
  return padded;
}

Tensor FirstRows(NamedBuilder& nb, const Tensor& t, int64_t count) {
  std::vector<int64_t> limits = t.shape().dimensions();
  if (limits[0] == count) return t;
  limits[0] = count;
  return nb.Slice(t, std::vector<int64_t>(limits.size(), 0), limits);
}

namespace {

bool KernelsAsGroupedMatmuls(const StepState& s) {
  return s.spec.knobs.grouped_matmul != GroupedMatmulForm::kNative;
}

// The group sizes of the first `groups` groups, declared as the full tensor was (checks.h): a
// prefix sums to at most what the whole does.
Tensor LocalGroupSizes(NamedBuilder& nb, const Tensor& group_sizes, int64_t groups) {
  if (group_sizes.shape().dimensions(0) == groups) return group_sizes;
  Tensor local = nb.Slice(group_sizes, {0}, {groups});
  local.op->mutable_attributes()->frontend_attributes =
      group_sizes.op->attributes().frontend_attributes;
  if (group_sizes.op->annotation() != nullptr && group_sizes.op->annotation()->has_ragged()) {
    UpdateAnnotation(local.op, [&](Annotation& a) {
      *a.mutable_ragged() = group_sizes.op->annotation()->ragged();
      a.mutable_ragged()->set_group_count(groups);
    });
  }
  return local;
}

}  // namespace

Tensor GmmCall(StepState& s, const Tensor& lhs, const Tensor& rhs, const Tensor& group_sizes,
               absl::string_view role, bool transpose_rhs, const KernelRows& rows) {
  NamedBuilder& nb = s.nb;
  if (KernelsAsGroupedMatmuls(s)) {
    const Tensor gs = LocalGroupSizes(nb, group_sizes, rhs.shape().dimensions(0));
    return transpose_rhs ? nb.GroupedDlhs(lhs, rhs, gs) : nb.GroupedForward(lhs, rhs, gs);
  }
  const int64_t n = rhs.shape().dimensions(transpose_rhs ? 1 : 2);
  const GmmTiling t = GmmCallTiling(*TilingKnob(s.spec.knobs, role), rows.padded_rows);
  Tensor out = nb.CustomCall({PadRows(s, lhs, rows.padded_rows), rhs, group_sizes}, lhs.type(),
                             std::string{lhs.dims[0], rhs.dims[transpose_rhs ? 1 : 2]},
                             {rows.padded_rows, n}, kGmmTarget, GmmBackendConfig(t, transpose_rhs));
  UpdateAnnotation(out.op, [&](Annotation& a) {
    *a.mutable_kernel() =
        KernelConfig(Kernel::KERNEL_GMM, ProjectionOfRole(role), t, transpose_rhs);
  });
  // The checks and the sweep read the role back from the annotation.
  PERFSIM_CHECK(KernelRoleOf(out.op->annotation()->kernel()) == role);
  // Rows [m, m_p) belong to no group: unwritten (poisoned) by the kernel, dropped here.
  return FirstRows(nb, out, rows.rows);
}

Tensor TgmmCall(StepState& s, const Tensor& lhs, const Tensor& dy, const Tensor& group_sizes,
                absl::string_view role, const KernelRows& rows, int64_t num_groups,
                PrimitiveType out) {
  NamedBuilder& nb = s.nb;
  if (KernelsAsGroupedMatmuls(s)) {
    return nb.Convert(nb.GroupedDrhs(lhs, dy, LocalGroupSizes(nb, group_sizes, num_groups)), out);
  }
  const int64_t k = lhs.shape().dimensions(1);
  const int64_t n = dy.shape().dimensions(1);
  const GmmTiling t = GmmCallTiling(*TilingKnob(s.spec.knobs, role), rows.padded_rows);
  // The transposed lhs is shared too (d_wi_0 and d_wi_1 both take rowsᵀ).
  const Tensor padded = PadRows(s, lhs, rows.padded_rows);
  const std::string key = absl::StrCat("kernel.transposed.", padded.op->name());
  if (s.saved.find(key) == s.saved.end()) {
    s.saved[key] = nb.Transpose(padded, std::string{lhs.dims[1], lhs.dims[0]});
  }
  const Tensor lhs_t = s.saved[key];
  Tensor dw = nb.CustomCall({lhs_t, PadRows(s, dy, rows.padded_rows), group_sizes}, out,
                            std::string{'E', lhs.dims[1], dy.dims[1]}, {num_groups, k, n},
                            kTgmmTarget, TgmmBackendConfig(t));
  UpdateAnnotation(dw.op, [&](Annotation& a) {
    *a.mutable_kernel() = KernelConfig(Kernel::KERNEL_TGMM, ProjectionOfRole(role), t);
  });
  PERFSIM_CHECK(KernelRoleOf(dw.op->annotation()->kernel()) == role);
  return dw;
}

absl::Status SortedKernelBackend::Supports(const StepSpec& spec) const {
  if (spec.parallelism.ep != 1 || spec.parallelism.tp != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ep=1 and tp=1 (data parallel only; ep_ragged_a2a shards experts); got ",
        ParallelismToString(spec.parallelism)));
  }
  return absl::OkStatus();
}

std::vector<KernelUse> SortedKernelBackend::BackwardKernelUses(const StepSpec& spec) {
  const BackendKnobs& k = spec.knobs;
  const int64_t d = spec.model.d_model(), f = spec.ffn_per_device();
  return {{"wo.dlhs", k.wo.dlhs, d, f},
          {"wo.drhs", k.wo.drhs, f, d},
          {"wi.dlhs", k.wi.dlhs, f, d},
          {"wi.drhs", k.wi.drhs, d, f}};
}

void SortedKernelBackend::Permute(StepState& s) const {
  NamedBuilder& nb = s.nb;
  if (absl::Status tilings = CheckKernelTilings(s.spec, KernelUses(s.spec)); !tilings.ok()) {
    nb.Fail(std::string(tilings.message()), s.x);
    return;
  }
  Permutation p = PermuteByExpert(nb, s.x, s.router.ids, s.spec.model.num_experts());
  DeclareGroupRows(p.group_sizes.op, GroupRows::kAssignments, 0);
  Tensor rows = p.rows;
  if (s.router.input_scale.op != nullptr) {
    // Llama 4: each sorted row is scaled by its assignment's σ(v).
    Tensor flat = nb.Reshape(s.router.input_scale, "M", {rows.size('M')});
    Tensor scale = nb.Convert(nb.GatherRows(flat, p.sort_idx), rows.type());
    s.saved["kernel.scale"] = scale;
    rows = nb.Mul(rows, scale);
  }
  s.saved[kRows] = rows;
  SavePermutation(s, p);
}

void SortedKernelBackend::Combine(StepState& s) const {
  NamedBuilder& nb = s.nb;
  Permutation p = LoadPermutation(s);
  Tensor r = Unpermute(nb, s.saved[kOut], p, s.x.size('T'), s.router.ids.size('K'));
  s.saved["kernel.r"] = r;
  s.y_routed = WeightedCombine(nb, r, s.router.weights, s.x.type());
}

void SortedKernelBackend::CombineBwd(StepState& s) const {
  NamedBuilder& nb = s.nb;
  auto [dr, dw] = WeightedCombineGrad(nb, s.saved["kernel.r"], s.router.weights, s.dy);
  s.d_weights = dw;
  s.saved[kDOut] = UnpermuteGrad(nb, dr, LoadPermutation(s));
}

void SortedKernelBackend::ExpertsBwdWithKernels(StepState& s, Tensor h0, Tensor h1, Tensor a) {
  NamedBuilder& nb = s.nb;
  const KernelRows rows = KernelRowsOf(s.spec);
  const int64_t groups = s.wo.size('E');
  // Copies, not references: the kernel calls add padded operands to s.saved.
  const Tensor gs = s.saved[kGroupSizes];
  const Tensor d_out = s.saved[kDOut];
  const Tensor x_rows = s.saved[kRows];
  // out = gmm(a, wo): da = gmm(d_out, wo, transpose_rhs) (megablox's dlhs), d_wo = tgmm(aᵀ, d_out).
  Tensor da = GmmCall(s, d_out, s.wo, gs, "wo.dlhs", /*transpose_rhs=*/true, rows);
  s.d_wo = TgmmCall(s, a, d_out, gs, "wo.drhs", rows, groups, s.wo.type());
  auto [dh0, dh1] = GatedActivationGrad(nb, s.spec.model.proto().activation(), h0, h1, da);
  s.d_wi_0 = TgmmCall(s, x_rows, dh0, gs, "wi.drhs", rows, groups, s.wi_0.type());
  s.d_wi_1 = TgmmCall(s, x_rows, dh1, gs, "wi.drhs", rows, groups, s.wi_1.type());
  s.saved[kDRows] =
      nb.Add(GmmCall(s, dh0, s.wi_0, gs, "wi.dlhs", /*transpose_rhs=*/true, rows),
             GmmCall(s, dh1, s.wi_1, gs, "wi.dlhs", /*transpose_rhs=*/true, rows));
}

void SortedKernelBackend::PermuteBwd(StepState& s) const {
  NamedBuilder& nb = s.nb;
  Permutation p = LoadPermutation(s);
  Tensor d_rows = s.saved[kDRows];
  if (s.router.input_scale.op != nullptr) {
    // rows = x[token]·scale: dscale = Σ_D d_rows·x[token], back in assignment order (TK).
    Tensor d_scale = nb.Reduce(
        nb.Mul(nb.Convert(d_rows, PrimitiveType::kF32), nb.Convert(p.rows, PrimitiveType::kF32)),
        "D");
    Tensor in_order = nb.GatherRows(d_scale, p.inverse);
    s.d_input_scale = nb.Reshape(in_order, "TK", {s.x.size('T'), s.router.ids.size('K')});
    d_rows = nb.Mul(d_rows, s.saved["kernel.scale"]);
  }
  s.dx_routed = PermuteGrad(nb, d_rows, p, s.x.size('T'));
}

}  // namespace perfsim
