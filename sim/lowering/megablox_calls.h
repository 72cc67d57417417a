// What the two kernel backends (megablox_gmm, fused_expert_ffn) share: grouped-matmul kernel
// calls (perfsim.gmm / perfsim.tgmm, sim/interp/custom_calls.h) on expert-sorted rows padded to
// the row tile, the rule that turns the spec's tilings into each call's tiling, and the
// data-parallel argsort pipeline around the experts. Include only from sim/lowering.
//
//   KernelRows rows = KernelRowsOf(spec);               // nano, 1 device, wi.fwd.tm 24:
//                                                       // m = 128, tm = 24, m_p = 144
//   Tensor h0 = GmmCall(s, x_rows, wi_0, gs, "wi.fwd", /*transpose_rhs=*/false,
//                       rows);                          // MF, m rows; config tiling clamped
//
// Tiling rule (documented once here, used by both backends). m = T_l·K sorted rows.
//   - The wi forward row tile, clamped to the rows, tm_f = min(wi.fwd.tm, m), fixes the padded
//     row count m_p = ⌈m / tm_f⌉·tm_f. MaxText's gmm() pads the rows of BOTH the wi and the wo
//     calls to a multiple of wi_tile_fwd_batch_seq (backends.md 1a.5); the min() is the clamp
//     that keeps the 512-row default from padding a test model's 16..128 rows up to 512.
//   - A gmm/tgmm call runs (tm', tk, tn) with tm' = min(tm, m_p): tk and tn stay as configured
//     even where they exceed the kernel's contraction k or output n (1a.5's 9-tuple roles:
//       wi fwd (m, D, F)   wi dlhs (m, F, D)   wi drhs (m, D, F)
//       wo fwd (m, F, D)   wo dlhs (m, D, F)   wo drhs (m, F, D)),
//     because megablox allocates every block at its full tile size (backends.md 1b "VMEM
//     bytes"; known_bugs.md #23: tn = 1024 > n = 512 is what overflows v5p's 16 MiB in f32), so
//     the fit check (sim/fit/module_fit.h) must see the tiles as configured. Only the ragged_dot
//     path clamps `min(tile, dim)` (backends.md 1a), and the fused FFN kernel, which is
//     perfsim's own (ClampTiling). The row tile shrinks to small row counts (the min() above)
//     instead of padding 16..128 test rows up to 512: for m ≥ tm, the case of real models, it
//     is MaxText's tiling exactly. The backend_config carries (tm', tk, tn).
//   - megablox requires m % tm == 0 for every call (ValueError otherwise; k and n may be
//     ragged). tm' must divide m_p, else the lowering fails naming the kernel, e.g.
//     "wi.dlhs tiling (48, 1024, 1024): expected tm dividing the padded row count 72 ...".
//
// Padding (MaxText gmm()): each call pads its lhs with zero rows up to m_p (jax.lax.pad), runs
// the kernel and slices the result back to m rows. The padding rows belong to no group, so a
// gmm leaves them unwritten — poisoned (NaN) in the interpreter — and the slice drops them
// before anything reads them; a tgmm's padded operands are zeros and outside every group.
#ifndef PERFSIM_SIM_LOWERING_MEGABLOX_CALLS_H_
#define PERFSIM_SIM_LOWERING_MEGABLOX_CALLS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "sim/lowering/lowering.h"

