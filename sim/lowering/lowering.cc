#include "sim/lowering/lowering.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/ir/builder.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/collectives.h"
#include "sim/lowering/ffn.h"
#include "sim/moe/step_graph.h"
#include "sim/util/status.h"

namespace perfsim {

absl::string_view MeshAxisName(MeshAxis axis) {
  switch (axis) {
    case MeshAxis::kDp: return "dp";
    case MeshAxis::kFsdp: return "fsdp";
    case MeshAxis::kEp: return "ep";
    case MeshAxis::kTp: return "tp";
  }
  return "?";
}

int64_t MeshAxisSize(const Parallelism& p, MeshAxis axis) {
  switch (axis) {
    case MeshAxis::kDp: return p.dp;
    case MeshAxis::kFsdp: return p.fsdp;
    case MeshAxis::kEp: return p.ep;
    case MeshAxis::kTp: return p.tp;
  }
  return 1;
}

int64_t MeshStride(const Parallelism& p, MeshAxis axis) {
  switch (axis) {
    case MeshAxis::kDp: return p.tp * p.ep * p.fsdp;
    case MeshAxis::kFsdp: return p.tp * p.ep;
    case MeshAxis::kEp: return p.tp;
    case MeshAxis::kTp: return 1;
  }
  return 1;
}

int64_t MeshCoord(const Parallelism& p, MeshAxis axis, int64_t device) {
  return device / MeshStride(p, axis) % MeshAxisSize(p, axis);
}

std::vector<std::vector<int64_t>> MeshGroups(const Parallelism& p, std::vector<MeshAxis> axes) {
  // A group fixes the coordinates of the axes not in `axes`; members in device order, which is
  // the major-to-minor order of the axes (what an all-gather over several axes concatenates).
  constexpr MeshAxis kAll[] = {MeshAxis::kDp, MeshAxis::kFsdp, MeshAxis::kEp, MeshAxis::kTp};
  // A group's index is the mixed-radix number of its fixed coordinates, major to minor: groups
  // come out in the order of their first device (the one with every grouped coordinate 0).
  bool grouped[std::size(kAll)];
  int64_t num_groups = 1;
  for (size_t k = 0; k < std::size(kAll); ++k) {
    grouped[k] = std::find(axes.begin(), axes.end(), kAll[k]) != axes.end();
    if (!grouped[k]) num_groups *= MeshAxisSize(p, kAll[k]);
  }
  std::vector<std::vector<int64_t>> groups(num_groups);
  for (auto& group : groups) group.reserve(p.num_devices() / num_groups);
  // Devices in order, their coordinates counted like an odometer (the last axis fastest), so
  // that no device id is divided back into coordinates.
  constexpr size_t kAxes = std::size(kAll);
  int64_t size[kAxes], coord[kAxes] = {};
  for (size_t k = 0; k < kAxes; ++k) size[k] = MeshAxisSize(p, kAll[k]);
  for (int64_t device = 0; device < p.num_devices(); ++device) {
    int64_t index = 0;
    for (size_t k = 0; k < kAxes; ++k) {
      if (!grouped[k]) index = index * size[k] + coord[k];
    }
    groups[index].push_back(device);
    for (size_t k = kAxes; k-- > 0;) {
      if (++coord[k] < size[k]) break;
      coord[k] = 0;
    }
  }
  return groups;
}

Parallelism MoeBackend::DefaultParallelism(int64_t devices, const StepSpec& spec) const {
  return Parallelism{.dp = devices};
}

Parallelism DataParallelWithFsdp(int64_t devices, const StepSpec& spec) {
  Parallelism p{.dp = devices};
  if (devices >= 4 && devices % 2 == 0 && spec.model.d_model() % 2 == 0) {
    p.dp = devices / 2;
    p.fsdp = 2;
  }
  return p;
}

Parallelism ExpertParallelWithFsdp(int64_t devices, int64_t ep, const StepSpec& spec) {
  Parallelism p{.ep = ep};
  const int64_t rest = devices / ep;
  if (spec.model.d_model() % rest == 0) {
    p.fsdp = rest;
  } else {
    p.dp = rest;
  }
  return p;
}

std::vector<std::vector<MeshAxis>> MoeBackend::ExpertWeightSplit(absl::string_view dims) const {
  std::vector<std::vector<MeshAxis>> split;
  for (char c : dims) {
    if (c == 'E') {
      split.push_back({MeshAxis::kEp});
    } else if (c == 'F') {
      split.push_back({MeshAxis::kTp});
    } else {
      split.push_back({});
    }
  }
  return split;
}

namespace {

std::vector<int64_t> LocalDims(const TensorSpec& t, const Parallelism& p) {
  std::vector<int64_t> dims = t.global_dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    for (MeshAxis axis : t.split[i]) dims[i] /= MeshAxisSize(p, axis);
  }
  return dims;
}

// Stage and phase on the entry instructions [begin, end) a stage added (instructions it reused
// from an earlier stage keep theirs).
void AnnotateStage(ComputationBuilder& entry, int64_t begin, Stage stage) {
  const auto& instructions = entry.computation()->instructions();
  for (size_t i = static_cast<size_t>(begin); i < instructions.size(); ++i) {
    UpdateAnnotation(instructions[i].get(), [&](Annotation& a) {
      a.set_stage(AnnotationStage(stage));
      a.set_phase(AnnotationPhase(stage));
    });
  }
}

TensorSpec Spec(std::string name, std::string dims, std::vector<int64_t> global, PrimitiveType type,
                std::vector<std::vector<MeshAxis>> split,
                Annotation::Role role = Annotation::ROLE_UNSPECIFIED) {
  return TensorSpec{std::move(name), std::move(dims), std::move(global), type, std::move(split),
                    role};
}

// Shared expert forward and backward, lowered here for every backend: a dense gated MLP of
// width H = n_shared·F_shared on all local tokens (H split over tp, partial sums all-reduced).
Tensor SharedExpert(StepState& s) {
  NamedBuilder& nb = s.nb;
  const ActivationSpec& act = s.spec.model.proto().activation();
  Tensor h0 = nb.Einsum("TD,DH->TH", s.x, s.ws_0);
  Tensor h1 = nb.Einsum("TD,DH->TH", s.x, s.ws_1);
  Tensor a = GatedActivation(nb, act, h0, h1, "shared_expert");
  s.saved["shared.h0"] = h0;
  s.saved["shared.h1"] = h1;
  s.saved["shared.a"] = a;
  return AllReduce(s, nb.Einsum("TH,HD->TD", a, s.ws_o), {MeshAxis::kTp});
}

struct SharedGrads {
  Tensor dx, d0, d1, d_o;
};

SharedGrads SharedExpertBwd(StepState& s) {
  NamedBuilder& nb = s.nb;
  const ActivationSpec& act = s.spec.model.proto().activation();
  const Tensor &h0 = s.saved["shared.h0"], &h1 = s.saved["shared.h1"], &a = s.saved["shared.a"];
  SharedGrads g;
  Tensor da = nb.Einsum("TD,HD->TH", s.dy, s.ws_o);
  g.d_o = nb.Einsum("TH,TD->HD", a, s.dy);
  auto [dh0, dh1] = GatedActivationGrad(nb, act, h0, h1, da, "shared_expert");
  g.d0 = nb.Einsum("TD,TH->DH", s.x, dh0);
  g.d1 = nb.Einsum("TD,TH->DH", s.x, dh1);
  g.dx = AllReduce(s, nb.Add(nb.Einsum("TH,DH->TD", dh0, s.ws_0), nb.Einsum("TH,DH->TD", dh1, s.ws_1)),
                   {MeshAxis::kTp});
  return g;
}

// The weights as the stages read them: the parameters, or with fsdp > 1 their all-gathers
// over fsdp on D (gathered once for the forward and again for the backward: lowering.h).
struct Weights {
  Tensor router_w, wi_0, wi_1, wo, ws_0, ws_1, ws_o;
};

// `gather` false: the stages read the parameters themselves (fsdp = 1, or before the
// weight_gather stage has run).
void GatherWeights(StepState& s, const Weights& params, bool gather_over_fsdp = true) {
  const std::vector<MeshAxis> fsdp = {MeshAxis::kFsdp};
  auto gather = [&](const Tensor& t) {
    return t.op == nullptr || !gather_over_fsdp ? t : AllGather(s, t, 'D', fsdp);
  };
  s.router_w = gather(params.router_w);
  s.wi_0 = gather(params.wi_0);
  s.wi_1 = gather(params.wi_1);
  s.wo = gather(params.wo);
  s.ws_0 = gather(params.ws_0);
  s.ws_1 = gather(params.ws_1);
  s.ws_o = gather(params.ws_o);
}

// A weight gradient, complete and sharded like its weight: reduce-scattered over fsdp on D
// (the transpose of the forward's all-gather), then summed over the other replicas `axes`.
Tensor SyncGradient(StepState& s, const Tensor& local, std::vector<MeshAxis> axes) {
  return AllReduce(s, ReduceScatter(s, local, 'D', {MeshAxis::kFsdp}), std::move(axes));
}

// Every forward value a backward stage may read: StepState::saved and the router's outputs.
void RecordSaved(const StepState& s, LoweredStep& step) {
  for (const auto& [key, t] : s.saved) {
    if (t.op != nullptr) step.saved.try_emplace(t.op, key);
  }
  const RouterOutputs& r = s.router;
  const std::pair<const char*, const Tensor*> router[] = {
      {"router.logits", &r.logits},   {"router.ids", &r.ids},     {"router.onehot", &r.onehot},
      {"router.weights", &r.weights}, {"router.dense", &r.dense}, {"router.input_scale", &r.input_scale},
      {"router.probs", &r.probs},     {"router.chosen", &r.chosen}, {"router.norm", &r.norm}};
  for (const auto& [key, t] : router) {
    if (t->op != nullptr) step.saved.try_emplace(t->op, key);
  }
}

}  // namespace

