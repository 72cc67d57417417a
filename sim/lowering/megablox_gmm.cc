// megablox_gmm: MaxText's default sparse path on one data-parallel device (backends.md 1a.3
// without the shard_map, 1a.5, 1b; maxtext src/maxtext/layers/moe.py `sparse_matmul` with
// megablox=True, kernels/megablox/backend.py): the argsort permutation of sparse_ragged_dot,
// with every grouped matmul a megablox kernel custom-call (perfsim.gmm / perfsim.tgmm) carrying
// its (tm, tk, tn) tiling from spec.knobs (wi for wi_0 and wi_1, wo for wo; MaxText's 9-tuple:
// fwd, dlhs, drhs). Dropless. Data parallel only (fsdp too: the driver gathers the weights).
//
// Forward (m = T_l·K sorted rows, padded to m_p by MaxText's gmm(); megablox_calls.h gives the
// tiling clamp and the padding):
//   permute   argsort of the expert ids, rows = x[token] (·σ(v) for Llama 4), gs = bincount
//   experts   h0 = gmm(rows, wi_0)  h1 = gmm(rows, wi_1)       tiling wi.fwd = (m, D, F)
//             a = act(h0, h1)
//             out = gmm(a, wo)                                   tiling wo.fwd = (m, F, D)
//             each gmm: pad lhs to m_p with zero rows, kernel, slice the result to m rows (the
//             m_p − m padding rows are never written, so poisoned, and never read)
//   combine   y = Σ_k w[t,k]·out[row of (t,k)] (f32)
//
// Backward (megablox ops.py VJP: dlhs = gmm(dy, rhs, transpose_rhs = not transpose_rhs),
// drhs = tgmm(lhsᵀ, dy); the pad/slice transpose into slice/pad-with-zeros):
//   combine_bwd  dr = dy ⊗ w, dw = Σ_D r·dy; d_out = dr in expert order
//   experts_bwd  da = gmm(d_out, wo, transpose_rhs)    wo.dlhs = (m, D, F)
//                d_wo = tgmm(aᵀ, d_out)                 wo.drhs = (m, F, D)
//                dh0, dh1 = act'(h0, h1)·da
//                d_wi_j = tgmm(rowsᵀ, dh_j)             wi.drhs = (m, D, F)
//                d_rows = Σ_j gmm(dh_j, wi_j, transpose_rhs)   wi.dlhs = (m, F, D)
//   permute_bwd  dx = scatter-add of d_rows by token (Llama 4: d_scale = Σ_D d_rows·x[token])
#include "absl/strings/str_cat.h"
#include "sim/lowering/backends_internal.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/megablox_calls.h"

namespace perfsim {
namespace {

class MegabloxGmm final : public SortedKernelBackend {
 public:
  static constexpr int64_t kValidationRowTile = 24;

  absl::string_view name() const override { return "megablox_gmm"; }
  absl::string_view description() const override {
    return "argsort permutation, grouped matmuls as megablox gmm/tgmm kernels with (tm,tk,tn) "
           "tilings";
  }

  // With MaxText's default tiles every row tile shrinks to the rows of a test-sized model, so
  // no call would pad. validate's sweep uses row tiles of 24 instead (when the spec still has
  // the defaults): 24 divides none of nano's 128, 64 or 32 sorted rows (K = 2 on 1, 2, 4
  // devices; K = 1 halves them), so the calls pad to 144, 72, 48 and the poisoned padding rows
  // must stay out of every result. tk and tn keep MaxText's values.
  std::string PrepareForValidation(StepSpec& spec) const override {
    const GmmTiling maxtext{512, 1024, 1024};
    for (const ProjectionTilings* p : {&spec.knobs.wi, &spec.knobs.wo}) {
      for (const GmmTiling* t : {&p->fwd, &p->dlhs, &p->drhs}) {
        if (t->tm != maxtext.tm || t->tk != maxtext.tk || t->tn != maxtext.tn) return "";
      }
    }
    for (ProjectionTilings* p : {&spec.knobs.wi, &spec.knobs.wo}) {
      for (GmmTiling* t : {&p->fwd, &p->dlhs, &p->drhs}) t->tm = kValidationRowTile;
    }
    return absl::StrCat("row tiles ", kValidationRowTile,
                        " (validate's default for this backend: the kernels pad the rows)");
  }

  void Experts(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const KernelRows rows = KernelRowsOf(s.spec);
    const Tensor gs = s.saved[kGroupSizes];
    const Tensor x_rows = s.saved[kRows];
    Tensor h0 = GmmCall(s, x_rows, s.wi_0, gs, "wi.fwd", /*transpose_rhs=*/false, rows);
    Tensor h1 = GmmCall(s, x_rows, s.wi_1, gs, "wi.fwd", /*transpose_rhs=*/false, rows);
    Tensor a = GatedActivation(nb, s.spec.model.proto().activation(), h0, h1);
    s.saved["megablox.h0"] = h0;
    s.saved["megablox.h1"] = h1;
    s.saved["megablox.a"] = a;
    s.saved[kOut] = GmmCall(s, a, s.wo, gs, "wo.fwd", /*transpose_rhs=*/false, rows);
  }

  void ExpertsBwd(StepState& s) const override {
    ExpertsBwdWithKernels(s, s.saved["megablox.h0"], s.saved["megablox.h1"], s.saved["megablox.a"]);
  }

 protected:
  std::vector<KernelUse> KernelUses(const StepSpec& spec) const override {
    const BackendKnobs& k = spec.knobs;
    const int64_t d = spec.model.d_model(), f = spec.ffn_per_device();
    std::vector<KernelUse> uses = {{"wi.fwd", k.wi.fwd, d, f}, {"wo.fwd", k.wo.fwd, f, d}};
    if (spec.phase == Phase::kForwardBackward) {
      for (KernelUse& use : BackwardKernelUses(spec)) uses.push_back(std::move(use));
    }
    return uses;
  }
};

}  // namespace

const MoeBackend& MegabloxGmmBackend() {
  static const MegabloxGmm backend;
  return backend;
}

}  // namespace perfsim
