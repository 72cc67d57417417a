// capacity_einsum: MaxText's dropping einsum path (backends.md 1a.2, `dense_matmul` with
// capacity_factor > 0; RoutedMoE.generate_masks). Every sequence gives each expert at most C
// slots; assignments past them are dropped (they contribute nothing to y).
//
//   C = int(max(ceil(S·K/E)·cf, cf))                   capacity per sequence (per batch row)
//   permute   oh = one_hot(ids) [B,S·K,E] (s32)        assignment m = s·K + k of sequence b
//             n = cumsum_M(oh)                           1-based position of m in its expert
//             pos[b,s,e] = Σ_K oh·n·(n ≤ C)              0 when not chosen or dropped
//             P[b,s,e,c] = (pos == c + 1)                the position one-hot, C slots
//             combine Cm = P ⊗ G (G: dense router weights [B,S,E]); dispatch Dm = P
//   dispatch  Xd = einsum("BSD,BSEC->EBCD", x, Dm)
//   experts   h_j = einsum("EBCD,EDF->EBCF", Xd, wi_j); a = act(h0, h1);
//             o = einsum("EBCF,EFD->EBCD", a, wo)
//   combine   y = einsum("EBCD,BSEC->BSD", o, Cm)
// The cumsum is a reduce-window (window S·K, low padding S·K − 1, add), which is what XLA
// makes of jnp.cumsum; a triangular einsum would cost (S·K)² per sequence. Assignments are
// ordered s-major then k, as MaxText flattens [S, K]: token s's second choice outranks token
// s+1's first. MaxText's dispatch mask is combine_mask.astype(bool), which would also skip an
// assignment whose weight is exactly 0; here the dispatch mask is the position one-hot itself,
// which changes nothing in y (that assignment is weighted by 0) and keeps d_weights the true
// gradient. Llama 4 (sigmoid_prescale) scales each assignment's input by σ(v): Dm = P ⊗ σ(v).
// FLOPs: dispatch and combine 2·B·S·E·C·D each, the experts 6·E·B·C·D·F.
//
// Backward of sum(y·dy):
//   combine_bwd  dG = Σ_C P·einsum("EBCD,BSD->BSEC", o, dy) -> d_weights (TK, at the chosen
//                experts; 0 for dropped ones); do = einsum("BSD,BSEC->EBCD", dy, Cm)
//   experts_bwd  da = einsum("EBCD,EFD->EBCF", do, wo); d_wo = einsum("EBCF,EBCD->EFD", a, do);
//                (dh0, dh1) = act'(da); d_wi_j = einsum("EBCD,EBCF->EDF", Xd, dh_j);
//                dXd = Σ_j einsum("EBCF,EDF->EBCD", dh_j, wi_j)
//   dispatch_bwd dx = einsum("EBCD,BSEC->BSD", dXd, Dm); Llama 4: dσ = Σ_C P·einsum(dXd, x)
//
// Parallelism. Tokens are split over (dp, ep) batch-major, and capacity is per sequence, so a
// device must hold whole sequences: B divisible by dp·ep. Expert parallelism is the re-layout
// GSPMD makes of the dispatched tensor when batch and experts are both sharded over `expert`
// (backends.md 1a.2, 1f): an all-to-all over ep of [E, B_l, C, D] splitting E, after which each
// device holds its E_l experts for the EP·B_l sequences of its ep group; the combine (and every
// backward crossing) is the inverse all-to-all. Tensor parallelism splits F: the wo einsum
// gives partial sums, so y (and dG, dx, dσ in the backward) are all-reduced over tp.
//
// Validation. The validator compares with dense_einsum, which drops nothing; they agree only
// when no token is dropped. A token picks K distinct experts, so an expert gets at most S
// assignments per sequence, and cf ≥ E/K gives C ≥ ceil(S·K/E)·E/K ≥ S: nothing can drop.
// `perfsim validate` must therefore run this backend with --capacity-factor ≥ E/K (nano: 6 for
// K = 2, 12 for the K = 1 Llama-4 family); with a smaller factor a case that drops tokens fails,
// as it should. The dropping itself is checked against a hand-derived reference in
// tests/lowering/capacity_einsum_test.cc.
#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "sim/lowering/backends_internal.h"
#include "sim/lowering/collectives.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/permute.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr PrimitiveType kS32 = PrimitiveType::kS32;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;

