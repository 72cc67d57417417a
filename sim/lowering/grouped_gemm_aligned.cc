// grouped_gemm_aligned: the GPU-style TransformerEngine JAX MoEBlock (PR #2912;
// shared/reference/backends.md 1d; transformer_engine/jax/moe.py `_body_fwd`, permutation.py):
// a global permute whose expert groups are padded to multiples of align_size A, expert
// parallelism by ragged all-to-all with a receive buffer sized for that padding, wi_0 and wi_1
// fused into one grouped GEMM, then wo. The grouped GEMMs are ragged-dots (cuBLASLt grouped
// GEMM: every row of a group is computed, no tile padding of its own). Dropless.
//
// Forward, per device (T_l tokens, E_l = E/EP, R_pre = T_l·K + E·(A−1), aligned_permute.h):
//   permute   PURE_JAX dispatch with alignment: sort [ids, padding slots], rows [R_pre, D]
//             (zero padding rows; ·σ(v) per row for Llama 4); gs = cnt + pad_needed [E]  (#5)
//   dispatch  (ep > 1) traffic = all_gather_ep(gs summed per shard) [EP, EP]             (#6)
//             x_recv = ragged_all_to_all(rows, zeros[R_recv, D], params of traffic),
//             R_recv = (B/DP)·S·K + E·(A−1) = EP·T_l·K + E·(A−1)                        (#7)
//             local permute (chunk sort expert-major) with all_gather_ep(gs) [EP, E];
//             local gs [E_l] = Σ over sources (sums of multiples of A)                  (#8)
//   experts   wi = concat(wi_0, wi_1, axis=-1) [E_l, D, 2F] ("EDN")
//             h = grouped_gemm(rows, wi) [R, 2F]; h0, h1 = split(h); a = act(h0, h1)   (#9-10)
//             out = grouped_gemm(a, wo) [R, D]                                         (#11)
//   combine   (ep > 1) local unpermute; ragged_all_to_all back into zeros[R_pre, D] with
//             the params of trafficᵀ                                                   (#12)
//             y = Σ_k w[t,k]·out[row of (t,k)] (f32), reading only real rows           (#13)
// TE initialises both ragged_all_to_all outputs with zeros (backends.md 1b), so the buffers
// here are zeros too. Rows of a buffer past Σ gs are never read by a grouped GEMM (ragged-dot
// leaves them zero) and never unpermuted, and padding rows inside a group are zero rows, so no
// padding reaches y or a gradient (aligned_permute.h).
//
// Backward (TE: per grouped GEMM a dgrad grouped_gemm(dy, W, contracting ((1,),(2,))) and a
// wgrad grouped_gemm(x, dy, contracting ((0,),(0,))); each ragged_all_to_all transposed):
//   combine_bwd  dr = dy ⊗ w, dw = Σ_D r·dy; d_out = dr on the real rows, 0 on padding;
//                (ep > 1) transposed combine exchange, local permute
//   experts_bwd  da = dgrad(d_out, wo); d_wo = wgrad(a, d_out); (dh0, dh1) = act'(da);
//                dh = concat(dh0, dh1) [R, 2F]; d_wi = wgrad(rows, dh) [E_l, D, 2F] split
//                into d_wi_0, d_wi_1; d_rows = dgrad(dh, wi)
//   dispatch_bwd (ep > 1) local unpermute, transposed dispatch exchange into zeros[R_pre, D]
//   permute_bwd  dx = scatter-add of d_rows by token (padding rows go to a dropped sentinel
//                row); Llama 4: d_scale = Σ_D d_rows·x[token]
// Tensor parallelism is not part of TE #2912's MoEBlock (weights are whole inside its
// shard_map), so tp > 1 is refused.
#include "absl/strings/str_cat.h"
#include "sim/lowering/aligned_permute.h"
#include "sim/lowering/backends_internal.h"
#include "sim/lowering/collectives.h"
#include "sim/lowering/ep_dispatch.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/permute.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr char kDispatch[] = "gga.dispatch";
constexpr char kCombine[] = "gga.combine";