absl::StatusOr<const MoeBackend*> FindBackend(absl::string_view name) {
  std::vector<std::string> known;
  for (const MoeBackend* backend : Backends()) {
    if (backend->name() == name) return backend;
    known.emplace_back(backend->name());
  }
  return absl::NotFoundError(absl::StrCat("unknown backend '", name, "'; known: ",
                                          absl::StrJoin(known, ", ")));
}

absl::StatusOr<LoweredStep> LowerStep(const StepSpec& spec) {
  PERFSIM_ASSIGN_OR_RETURN(const MoeBackend* backend, FindBackend(spec.backend));
  return LowerStepWith(spec, *backend);
}

absl::StatusOr<LoweredStep> LowerStepWith(const StepSpec& spec, const MoeBackend& backend_ref) {
  const MoeBackend* backend = &backend_ref;
  PERFSIM_RETURN_IF_ERROR(spec.Validate());
  PERFSIM_RETURN_IF_ERROR(Annotate(backend->Supports(spec),
                                   absl::StrCat("backend ", backend->name())));
  const ModelConfig& model = spec.model;
  if (!model.proto().activation().gated()) {
    return absl::UnimplementedError(
        absl::StrCat("model ", model.name(), ": expected a gated activation; got an ungated one"));
  }
  const Parallelism& p = spec.parallelism;
  const PrimitiveType act = PrimitiveTypeOfDType(model.proto().activation_dtype());
  const PrimitiveType param = PrimitiveTypeOfDType(model.proto().param_dtype());
  const int64_t T = spec.tokens(), D = model.d_model(), E = model.num_experts(),
                F = model.expert_ffn_dim();
  const int64_t H = model.num_shared_experts() * model.shared_expert_ffn_dim();
  const bool bias = model.proto().router().has_bias();
  const bool score_bias = model.proto().router().has_score_correction_bias();
  const bool shared = model.num_shared_experts() > 0;
  const bool backward = spec.phase == Phase::kForwardBackward;
  const std::vector<MeshAxis> tokens = {MeshAxis::kDp, MeshAxis::kFsdp, MeshAxis::kEp};
  const std::vector<MeshAxis> fsdp = {MeshAxis::kFsdp};
  // An expert weight's split (the backend's), with D also split over fsdp.
  auto expert_split = [&](absl::string_view dims) {
    std::vector<std::vector<MeshAxis>> split = backend->ExpertWeightSplit(dims);
    split[dims.find('D')].push_back(MeshAxis::kFsdp);
    return split;
  };

  LoweredStep step{.spec = spec};
  std::vector<TensorSpec>& params = step.parameters;
  constexpr Annotation::Role kActivation = Annotation::ROLE_ACTIVATION;
  constexpr Annotation::Role kTrained = Annotation::ROLE_TRAINED_WEIGHT;
  params.push_back(Spec("x", "TD", {T, D}, act, {tokens, {}}, kActivation));
  params.push_back(Spec("router_w", "DE", {D, E}, param, {fsdp, {}}, kTrained));
  params.push_back(Spec("wi_0", "EDF", {E, D, F}, param, expert_split("EDF"), kTrained));
  params.push_back(Spec("wi_1", "EDF", {E, D, F}, param, expert_split("EDF"), kTrained));
  params.push_back(Spec("wo", "EFD", {E, F, D}, param, expert_split("EFD"), kTrained));
  if (bias) {
    params.push_back(Spec("router_bias", "E", {E}, PrimitiveType::kF32, {{}}, kTrained));
  }
  if (score_bias) {
    // The score-correction bias is not trained by gradients (proto/model.proto).
    params.push_back(Spec("router_score_bias", "E", {E}, PrimitiveType::kF32, {{}},
                          Annotation::ROLE_FROZEN_WEIGHT));
  }
  if (shared) {
    params.push_back(Spec("ws_0", "DH", {D, H}, param, {fsdp, {MeshAxis::kTp}}, kTrained));
    params.push_back(Spec("ws_1", "DH", {D, H}, param, {fsdp, {MeshAxis::kTp}}, kTrained));
    params.push_back(Spec("ws_o", "HD", {H, D}, param, {{MeshAxis::kTp}, fsdp}, kTrained));
  }
  if (backward) {
    params.push_back(Spec("dy", "TD", {T, D}, act, {tokens, {}}, Annotation::ROLE_COTANGENT));
  }
  step.outputs.push_back(Spec("y", "TD", {T, D}, act, {tokens, {}}));
  if (backward) {
    for (const TensorSpec& t : params) {
      if (t.role != kActivation && t.role != kTrained) continue;
      TensorSpec g = t;
      g.name = absl::StrCat(t.role == kActivation ? "d" : "d_", t.name);
      g.role = Annotation::ROLE_UNSPECIFIED;
      step.outputs.push_back(std::move(g));
    }
  }

  ModuleBuilder mb(absl::StrCat("moe_", backend->name(), "_", PhaseName(spec.phase)));
  ComputationBuilder& entry = mb.Entry("main");
  NamedBuilder nb(mb, entry, &step.dim_names, &step.residuals);
  nb.set_masked_grouped_matmuls(spec.knobs.grouped_matmul == GroupedMatmulForm::kMaskedDot);
  if (spec.knobs.fp8_gemms) nb.set_gemm_type(PrimitiveType::kF8E4M3FN);
  // A spec built without StepSpec::Defaults has no knobs: megablox's own default.
  auto knob = [](const GmmTiling& t) {
    return t.tm > 0 && t.tk > 0 && t.tn > 0 ? t : GmmTiling{128, 128, 128};
  };
  nb.set_ragged_dot_tilings(knob(spec.knobs.wi.fwd), knob(spec.knobs.wo.fwd));
  StepState s{.spec = spec, .nb = nb};
  Weights weights;
  absl::flat_hash_map<std::string, Tensor*> slots = {
      {"x", &s.x},          {"router_w", &weights.router_w}, {"router_bias", &s.router_bias},
      {"router_score_bias", &s.router_score_bias},
      {"wi_0", &weights.wi_0}, {"wi_1", &weights.wi_1},      {"wo", &weights.wo},
      {"ws_0", &weights.ws_0}, {"ws_1", &weights.ws_1},      {"ws_o", &weights.ws_o},
      {"dy", &s.dy}};
  for (size_t i = 0; i < params.size(); ++i) {
    const TensorSpec& t = params[i];
    *slots[t.name] = nb.Parameter(static_cast<int64_t>(i), t.name, t.type, t.dims, LocalDims(t, p));
    UpdateAnnotation(slots[t.name]->op, [&](Annotation& a) { a.set_role(t.role); });
  }
  // Without fsdp the stages read the parameters (the weight_gather stages do not exist).
  GatherWeights(s, weights, /*gather_over_fsdp=*/false);

  StepGraph graph = BuildStepGraph(spec);
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int> order, graph.dag.TopologicalOrder());
  Tensor y_shared, y;
  SharedGrads shared_grads;
  RouterGrads router_grads;
  std::vector<Tensor> results;
  for (int node : order) {
    const Stage stage = graph.stages[node];
    // op_name stays for readers of dumps; the annotation is what passes read.
    mb.SetOpNameScope(absl::StrCat("moe/", StageName(stage)));
    const int64_t stage_begin = nb.InstructionCount();
    switch (stage) {
      case Stage::kWeightGather:
      case Stage::kWeightGatherBwd: GatherWeights(s, weights); break;
      case Stage::kRouter:
        s.router = LowerRouter(nb, model, s.x, s.router_w, bias ? &s.router_bias : nullptr,
                               score_bias ? &s.router_score_bias : nullptr);
        break;
      case Stage::kPermute: backend->Permute(s); break;
      case Stage::kDispatch: backend->Dispatch(s); break;
      case Stage::kExperts: backend->Experts(s); break;
      case Stage::kCombine: backend->Combine(s); break;
      case Stage::kSharedExpert: y_shared = SharedExpert(s); break;
      case Stage::kOutput:
        y = shared ? nb.Add(s.y_routed, y_shared) : s.y_routed;
        break;
      case Stage::kCombineBwd: backend->CombineBwd(s); break;
      case Stage::kExpertsBwd: backend->ExpertsBwd(s); break;
      case Stage::kDispatchBwd: backend->DispatchBwd(s); break;
      case Stage::kPermuteBwd: backend->PermuteBwd(s); break;
      case Stage::kRouterBwd:
        router_grads = LowerRouterGrad(nb, model, s.x, s.router_w, s.router, s.d_weights,
                                       s.d_input_scale.op == nullptr ? nullptr : &s.d_input_scale);
        break;
      case Stage::kSharedExpertBwd: shared_grads = SharedExpertBwd(s); break;
      case Stage::kGradSync: {
        // Expert weights are replicated over dp (and fsdp, which the reduce-scatter covers);
        // the router and the shared expert over every token axis.
        const std::vector<MeshAxis> replicas = {MeshAxis::kDp, MeshAxis::kEp};
        Tensor dx = nb.Add(s.dx_routed, router_grads.dx);
        if (shared) dx = nb.Add(dx, shared_grads.dx);
        results = {y,
                   dx,
                   SyncGradient(s, router_grads.dw, replicas),
                   SyncGradient(s, s.d_wi_0, {MeshAxis::kDp}),
                   SyncGradient(s, s.d_wi_1, {MeshAxis::kDp}),
                   SyncGradient(s, s.d_wo, {MeshAxis::kDp})};
        if (bias) {
          // b is replicated everywhere and every token axis holds other tokens' share.
          results.push_back(AllReduce(s, router_grads.db,
                                      {MeshAxis::kDp, MeshAxis::kFsdp, MeshAxis::kEp}));
        }
        if (shared) {
          results.push_back(SyncGradient(s, shared_grads.d0, replicas));
          results.push_back(SyncGradient(s, shared_grads.d1, replicas));
          results.push_back(SyncGradient(s, shared_grads.d_o, replicas));
        }
        break;
      }
    }
    AnnotateStage(entry, stage_begin, stage);
    if (!mb.status().ok()) break;
    // A backend that forgot to write a stage's output is a lowering bug, caught here.
    if (stage == Stage::kCombine && s.y_routed.op == nullptr) {
      return absl::InternalError(absl::StrCat("backend ", backend->name(), ": combine wrote no y"));
    }
    if (stage == Stage::kExpertsBwd &&
        (s.d_wi_0.op == nullptr || s.d_wi_1.op == nullptr || s.d_wo.op == nullptr)) {
      return absl::InternalError(
          absl::StrCat("backend ", backend->name(), ": experts_bwd wrote no weight gradients"));
    }
    if (stage == Stage::kPermuteBwd && (s.dx_routed.op == nullptr || s.d_weights.op == nullptr)) {
      return absl::InternalError(absl::StrCat(
          "backend ", backend->name(), ": the backward wrote no dx or combine-weight gradient"));
    }
  }
  mb.SetOpNameScope("");
  if (!backward) results = {y};
  if (mb.status().ok()) {
    std::vector<Instruction*> ops;
    for (const Tensor& t : results) ops.push_back(t.op);
    entry.SetRoot(entry.Tuple(std::move(ops)));
  }
  absl::StatusOr<std::unique_ptr<Module>> module = mb.Build();
  if (!module.ok()) {
    return Annotate(module.status(), absl::StrCat("lowering ", backend->name()));
  }
  step.module = *std::move(module);
  AnnotateRouting(spec, *step.module);  // annotations.h: what --routing needs (issue 12)
  RecordSaved(s, step);
  return step;
}

}  // namespace perfsim