// C = int(max(ceil(S·K/E)·cf, cf)), as MaxText's `expert_capacity_per_batch`.
int64_t CapacityPerSequence(const StepSpec& spec) {
  const int64_t s = spec.seq, k = spec.model.experts_per_token(), e = spec.model.num_experts();
  const double cf = spec.knobs.capacity_factor;
  const int64_t per_expert = (s * k + e - 1) / e;
  return static_cast<int64_t>(std::max(static_cast<double>(per_expert) * cf, cf));
}

// Inclusive prefix sum along `along`: reduce-window of the whole length, padded low.
Tensor CumSum(NamedBuilder& nb, const Tensor& t, char along) {
  const int64_t i = t.index(along), n = t.size(along);
  std::vector<WindowDimension> window(t.rank());
  window[i].size = n;
  window[i].padding_low = n - 1;
  InstructionAttributes attributes;
  attributes.window = std::move(window);
  Computation* add = nb.module_builder().ScalarBinaryComputation(t.type(), Opcode::kAdd);
  Instruction* zero = nb.raw().ScalarConstant(t.type(), 0);
  return nb.Name(
      nb.raw().Add(Opcode::kReduceWindow, {t.op, zero}, std::move(attributes), Shape(), "", add),
      t.dims);
}

// Array all-to-all over ep splitting and concatenating dimension 0: block j of the result is
// what member j sent to this device.
Tensor AllToAllOverEp(StepState& s, const Tensor& t) {
  InstructionAttributes attributes;
  ReplicaGroups groups;
  groups.groups = MeshGroups(s.spec.parallelism, {MeshAxis::kEp});
  attributes.replica_groups = std::move(groups);
  attributes.channel_id = s.next_channel_id++;
  attributes.dimensions = std::vector<int64_t>{0};
  return s.nb.Name(s.nb.raw().Add(Opcode::kAllToAll, {t.op}, std::move(attributes)), t.dims);
}

// [E, B_l, C, D] with the local sequences for every expert -> [E_l, EP·B_l, C, D] with this
// device's experts for the sequences of its whole ep group (peer-major).
Tensor ToExpertLayout(StepState& s, const Tensor& t) {
  const int64_t ep = s.spec.parallelism.ep;
  if (ep == 1) return t;
  NamedBuilder& nb = s.nb;
  const int64_t e_l = t.size('E') / ep, b = t.size('B'), c = t.size('C'), d = t.size('D');
  Tensor moved = AllToAllOverEp(s, t);  // block p: peer p's sequences for my experts
  Tensor split = nb.Reshape(moved, "PEBCD", {ep, e_l, b, c, d});
  return nb.Reshape(nb.Transpose(split, "EPBCD"), "EBCD", {e_l, ep * b, c, d});
}

// The inverse of ToExpertLayout.
Tensor ToTokenLayout(StepState& s, const Tensor& t) {
  const int64_t ep = s.spec.parallelism.ep;
  if (ep == 1) return t;
  NamedBuilder& nb = s.nb;
  const int64_t e_l = t.size('E'), b = t.size('B') / ep, c = t.size('C'), d = t.size('D');
  Tensor split = nb.Reshape(t, "EPBCD", {e_l, ep, b, c, d});
  Tensor by_peer = nb.Reshape(nb.Transpose(split, "PEBCD"), "EBCD", {ep * e_l, b, c, d});
  return AllToAllOverEp(s, by_peer);  // block p: peer p's experts for my sequences
}

class CapacityEinsum final : public MoeBackend {
 public:
  absl::string_view name() const override { return "capacity_einsum"; }
  absl::string_view description() const override {
    return "one-hot dispatch/combine einsums with capacity C per sequence (drops tokens; "
           "equals the reference only when cf >= E/K)";
  }