int64_t AlignOf(const StepSpec& spec) { return spec.knobs.align_size; }

// Rows of the permuted buffer before the dispatch exchange: T_l·K + E·(A−1).
int64_t PreExchangeRows(const StepSpec& spec) {
  return AlignedPermuteRows(spec.tokens_per_device() * spec.model.experts_per_token(),
                            spec.model.num_experts(), AlignOf(spec));
}

// TE's recv_buffer_rows = (B/DP)·S·K + E·(A−1) (known_bugs.md #10): every token of the ep group
// (EP·T_l, which is B·S/(DP·FSDP): TE's DP counts every batch axis) may come here, plus each
// expert's alignment padding.
int64_t ReceiveRows(const StepSpec& spec) {
  const int64_t group_tokens = spec.tokens_per_device() * spec.parallelism.ep;
  return AlignedPermuteRows(group_tokens * spec.model.experts_per_token(), spec.model.num_experts(),
                            AlignOf(spec));
}

void SavePermutation(StepState& s, const AlignedPermutation& p) {
  s.saved["gga.slot"] = p.slot;
  s.saved["gga.inverse"] = p.inverse;
  s.saved["gga.token"] = p.token;
  s.saved["gga.x_rows"] = p.rows;
  s.saved["gga.counts"] = p.counts;
  s.saved["gga.group_sizes"] = p.group_sizes;
}

AlignedPermutation LoadPermutation(StepState& s) {
  return AlignedPermutation{s.saved["gga.slot"],   s.saved["gga.inverse"],
                            s.saved["gga.token"],  s.saved["gga.x_rows"],
                            s.saved["gga.counts"], s.saved["gga.group_sizes"]};
}

class GroupedGemmAligned final : public MoeBackend {
 public:
  absl::string_view name() const override { return "grouped_gemm_aligned"; }
  absl::string_view description() const override {
    return "GPU-style (TE): global permute with align_size padding, ragged all-to-all, fused "
           "wi_0|wi_1 grouped GEMM, wo grouped GEMM";
  }

  // Without alignment (the default A = 0) validate would never exercise the padding: it runs
  // A = 8 unless --align-size says otherwise.
  std::string PrepareForValidation(StepSpec& spec) const override {
    if (spec.knobs.align_size > 0) return "";
    spec.knobs.align_size = 8;
    return "align_size 8 (validate's default for this backend)";
  }

