// ep_ragged_a2a: MaxText's expert-parallel sparse path, the shard_map body of
// `sparse_matmul` (shared/reference/backends.md 1a.3, steps 1-20; maxtext
// src/maxtext/layers/moe.py `_moe_body`, `get_all_to_all_params`, `local_permute`,
// `get_ragged_buffer_size`), with the grouped matmuls as jax.lax.ragged_dot (the megablox=False
// path; megablox_gmm covers the kernels). Tokens are split over (dp, ep), experts over ep, F
// over tp. Dropless by default: the receive buffer holds the worst case (ep_dispatch.h).
// With ragged_buffer_factor f > 0 the buffer is MaxText's R = int(T_l·K·f) rows and the traffic
// is truncated to it (_truncate_matrix, backends.md 1a.3): a receiver keeps its senders' chunks
// in shard order until R rows are full, and each sender's chunk is cut after its first rows
// (in expert order); the assignments cut are dropped. Their combine rows are zero: the combine
// receive buffer is zeros with f > 0 (with jax.lax.empty they would be garbage, the class of
// known_bugs.md #13; backends.md does not say which MaxText pairs with f > 0), so a dropped
// assignment contributes nothing to y, as a capacity drop does, and nothing to the gradients.
//
// Forward, per device (T_l tokens, E_l = E/EP local experts, F_l = F/TP):
//   permute   ids → argsort (stable) → rows = x[token] in expert order [T_l·K, D] (·σ(v) per
//             row for Llama 4); gs = bincount(ids, E)                              steps 3-6
//   dispatch  traffic = all_gather_ep(gs.reshape(EP, E_l).sum(1))  [EP, EP]        steps 7-8
//             (input_offsets, send_sizes, output_offsets, recv_sizes) = a2a params of
//             traffic for my shard s                                              step 9
//             x_recv = ragged_all_to_all(rows, empty[R, D], ...),
//                      R = T_l·K·min(EP, E/K)                                     step 10
//             global_gs = all_gather_ep(gs)  [EP, E]                              step 11
//             local permute: sort the buffer expert-major → x_local [R, D], lgs [E_l] step 12
//   experts   h_j = ragged_dot(x_local, wi_j, lgs) [R, F_l]; a = act(h0, h1);
//             out = ragged_dot(a, wo, lgs) [R, D] (partial over tp)           steps 14-16
//   combine   tp > 1: out = psum_scatter_tp(out, D) [R, D/TP]                     step 17
//             y_recv = out[argsort(local sort)] (local unpermute)                 step 18
//             back = ragged_all_to_all(y_recv, empty[T_l·K, D/TP], a2a params of trafficᵀ)
//                                                                                  step 19
//             y = Σ_k w[t,k]·back[row of (t,k)] (f32 weight sum)                  step 20
//             tp > 1: y = all_gather_tp(y, D)  [T_l, D]
// The last all-gather is ours: MaxText's out_spec leaves y split over tensor on D; the driver
// (lowering.cc) gives every backend's y the spec "TD split over (dp, ep), replicated over tp",
// so the D/TP slices are gathered here. Rows of x_recv past the valid count are uninitialised
// (AllocateBuffer, NaN in the interpreter): the local sort moves them to the end, ragged_dot
// defines the rows past Σ lgs as zero without reading them, the local unpermute returns them to
// the tail, and the combine sends only the valid prefix, so no mask is needed and none is
// emitted (MaxText masks only for mlp_bias, which perfsim does not model).
//
// Backward (jax.grad of the above, lowered explicitly):
//   combine_bwd  dy_l = dy[:, tp slice]; dr = dy_l ⊗ w; dw = Σ_D back·dy_l (psum over tp: D
//                is split); d_back = dr in expert order;
//                d_y_recv = transposed combine ragged_all_to_all (JAX's rule: offsets swapped
//                through an all-to-all, a zeros receive buffer); d_out = d_y_recv[local sort];
//                tp > 1: all_gather_tp(d_out, D) (transpose of the psum_scatter)
//   experts_bwd  da = ragged_dot dlhs(d_out, wo); d_wo = drhs(a, d_out); act';
//                d_wi_j = drhs(x_local, dh_j); d_x_local = Σ_j dlhs(dh_j, wi_j)
//   dispatch_bwd d_x_recv = d_x_local[argsort(local sort)]; d_rows = transposed dispatch
//                ragged_all_to_all into zeros[T_l·K, D]
//   permute_bwd  dx = scatter-add of d_rows by token (Llama 4: d_scale = Σ_D d_rows·x[token]);
//                psum over tp of dx and d_scale (x is replicated over tensor, F is split).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "sim/lowering/backends_internal.h"
#include "sim/lowering/collectives.h"
#include "sim/lowering/ep_dispatch.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/permute.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr char kDispatch[] = "ep.dispatch";
constexpr char kCombine[] = "ep.combine";