  // Dropped assignments make the output differ from the dropless reference by design; validate
  // compares the einsum machinery with a capacity where nothing can drop: cf >= E/K gives
  // C >= S. (The dropping rule itself is checked against a hand-derived reference in
  // tests/lowering/capacity_einsum_test.cc.)
  std::string PrepareForValidation(StepSpec& spec) const override {
    const double never_drop = static_cast<double>(spec.model.num_experts()) /
                              static_cast<double>(spec.model.experts_per_token());
    if (spec.knobs.capacity_factor >= never_drop) return "";
    const double given = spec.knobs.capacity_factor;
    spec.knobs.capacity_factor = never_drop;
    return absl::StrCat("capacity factor raised from ", given, " to E/K = ", never_drop,
                        " so that nothing drops");
  }

  absl::Status Supports(const StepSpec& spec) const override {
    const Parallelism& p = spec.parallelism;
    if (spec.knobs.capacity_factor <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected capacity_factor > 0 (MaxText's cf <= 0 is the dropless dense path: use "
          "dense_einsum); got ",
          spec.knobs.capacity_factor));
    }
    // The limits first: C is computed from S·K and cf, and the masks below are [B_l, S, E, C].
    PERFSIM_RETURN_IF_ERROR(spec.ValidateLimits());
    if (CapacityPerSequence(spec) < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected a capacity C = int(max(ceil(S*K/E)*cf, cf)) >= 1; got C = ",
          CapacityPerSequence(spec), " for S=", spec.seq, ", K=", spec.model.experts_per_token(),
          ", E=", spec.model.num_experts(), ", cf=", spec.knobs.capacity_factor));
    }
    if (spec.batch % (p.dp * p.fsdp * p.ep) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected batch divisible by dp*fsdp*ep (capacity is per sequence, so every device "
          "holds whole sequences); got batch ",
          spec.batch, " and dp*fsdp*ep = ", p.dp * p.fsdp * p.ep));
    }
    // The dispatch and combine masks hold S·E·C ≈ S²·K·cf elements per sequence: a long
    // sequence makes them far larger than the activations, so they are checked here.
    const int64_t b_l = spec.batch / (p.dp * p.fsdp * p.ep), e = spec.model.num_experts();
    const int64_t width = std::max(spec.model.d_model(), spec.model.expert_ffn_dim());
    constexpr absl::string_view kMask = "bytes of the capacity mask [B_l, S, E, C] in f32";
    PERFSIM_ASSIGN_OR_RETURN(
        const int64_t mask_bytes,
        CheckedProduct(kMask, {b_l, spec.seq, e, CapacityPerSequence(spec), 4}));
    PERFSIM_RETURN_IF_ERROR(CheckAtMost(kMask, mask_bytes, kMaxStepBufferBytes));
    constexpr absl::string_view kSlots = "bytes of the expert buffer [E, B_l, C, max(D, F)] in f32";
    PERFSIM_ASSIGN_OR_RETURN(const int64_t slot_bytes,
                             CheckedProduct(kSlots, {e, b_l, CapacityPerSequence(spec), width, 4}));
    PERFSIM_RETURN_IF_ERROR(CheckAtMost(kSlots, slot_bytes, kMaxStepBufferBytes));
    return absl::OkStatus();
  }

  // Factors of 2 (then 3, ...) go round-robin to ep, dp, tp, each where it still divides
  // (E for ep, the batch for dp·ep, F for tp): 2 -> ep=2; 4 -> ep=2,dp=2; 8 -> ep=dp=tp=2.
  Parallelism DefaultParallelism(int64_t devices, const StepSpec& spec) const override {
    constexpr std::array<int64_t Parallelism::*, 3> kOrder = {&Parallelism::ep, &Parallelism::dp,
                                                              &Parallelism::tp};
    auto fits = [&](const Parallelism& q) {
      return spec.model.num_experts() % q.ep == 0 && spec.batch % (q.dp * q.ep) == 0 &&
             spec.model.expert_ffn_dim() % q.tp == 0;
    };
    Parallelism p;
    size_t next = 0;
    int64_t rest = devices;
    for (int64_t f = 2; rest > 1;) {
      if (rest % f != 0) {
        ++f;
        continue;
      }
      rest /= f;
      bool placed = false;
      for (size_t tries = 0; tries < kOrder.size() && !placed; ++tries) {
        Parallelism q = p;
        q.*kOrder[next] *= f;
        next = (next + 1) % kOrder.size();
        if (fits(q)) p = q, placed = true;
      }
      if (!placed) p.dp *= f;  // Supports() then says why
    }
    return p;
  }

  void Permute(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const int64_t t = s.x.size('T'), seq = s.spec.seq, b = t / seq;
    const int64_t k = s.router.ids.size('K'), e = s.spec.model.num_experts();
    const int64_t c = CapacityPerSequence(s.spec);
    const PrimitiveType type = s.x.type();
    // Positions in expert, per sequence, over assignments in (s, k) order.
    Tensor onehot = nb.Reshape(nb.Convert(s.router.onehot, kS32), "BME", {b, seq * k, e});
    Tensor count = CumSum(nb, onehot, 'M');
    Tensor fits =
        nb.Compare(count, nb.Full(kS32, "BME", {b, seq * k, e}, c), ComparisonDirection::kLe);
    Tensor kept = nb.Select(fits, nb.Mul(onehot, count), nb.Full(kS32, "BME", {b, seq * k, e}, 0));
    Tensor pos = nb.Reduce(nb.Reshape(kept, "BSKE", {b, seq, k, e}), "K");  // BSE, 0 = none
    Tensor slot = nb.AddScalar(nb.Iota(kS32, "BSEC", {b, seq, e, c}, 'C'), 1);
    Tensor hit = nb.Compare(slot, pos, ComparisonDirection::kEq);
    Tensor p_mask = nb.Select(hit, nb.Full(type, "BSEC", {b, seq, e, c}, 1),
                              nb.Full(type, "BSEC", {b, seq, e, c}, 0));
    Tensor g = nb.Convert(nb.Reshape(s.router.dense, "BSE", {b, seq, e}), type);
    s.saved["cap.p"] = p_mask;
    s.saved["cap.combine"] = nb.Mul(p_mask, g);
    s.saved["cap.dispatch"] = p_mask;
    if (s.router.input_scale.op != nullptr) {
      Tensor scale = ScatterToExperts(nb, s.router, s.router.input_scale);  // TE f32
      s.saved["cap.dispatch"] =
          nb.Mul(p_mask, nb.Convert(nb.Reshape(scale, "BSE", {b, seq, e}), type));
    }
  }

  void Dispatch(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const int64_t seq = s.spec.seq, b = s.x.size('T') / seq, d = s.x.size('D');
    Tensor x = nb.Reshape(s.x, "BSD", {b, seq, d});
    s.saved["cap.x"] = x;
    Tensor xd = nb.Einsum("BSD,BSEC->EBCD", x, s.saved["cap.dispatch"]);
    s.saved["cap.xd"] = ToExpertLayout(s, xd);
  }

  void Experts(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& xd = s.saved["cap.xd"];
    Tensor h0 = nb.Einsum("EBCD,EDF->EBCF", xd, s.wi_0);
    Tensor h1 = nb.Einsum("EBCD,EDF->EBCF", xd, s.wi_1);
    Tensor a = GatedActivation(nb, s.spec.model.proto().activation(), h0, h1);
    s.saved["cap.h0"] = h0;
    s.saved["cap.h1"] = h1;
    s.saved["cap.a"] = a;
    s.saved["cap.o"] = nb.Einsum("EBCF,EFD->EBCD", a, s.wo);  // partial over tp
  }

  void Combine(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    Tensor o = ToTokenLayout(s, s.saved["cap.o"]);
    s.saved["cap.o_tokens"] = o;
    nb.SaveForBackward(kExpertOutputsRole, "the expert outputs the forward combine weighted", o);
    Tensor y =
        AllReduce(s, nb.Einsum("EBCD,BSEC->BSD", o, s.saved["cap.combine"]), {MeshAxis::kTp});
    s.y_routed = nb.Reshape(y, "TD", {s.x.size('T'), s.x.size('D')});
  }

  void CombineBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const int64_t t = s.x.size('T'), seq = s.spec.seq, b = t / seq, d = s.x.size('D');
    const int64_t e = s.spec.model.num_experts();
    Tensor dy = nb.Reshape(s.dy, "BSD", {b, seq, d});
    s.saved["cap.dy"] = dy;
    // Cm = P ⊗ G: dG = Σ_C P·dCm, complete only after the tp all-reduce (o is partial).
    const int64_t mark = nb.InstructionCount();
    Tensor d_cm = nb.Einsum("EBCD,BSD->BSEC", nb.Convert(s.saved["cap.o_tokens"], kF32),
                            nb.Convert(dy, kF32), kF32);
    nb.UseResidual(kExpertOutputsRole, s.saved["cap.o_tokens"], mark);
    Tensor dg = nb.Reduce(nb.Mul(d_cm, nb.Convert(s.saved["cap.p"], kF32)), "C");
    dg = AllReduce(s, dg, {MeshAxis::kTp});
    s.d_weights = GatherFromExperts(nb, s.router, nb.Reshape(dg, "TE", {t, e}));
    Tensor d_o = nb.Einsum("BSD,BSEC->EBCD", dy, s.saved["cap.combine"]);
    s.saved["cap.do"] = ToExpertLayout(s, d_o);
  }

  void ExpertsBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const Tensor& d_o = s.saved["cap.do"];
    const Tensor& xd = s.saved["cap.xd"];
    Tensor da = nb.Einsum("EBCD,EFD->EBCF", d_o, s.wo);
    s.d_wo = nb.Einsum("EBCF,EBCD->EFD", s.saved["cap.a"], d_o);
    auto [dh0, dh1] = GatedActivationGrad(nb, s.spec.model.proto().activation(), s.saved["cap.h0"],
                                          s.saved["cap.h1"], da);
    s.d_wi_0 = nb.Einsum("EBCD,EBCF->EDF", xd, dh0);
    s.d_wi_1 = nb.Einsum("EBCD,EBCF->EDF", xd, dh1);
    s.saved["cap.dxd"] = nb.Add(nb.Einsum("EBCF,EDF->EBCD", dh0, s.wi_0),
                                nb.Einsum("EBCF,EDF->EBCD", dh1, s.wi_1));  // partial over tp
  }

  void DispatchBwd(StepState& s) const override {
    NamedBuilder& nb = s.nb;
    const int64_t t = s.x.size('T'), d = s.x.size('D'), e = s.spec.model.num_experts();
    Tensor dxd = ToTokenLayout(s, s.saved["cap.dxd"]);
    Tensor dx =
        AllReduce(s, nb.Einsum("EBCD,BSEC->BSD", dxd, s.saved["cap.dispatch"]), {MeshAxis::kTp});
    s.dx_routed = nb.Reshape(dx, "TD", {t, d});
    if (s.router.input_scale.op == nullptr) return;
    // Dm = P ⊗ σ(v): dσ = Σ_C P·einsum("EBCD,BSD->BSEC", dXd, x), read at the chosen experts.
    Tensor d_dm = nb.Einsum("EBCD,BSD->BSEC", nb.Convert(dxd, kF32),
                            nb.Convert(s.saved["cap.x"], kF32), kF32);
    Tensor d_scale = nb.Reduce(nb.Mul(d_dm, nb.Convert(s.saved["cap.p"], kF32)), "C");
    d_scale = AllReduce(s, d_scale, {MeshAxis::kTp});
    s.d_input_scale = GatherFromExperts(nb, s.router, nb.Reshape(d_scale, "TE", {t, e}));
  }
};

}  // namespace

const MoeBackend& CapacityEinsumBackend() {
  static const CapacityEinsum backend;
  return backend;
}

}  // namespace perfsim