  absl::Status Supports(const StepSpec& spec) const override {
    if (spec.parallelism.tp != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected tp=1 (TE's MoEBlock shards tokens over (ep, dp) and experts over ep, never "
          "F); got ",
          ParallelismToString(spec.parallelism)));
    }
    if (spec.knobs.align_size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected align_size >= 0; got ", spec.knobs.align_size));
    }
    // The receive buffer adds E·(A−1) padding rows to every token of the ep group: checked
    // before any shape is built from it.
    PERFSIM_RETURN_IF_ERROR(spec.ValidateLimits());
    constexpr absl::string_view kBuffer =
        "bytes of the aligned receive buffer [EP*T_l*K + E*(A-1), D] in f32";
    PERFSIM_ASSIGN_OR_RETURN(const int64_t buffer_bytes,
                             CheckedProduct(kBuffer, {ReceiveRows(spec), spec.model.d_model(), 4}));
    PERFSIM_RETURN_IF_ERROR(CheckAtMost(kBuffer, buffer_bytes, kMaxStepBufferBytes));
    return absl::OkStatus();
  }

  // ep = the largest divisor of E that divides the device count; the rest data parallel.
  Parallelism DefaultParallelism(int64_t devices, const StepSpec& spec) const override {
    int64_t ep = 1;
    for (int64_t e = 1; e <= devices; ++e) {
      if (devices % e == 0 && spec.model.num_experts() % e == 0) ep = e;
    }
    return Parallelism{.dp = devices / ep, .ep = ep};
  }

  void Permute(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    AlignedPermutation p = PermuteByExpertAligned(nb, s.x, s.router.ids, s.spec.model.num_experts(),
                                                  AlignOf(s.spec), PreExchangeRows(s.spec));
    DeclareGroupRows(p.group_sizes.op, GroupRows::kAlignedAssignments, AlignOf(s.spec));
    Tensor rows = p.rows;
    if (s.router.input_scale.op != nullptr) {
      // Llama 4: each row is scaled by its assignment's σ(v) (0 on padding rows) before it
      // travels.
      Tensor scale = nb.Convert(PerSortedRow(nb, s.router.input_scale, p), rows.type());
      s.saved["gga.scale"] = scale;
      rows = nb.Mul(rows, scale);
    }
    s.saved["gga.rows"] = rows;
    SavePermutation(s, p);
  }

  void Dispatch(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& gs = s.saved["gga.group_sizes"];
    if (s.spec.parallelism.ep == 1) {
      s.saved["gga.x_local"] = s.saved["gga.rows"];
      s.saved["gga.local_group_sizes"] = gs;
      return;
    }
    const int64_t ep = s.spec.parallelism.ep, e = s.spec.model.num_experts();
    const int64_t d = s.x.size('D'), rows = ReceiveRows(s.spec);
    Tensor shard = MeshIndex(s, MeshAxis::kEp);
    Tensor traffic = TrafficMatrix(s, gs);
    RaggedExchange dispatch = ExchangeRows(
        s, s.saved["gga.rows"], nb.Full(s.x.type(), "MD", {rows, d}, 0),
        DispatchParams(nb, traffic, shard), RaggedBuffer::RECEIVED_EXPERT_ROWS, AlignOf(s.spec));
    Tensor global_sizes = AllGather(s, nb.Reshape(gs, "XE", {1, e}), 'X', {MeshAxis::kEp});
    LocalPermutation local = LocalPermute(nb, global_sizes, shard, e / ep, rows);
    DeclareGroupRows(local.group_sizes.op, GroupRows::kReceivedRows, AlignOf(s.spec));
    s.saved["gga.traffic"] = traffic;
    s.saved["gga.local_sort"] = local.sort_idx;
    s.saved["gga.local_inverse"] = local.inverse;
    s.saved["gga.local_group_sizes"] = local.group_sizes;
    s.saved["gga.x_local"] = nb.GatherRows(dispatch.result, local.sort_idx);
    SaveExchange(s, kDispatch, dispatch);
  }

  void Experts(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& gs = s.saved["gga.local_group_sizes"];
    const Tensor& rows = s.saved["gga.x_local"];
    const int64_t m = rows.size('M'), f = s.wi_0.size('F');
    Tensor wi = nb.Rename(nb.Concatenate({s.wi_0, s.wi_1}, 'F'), "EDN");
    Tensor h = nb.GroupedForward(rows, wi, gs);  // MN
    Tensor h0 = nb.Rename(nb.Slice(h, {0, 0}, {m, f}), "MF");
    Tensor h1 = nb.Rename(nb.Slice(h, {0, f}, {m, 2 * f}), "MF");
    Tensor a = GatedActivation(nb, s.spec.model.proto().activation(), h0, h1);
    s.saved["gga.wi"] = wi;
    s.saved["gga.h0"] = h0;
    s.saved["gga.h1"] = h1;
    s.saved["gga.a"] = a;
    s.saved["gga.out"] = nb.GroupedForward(a, s.wo, gs);
  }

  void Combine(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const int64_t t = s.x.size('T'), k = s.router.ids.size('K');
    Tensor out = s.saved["gga.out"];
    if (s.spec.parallelism.ep > 1) {
      Tensor y_recv = nb.GatherRows(out, s.saved["gga.local_inverse"]);
      RaggedExchange combine = ExchangeRows(
          s, y_recv, nb.Full(y_recv.type(), "MD", {PreExchangeRows(s.spec), y_recv.size('D')}, 0),
          CombineParams(nb, s.saved["gga.traffic"], MeshIndex(s, MeshAxis::kEp)),
          RaggedBuffer::RECEIVED_TOKEN_ROWS, AlignOf(s.spec));
      SaveExchange(s, kCombine, combine);
      out = combine.result;
    }
    Tensor r = UnpermuteAligned(nb, out, LoadPermutation(s), t, k);
    s.saved["gga.r"] = r;
    s.y_routed = WeightedCombine(nb, r, s.router.weights, s.x.type());
  }

  void CombineBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    auto [dr, dw] = WeightedCombineGrad(nb, s.saved["gga.r"], s.router.weights, s.dy);
    s.d_weights = dw;
    Tensor d_out = UnpermuteAlignedGrad(nb, dr, LoadPermutation(s));
    if (s.spec.parallelism.ep > 1) {
      Tensor d_y_recv = ExchangeRowsTranspose(s, LoadExchange(s, kCombine), d_out,
                                              RaggedBuffer::RECEIVED_EXPERT_ROWS, AlignOf(s.spec));
      d_out = nb.GatherRows(d_y_recv, s.saved["gga.local_sort"]);
    }
    s.saved["gga.d_out"] = d_out;
  }

  void ExpertsBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& gs = s.saved["gga.local_group_sizes"];
    const Tensor& d_out = s.saved["gga.d_out"];
    const Tensor& rows = s.saved["gga.x_local"];
    Tensor da = nb.GroupedDlhs(d_out, s.wo, gs);
    s.d_wo = nb.GroupedDrhs(s.saved["gga.a"], d_out, gs);
    auto [dh0, dh1] = GatedActivationGrad(nb, s.spec.model.proto().activation(), s.saved["gga.h0"],
                                          s.saved["gga.h1"], da);
    Tensor dh = nb.Rename(nb.Concatenate({dh0, dh1}, 'F'), "MN");
    Tensor d_wi = nb.GroupedDrhs(rows, dh, gs);  // EDN
    const int64_t e = d_wi.size('E'), d = d_wi.size('D'), f = s.wi_0.size('F');
    s.d_wi_0 = nb.Rename(nb.Slice(d_wi, {0, 0, 0}, {e, d, f}), "EDF");
    s.d_wi_1 = nb.Rename(nb.Slice(d_wi, {0, 0, f}, {e, d, 2 * f}), "EDF");
    s.saved["gga.d_x_local"] = nb.GroupedDlhs(dh, s.saved["gga.wi"], gs);
  }

  void DispatchBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Tensor d_rows = s.saved["gga.d_x_local"];
    if (s.spec.parallelism.ep > 1) {
      Tensor d_x_recv = nb.GatherRows(d_rows, s.saved["gga.local_inverse"]);
      d_rows = ExchangeRowsTranspose(s, LoadExchange(s, kDispatch), d_x_recv,
                                     RaggedBuffer::RECEIVED_TOKEN_ROWS, AlignOf(s.spec));
    }
    s.saved["gga.d_rows"] = d_rows;
  }

  void PermuteBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    AlignedPermutation p = LoadPermutation(s);
    Tensor d_rows = s.saved["gga.d_rows"];
    if (s.router.input_scale.op != nullptr) {
      // rows = x[token]·scale: dscale = Σ_D d_rows·x[token], read back at the real rows (TK).
      Tensor d_scale = nb.Reduce(
          nb.Mul(nb.Convert(d_rows, PrimitiveType::kF32), nb.Convert(p.rows, PrimitiveType::kF32)),
          "D");
      Tensor in_order = nb.GatherRows(d_scale, p.inverse);
      s.d_input_scale = nb.Reshape(in_order, "TK", {s.x.size('T'), s.router.ids.size('K')});
      d_rows = nb.Mul(d_rows, s.saved["gga.scale"]);
    }
    s.dx_routed = PermuteAlignedGrad(nb, d_rows, p, s.x.size('T'));
  }
};

}  // namespace

const MoeBackend& GroupedGemmAlignedBackend() {
  static const GroupedGemmAligned backend;
  return backend;
}

}  // namespace perfsim