void SavePermutation(StepState& s, const Permutation& p) {
  s.saved["ep.sort_idx"] = p.sort_idx;
  s.saved["ep.inverse"] = p.inverse;
  s.saved["ep.token"] = p.token;
  s.saved["ep.sorted_experts"] = p.sorted_experts;
  s.saved["ep.x_rows"] = p.rows;
  s.saved["ep.group_sizes"] = p.group_sizes;
}

Permutation LoadPermutation(StepState& s) {
  return Permutation{s.saved["ep.sort_idx"], s.saved["ep.inverse"],
                     s.saved["ep.token"],    s.saved["ep.sorted_experts"],
                     s.saved["ep.x_rows"],   s.saved["ep.group_sizes"]};
}

class EpRaggedA2a final : public MoeBackend {
 public:
  absl::string_view name() const override { return "ep_ragged_a2a"; }
  absl::string_view description() const override {
    return "expert parallel: group-size all-gathers, ragged-all-to-all dispatch, local permute, "
           "ragged-dot, TP reduce-scatter, ragged-all-to-all combine";
  }

  absl::Status Supports(const StepSpec& spec) const override {
    const double f = spec.knobs.ragged_buffer_factor;
    if (!std::isfinite(f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a finite ragged_buffer_factor; got ", f));
    }
    PERFSIM_RETURN_IF_ERROR(spec.ValidateLimits());
    // The receive buffer is the one buffer here that a knob can make larger than the routed
    // activations (int(T_l·K·f) rows for f up to 2^14): checked before any shape is built.
    constexpr absl::string_view kBuffer =
        "bytes of the ragged receive buffer [int(T_l * K * f), max(D, F)] in f32";
    PERFSIM_ASSIGN_OR_RETURN(
        const int64_t buffer_bytes,
        CheckedProduct(kBuffer, {RaggedBufferRows(spec),
                                 std::max(spec.model.d_model(), spec.model.expert_ffn_dim()), 4}));
    PERFSIM_RETURN_IF_ERROR(CheckAtMost(kBuffer, buffer_bytes, kMaxStepBufferBytes));
    if (f > 0 && RaggedBufferRows(spec) < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected ragged_buffer_factor f with a receive buffer int(T_l·K·f) of at least 1 row; "
          "got f = ",
          f, ": int(", spec.tokens_per_device() * spec.model.experts_per_token(), "·", f,
          ") = 0"));
    }
    const int64_t d = spec.model.d_model(), tp = spec.parallelism.tp;
    if (d % tp != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected D divisible by tp (the expert output is reduce-scattered over tp on D); got "
          "D = ",
          d, ", tp = ", tp));
    }
    return absl::OkStatus();
  }

  // A dropping buffer (f > 0 with R below the dropless size) is raised to the dropless one,
  // f = min(EP, E/K), so the comparison with the dropless reference means something; validate
  // notes it (capacity_einsum does the same with its capacity factor).
  std::string PrepareForValidation(StepSpec& spec) const override {
    const double f = spec.knobs.ragged_buffer_factor;
    if (!(f > 0) || Truncation(spec) == 0) return "";
    const int64_t e = spec.model.num_experts(), k = spec.model.experts_per_token();
    const double dropless = std::min(static_cast<double>(spec.parallelism.ep),
                                     static_cast<double>(e) / static_cast<double>(k));
    const int64_t rows = RaggedBufferRows(spec);
    spec.knobs.ragged_buffer_factor = dropless;
    return absl::StrCat("ragged buffer factor raised from ", f, " (", rows,
                        " rows would drop tokens) to min(EP, E/K) = ", dropless,
                        " so that nothing drops");
  }

  // ep = the largest divisor of E that divides the device count; the rest fsdp (lowering.h).
  Parallelism DefaultParallelism(int64_t devices, const StepSpec& spec) const override {
    int64_t ep = 1;
    for (int64_t e = 1; e <= devices; ++e) {
      if (devices % e == 0 && spec.model.num_experts() % e == 0) ep = e;
    }
    return ExpertParallelWithFsdp(devices, ep, spec);
  }

  void Permute(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Permutation p = PermuteByExpert(nb, s.x, s.router.ids, s.spec.model.num_experts());
    Tensor rows = p.rows;
    if (s.router.input_scale.op != nullptr) {
      // Llama 4: each sorted row is scaled by its assignment's σ(v) before it travels.
      Tensor flat = nb.Reshape(s.router.input_scale, "M", {rows.size('M')});
      Tensor scale = nb.Convert(nb.GatherRows(flat, p.sort_idx), rows.type());
      s.saved["ep.scale"] = scale;
      rows = nb.Mul(rows, scale);
    }
    s.saved["ep.rows"] = rows;
    SavePermutation(s, p);
  }

  void Dispatch(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const int64_t ep = s.spec.parallelism.ep, e = s.spec.model.num_experts();
    const int64_t d = s.x.size('D'), rows = RaggedBufferRows(s.spec);
    const Tensor& gs = s.saved["ep.group_sizes"];
    Tensor shard = MeshIndex(s, MeshAxis::kEp);
    Tensor traffic = TrafficMatrix(s, gs);
    const int64_t truncate = Truncation(s.spec);
    Tensor truncated = truncate > 0 ? TruncateTraffic(nb, traffic, truncate) : traffic;
    RaggedExchange dispatch =
        ExchangeRows(s, s.saved["ep.rows"], EmptyBuffer(nb, s.x.type(), "MD", {rows, d}),
                     truncate > 0 ? DispatchParams(nb, traffic, truncated, shard)
                                  : DispatchParams(nb, traffic, shard),
                     RaggedBuffer::RECEIVED_EXPERT_ROWS);
    Tensor global_sizes = AllGather(s, nb.Reshape(gs, "XE", {1, e}), 'X', {MeshAxis::kEp});
    LocalPermutation local = LocalPermute(nb, global_sizes, shard, e / ep, rows, truncate);
    DeclareGroupRows(local.group_sizes.op, GroupRows::kReceivedRows, 0);
    if (truncate > 0) {
      DeclareTruncatedTo(dispatch.result.op, truncate);
      DeclareTruncatedTo(local.group_sizes.op, truncate);
    }
    s.saved["ep.traffic"] = traffic;
    s.saved["ep.truncated"] = truncated;
    s.saved["ep.local_sort"] = local.sort_idx;
    s.saved["ep.local_inverse"] = local.inverse;
    s.saved["ep.local_group_sizes"] = local.group_sizes;
    s.saved["ep.x_local"] = nb.GatherRows(dispatch.result, local.sort_idx);
    SaveExchange(s, kDispatch, dispatch);
  }

  void Experts(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& gs = s.saved["ep.local_group_sizes"];
    const Tensor& rows = s.saved["ep.x_local"];
    Tensor h0 = nb.GroupedForward(rows, s.wi_0, gs);
    Tensor h1 = nb.GroupedForward(rows, s.wi_1, gs);
    Tensor a = GatedActivation(nb, s.spec.model.proto().activation(), h0, h1);
    s.saved["ep.h0"] = h0;
    s.saved["ep.h1"] = h1;
    s.saved["ep.a"] = a;
    s.saved["ep.out"] = nb.GroupedForward(a, s.wo, gs);
  }

  void Combine(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const int64_t t = s.x.size('T'), k = s.router.ids.size('K');
    Tensor out = ReduceScatter(s, s.saved["ep.out"], 'D', {MeshAxis::kTp});
    Tensor y_recv = nb.GatherRows(out, s.saved["ep.local_inverse"]);
    const bool truncated = Truncation(s.spec) > 0;
    // Dropped assignments are never sent back: with truncation their rows must read as zero.
    Tensor buffer = truncated ? nb.Full(y_recv.type(), "MD", {t * k, y_recv.size('D')}, 0)
                              : EmptyBuffer(nb, y_recv.type(), "MD", {t * k, y_recv.size('D')});
    Tensor shard = MeshIndex(s, MeshAxis::kEp);
    RaggedExchange combine = ExchangeRows(
        s, y_recv, buffer,
        truncated ? CombineParams(nb, s.saved["ep.traffic"], s.saved["ep.truncated"], shard)
                  : CombineParams(nb, s.saved["ep.traffic"], shard),
        RaggedBuffer::RECEIVED_TOKEN_ROWS);
    SaveExchange(s, kCombine, combine);
    Tensor r = Unpermute(nb, combine.result, LoadPermutation(s), t, k);
    s.saved["ep.r"] = r;
    s.y_routed =
        AllGather(s, WeightedCombine(nb, r, s.router.weights, s.x.type()), 'D', {MeshAxis::kTp});
  }

  void CombineBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& r = s.saved["ep.r"];
    Tensor dy = s.dy;
    if (s.spec.parallelism.tp > 1) {
      // y was all-gathered over tp from D/TP slices: this device's slice of dy is its cotangent.
      const int64_t d_l = r.size('D');
      Tensor start = nb.Mul(MeshIndex(s, MeshAxis::kTp), nb.Scalar(PrimitiveType::kS32, d_l));
      dy = nb.Name(nb.raw().DynamicSlice(dy.op, {nb.Scalar(PrimitiveType::kS32, 0).op, start.op},
                                         {dy.size('T'), d_l}),
                   dy.dims);
    }
    auto [dr, dw] = WeightedCombineGrad(nb, r, s.router.weights, dy);
    s.d_weights = AllReduce(s, dw, {MeshAxis::kTp});
    Tensor d_back = UnpermuteGrad(nb, dr, LoadPermutation(s));
    Tensor d_y_recv = ExchangeRowsTranspose(s, LoadExchange(s, kCombine), d_back,
                                            RaggedBuffer::RECEIVED_EXPERT_ROWS);
    if (const int64_t truncate = Truncation(s.spec); truncate > 0) {
      DeclareTruncatedTo(d_y_recv.op, truncate);
    }
    Tensor d_out = nb.GatherRows(d_y_recv, s.saved["ep.local_sort"]);
    s.saved["ep.d_out"] = AllGather(s, d_out, 'D', {MeshAxis::kTp});
  }

  void ExpertsBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& gs = s.saved["ep.local_group_sizes"];
    const Tensor& d_out = s.saved["ep.d_out"];
    Tensor da = nb.GroupedDlhs(d_out, s.wo, gs);
    s.d_wo = nb.GroupedDrhs(s.saved["ep.a"], d_out, gs);
    auto [dh0, dh1] = GatedActivationGrad(nb, s.spec.model.proto().activation(), s.saved["ep.h0"],
                                          s.saved["ep.h1"], da);
    const Tensor& rows = s.saved["ep.x_local"];
    s.d_wi_0 = nb.GroupedDrhs(rows, dh0, gs);
    s.d_wi_1 = nb.GroupedDrhs(rows, dh1, gs);
    s.saved["ep.d_x_local"] =
        nb.Add(nb.GroupedDlhs(dh0, s.wi_0, gs), nb.GroupedDlhs(dh1, s.wi_1, gs));
  }

  void DispatchBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Tensor d_x_recv = nb.GatherRows(s.saved["ep.d_x_local"], s.saved["ep.local_inverse"]);
    s.saved["ep.d_rows"] = ExchangeRowsTranspose(s, LoadExchange(s, kDispatch), d_x_recv,
                                                 RaggedBuffer::RECEIVED_TOKEN_ROWS);
  }

  void PermuteBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Permutation p = LoadPermutation(s);
    Tensor d_rows = s.saved["ep.d_rows"];
    if (s.router.input_scale.op != nullptr) {
      // rows = x[token]·scale: dscale = Σ_D d_rows·x[token], back in assignment order (TK).
      Tensor d_scale = nb.Reduce(
          nb.Mul(nb.Convert(d_rows, PrimitiveType::kF32), nb.Convert(p.rows, PrimitiveType::kF32)),
          "D");
      Tensor in_order = nb.GatherRows(d_scale, p.inverse);
      s.d_input_scale = AllReduce(
          s, nb.Reshape(in_order, "TK", {s.x.size('T'), s.router.ids.size('K')}), {MeshAxis::kTp});
      d_rows = nb.Mul(d_rows, s.saved["ep.scale"]);
    }
    s.dx_routed = AllReduce(s, PermuteGrad(nb, d_rows, p, s.x.size('T')), {MeshAxis::kTp});
  }

 private:
  // The receive-buffer rows the traffic is truncated to, 0 when it never needs truncating
  // (f <= 0, or a buffer at least the dropless size: nothing can overflow it).
  static int64_t Truncation(const StepSpec& spec) {
    if (!(spec.knobs.ragged_buffer_factor > 0)) return 0;
    StepSpec dropless = spec;
    dropless.knobs.ragged_buffer_factor = -1;
    const int64_t rows = RaggedBufferRows(spec);
    return rows < RaggedBufferRows(dropless) ? rows : 0;
  }
};

}  // namespace

const MoeBackend& EpRaggedA2aBackend() {
  static const EpRaggedA2a backend;
  return backend;
}

}  // namespace perfsim