namespace perfsim {

struct KernelRows {
  int64_t rows = 0;         // m = T_l·K
  int64_t tm = 0;           // the wi forward row tile, clamped: min(wi.fwd.tm, m)
  int64_t padded_rows = 0;  // m_p = ⌈m / tm⌉·tm
};

// One kernel call a backend makes: its name in messages ("wi.dlhs"), the spec's tiling and
// the call's contraction k and output n.
struct KernelUse {
  std::string name;
  GmmTiling tiling;
  int64_t k = 0;
  int64_t n = 0;
};

// The rows of `spec` (m_p from a positive wi.fwd.tm; CheckKernelTilings says whether it is).
KernelRows KernelRowsOf(const StepSpec& spec);

// OK when every tile is positive and every clamped tm divides m_p; otherwise InvalidArgument
// naming the first kernel that breaks the rule.
absl::Status CheckKernelTilings(const StepSpec& spec, const std::vector<KernelUse>& uses);

// The tiling a gmm/tgmm call runs: (min(tm, padded_rows), tk, tn) (the rule above).
GmmTiling GmmCallTiling(const GmmTiling& tiling, int64_t padded_rows);
// Every tile clamped to its problem, min(tm, m_p), min(tk, k), min(tn, n): the fused FFN
// kernel's rule (fused_expert_ffn.cc) and the row-tile check's.
GmmTiling ClampTiling(const GmmTiling& tiling, int64_t padded_rows, int64_t k, int64_t n);

// backend_config JSON of the kernels: {"tiling":[tm,tk,tn],"transpose_rhs":false,
// "group_offset":0} and {"tiling":[tm,tk,tn],"group_offset":0}.
std::string GmmBackendConfig(const GmmTiling& tiling, bool transpose_rhs);
std::string TgmmBackendConfig(const GmmTiling& tiling);

// t (m rows) with zero rows appended up to `padded_rows` (jax.lax.pad); t itself when it has
// that many. One pad per tensor (kept in s.saved): the calls that share an operand share its
// padded copy, as XLA's CSE leaves MaxText's per-call pads.
Tensor PadRows(StepState& s, const Tensor& t, int64_t padded_rows);
// The first `count` rows; t itself when it has that many.
Tensor FirstRows(NamedBuilder& nb, const Tensor& t, int64_t count);

// perfsim.gmm: lhs MK (m rows) × rhs EKN (ENK with transpose_rhs) -> MN in lhs's type,
// through the padded rows. `role` names the spec's tiling knob ("wi.fwd", ..., "wo.drhs":
// TilingKnob in step_spec.h); the call carries GmmCallTiling of it (CheckKernelTilings
// checked it) and an annotation whose kernel config gives the role back (KernelRoleOf in
// annotations.h), so the static check can verify that each tile sits on its own dimension (known_bugs.md #4).
// With spec.knobs.grouped_matmul other than kNative the call is the grouped matmul it computes
// instead (NamedBuilder::GroupedForward / GroupedDlhs, no row padding), over the first E_l
// groups when group_sizes counts more (megablox's G_local < G: the other rows are zero).
Tensor GmmCall(StepState& s, const Tensor& lhs, const Tensor& rhs, const Tensor& group_sizes,
               absl::string_view role, bool transpose_rhs, const KernelRows& rows);

// perfsim.tgmm: dw[e] = lhs[rows of e]ᵀ · dy[rows of e] for lhs MK, dy MN -> EKN of type
// `out` (the weight's), with the lhs passed transposed [K, m_p] as megablox takes it; `role`
// as for GmmCall, and likewise NamedBuilder::GroupedDrhs for the other grouped-matmul forms.
Tensor TgmmCall(StepState& s, const Tensor& lhs, const Tensor& dy, const Tensor& group_sizes,
                absl::string_view role, const KernelRows& rows, int64_t num_groups,
                PrimitiveType out);

// The data-parallel argsort pipeline of sparse_ragged_dot (backends.md 1a.3 without the
// shard_map; Llama 4's input scale applied per sorted row), with the experts left to the
// subclass. Stages read and write these StepState::saved keys:
//   kRows        MD  sorted rows (scaled for sigmoid_prescale), written by Permute
//   kGroupSizes  E   s32 rows per expert, written by Permute
//   kOut         MD  expert outputs in sorted order: the subclass's Experts writes it
//   kDOut        MD  their cotangent, written by CombineBwd
//   kDRows       MD  the cotangent of kRows: the subclass's ExpertsBwd writes it
class SortedKernelBackend : public MoeBackend {
 public:
  static constexpr char kRows[] = "kernel.rows";
  static constexpr char kGroupSizes[] = "kernel.group_sizes";
  static constexpr char kOut[] = "kernel.out";
  static constexpr char kDOut[] = "kernel.d_out";
  static constexpr char kDRows[] = "kernel.d_rows";

  // ep = tp = 1 (data parallel, with or without fsdp).
  absl::Status Supports(const StepSpec& spec) const override;
  // DataParallelWithFsdp (lowering.h).
  Parallelism DefaultParallelism(int64_t devices, const StepSpec& spec) const override {
    return DataParallelWithFsdp(devices, spec);
  }
  // Checks the tilings of KernelUses first: a tiling megablox would refuse fails the build
  // here, before any instruction (so no later stage runs).
  void Permute(StepState& s) const override;
  void Combine(StepState& s) const override;
  void CombineBwd(StepState& s) const override;
  void PermuteBwd(StepState& s) const override;

 protected:
  // Every kernel call the backend makes for spec.phase.
  virtual std::vector<KernelUse> KernelUses(const StepSpec& spec) const = 0;

  // The wi and wo kernels of the backward (wo.dlhs, wo.drhs, wi.dlhs, wi.drhs) with their k, n.
  static std::vector<KernelUse> BackwardKernelUses(const StepSpec& spec);

  // The expert backward on gmm (dlhs) and tgmm (drhs) from the forward's h0, h1 and
  // a = act(h0, h1) (MF, m rows): writes d_wo, d_wi_0, d_wi_1 and kDRows. Tensors are taken
  // by value: the kernel calls add to s.saved, whose flat_hash_map moves its values.
  static void ExpertsBwdWithKernels(StepState& s, Tensor h0, Tensor h1, Tensor a);
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_MEGABLOX_CALLS_H_
