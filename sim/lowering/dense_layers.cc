// The dense blocks of the whole step (dense_layers.h). Each lowering is a straight list: the
// parameters, the forward, the backward in reverse order of the forward, the outputs. The
// backward reads the forward's values directly (one module holds both), as the MoE backends'
// do; ffn.h's gated activation records its residuals so that its gradient is checked to read
// the very h0 and h1 of the forward.
#include "sim/lowering/dense_layers.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "sim/ir/builder.h"
#include "sim/ir/primitive_type.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/ffn.h"
#include "sim/lowering/named_builder.h"
#include "sim/util/status.h"

namespace perfsim {

DenseFfnSpec DenseFfnSpec::FromModel(const ModelConfig& model, int64_t batch, int64_t seq,
                                     int64_t tp, Phase phase) {
  const ModelSpec& m = model.proto();
  return DenseFfnSpec{.batch = batch,
                      .seq = seq,
                      .d_model = m.d_model(),
                      .ffn_dim = m.dense_ffn_dim(),
                      .tp = tp,
                      .phase = phase,
                      .activation = m.activation(),
                      .norm = m.norm(),
                      .residual = true,
                      .activation_type = PrimitiveTypeOfDType(m.activation_dtype()),
                      .param_type = PrimitiveTypeOfDType(m.param_dtype())};
}

EmbeddingSpec EmbeddingSpec::FromModel(const ModelConfig& model, int64_t batch, int64_t seq,
                                       int64_t tp, Phase phase) {
  const ModelSpec& m = model.proto();
  return EmbeddingSpec{.batch = batch,
                       .seq = seq,
                       .vocab_size = m.vocab_size(),
                       .d_model = m.d_model(),
                       .tp = tp,
                       .phase = phase,
                       .activation_type = PrimitiveTypeOfDType(m.activation_dtype()),
                       .param_type = PrimitiveTypeOfDType(m.param_dtype())};
}

LmHeadSpec LmHeadSpec::FromModel(const ModelConfig& model, int64_t batch, int64_t seq, int64_t tp,
                                 Phase phase) {
  const ModelSpec& m = model.proto();
  return LmHeadSpec{.batch = batch,
                    .seq = seq,
                    .vocab_size = m.vocab_size(),
                    .d_model = m.d_model(),
                    .tp = tp,
                    .phase = phase,
                    .norm = m.norm(),
                    .tied_embeddings = m.tied_embeddings(),
                    .activation_type = PrimitiveTypeOfDType(m.activation_dtype()),
                    .param_type = PrimitiveTypeOfDType(m.param_dtype())};
}

namespace {

// The largest tensor a block may build, elements: far beyond any real block (a 2^20-token,
// 2^17-vocabulary logits tensor is 2^37) and small enough that its bytes fit int64 many times.
constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
constexpr double kDefaultNormEpsilon = 1e-6;

// Every problem of a spec, reported at once ("block: expected ...; got ...", one per line).
class Problems {
 public:
  explicit Problems(absl::string_view block) : block_(block) {}

  void Positive(absl::string_view what, int64_t value) {
    if (value <= 0) Add(absl::StrCat("expected ", what, " > 0; got ", value));
  }
  void DivisibleByTp(absl::string_view what, int64_t value, int64_t tp) {
    if (value > 0 && tp > 0 && value % tp != 0) {
      Add(absl::StrCat("expected ", what, " divisible by tp = ", tp, "; got ", value));
    }
  }
  // The product of `dims` (all positive) is at most kMaxTensorElements.
  void Elements(absl::string_view what, std::initializer_list<int64_t> dims) {
    int64_t product = 1;
    for (int64_t d : dims) {
      if (d <= 0) return;  // reported by Positive
      if (product > kMaxTensorElements / d) {
        Add(absl::StrCat("expected ", what, " of at most ", kMaxTensorElements,
                         " elements; got more"));
        return;
      }
      product *= d;
    }
  }
  void FloatType(absl::string_view what, PrimitiveType type) {
    if (type != PrimitiveType::kF32 && type != PrimitiveType::kBF16 &&
        type != PrimitiveType::kF16) {
      Add(absl::StrCat("expected ", what, " f32, bf16 or f16; got ", PrimitiveTypeName(type)));
    }
  }
  void Norm(const NormSpec& norm) {
    if (norm.kind() != NORM_KIND_RMSNORM && norm.kind() != NORM_KIND_LAYERNORM) {
      Add(absl::StrCat("expected norm kind NORM_KIND_RMSNORM or NORM_KIND_LAYERNORM; got ",
                       NormKind_Name(norm.kind())));
    }
    if (norm.has_epsilon() && !(norm.epsilon() >= 0 && std::isfinite(norm.epsilon()))) {
      Add(absl::StrCat("expected norm epsilon >= 0; got ", norm.epsilon()));
    }
  }
  void Add(std::string problem) { problems_.push_back(std::move(problem)); }

  absl::Status status() const {
    if (problems_.empty()) return absl::OkStatus();
    std::vector<std::string> lines;
    for (const std::string& p : problems_) lines.push_back(absl::StrCat(block_, ": ", p));
    return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
  }

 private:
  std::string block_;
  std::vector<std::string> problems_;
};

// Builds one block's module: parameters and outputs with their TensorSpecs, tp collectives,
// and the block and phase annotations (every entry instruction made before BeginBackward is
// forward, the rest backward; all of them optimizer in the optimizer block).
class BlockBuilder {
 public:
  BlockBuilder(std::string module_name, Annotation::Block block, int64_t tp)
      : mb_(std::move(module_name)),
        entry_(mb_.Entry("main")),
        nb_(mb_, entry_, &layer_.dim_names, &residuals_),
        block_(block),
        tp_(tp) {}

  NamedBuilder& nb() { return nb_; }

  // The next entry parameter, [global] with dimension `split` (-1: none) split over tp.
  Tensor Parameter(std::string name, PrimitiveType type, std::string dims,
                   std::vector<int64_t> global, int split, Annotation::Role role) {
    TensorSpec spec = Spec(std::move(name), std::move(dims), std::move(global), type, split);
    spec.role = role;
    Tensor t = nb_.Parameter(static_cast<int64_t>(layer_.parameters.size()), spec.name, type,
                             spec.dims, LocalDims(spec));
    if (!mb_.IsPlaceholder(t.op)) UpdateAnnotation(t.op, [&](Annotation& a) { a.set_role(role); });
    layer_.parameters.push_back(std::move(spec));
    return t;
  }

  // `t` (of global dims [global], `split` over tp) is the next element of the root tuple.
  void Output(std::string name, const Tensor& t, std::vector<int64_t> global, int split = -1) {
    layer_.outputs.push_back(Spec(std::move(name), t.dims, std::move(global), t.type(), split));
    outputs_.push_back(t);
  }

  void BeginBackward() { backward_begin_ = nb_.InstructionCount(); }

  // A NamedBuilder for another computation of the module (a fusion's), recording names in
  // the same table.
  NamedBuilder NamedBuilderFor(ComputationBuilder& computation) {
    return NamedBuilder(mb_, computation, &layer_.dim_names);
  }

  // Sum (or max, ...) over the tp group; the identity when tp = 1.
  Tensor AllReduce(const Tensor& t, Opcode combiner = Opcode::kAdd) {
    if (tp_ == 1) return t;
    InstructionAttributes attributes;
    ReplicaGroups groups;
    groups.groups.emplace_back();
    for (int64_t d = 0; d < tp_; ++d) groups.groups.back().push_back(d);
    attributes.replica_groups = std::move(groups);
    attributes.channel_id = next_channel_id_++;
    // Group ids are partition ids (collectives.cc: XLA needs use_global_device_ids for that).
    attributes.use_global_device_ids = true;
    Computation* fn = mb_.ScalarBinaryComputation(t.type(), combiner);
    return nb_.Name(entry_.Add(Opcode::kAllReduce, {t.op}, std::move(attributes), Shape(), "", fn),
                    t.dims);
  }

  // This device's rank in the tp group, s32 scalar.
  Tensor Rank() {
    Instruction* id = entry_.Add(Opcode::kPartitionId, {});
    return Tensor{entry_.Convert(id, PrimitiveType::kS32), ""};
  }

  absl::StatusOr<LoweredLayer> Finish() && {
    if (mb_.status().ok()) {
      std::vector<Instruction*> ops;
      for (const Tensor& t : outputs_) ops.push_back(t.op);
      entry_.SetRoot(entry_.Tuple(std::move(ops)));
    }
    const std::string name = mb_.module()->name();
    absl::StatusOr<std::unique_ptr<Module>> module = mb_.Build();
    if (!module.ok()) return Annotate(module.status(), absl::StrCat("lowering ", name));
    Module& m = **module;
    m.AddHeaderAttribute("num_partitions", absl::StrCat(tp_));
    for (const auto& computation : m.computations()) {
      const bool entry = computation.get() == m.entry();
      const auto& instructions = computation->instructions();
      for (size_t i = 0; i < instructions.size(); ++i) {
        Annotation::Phase phase = static_cast<int64_t>(i) < backward_begin_
                                      ? Annotation::PHASE_FORWARD
                                      : Annotation::PHASE_BACKWARD;
        if (block_ == Annotation::BLOCK_OPTIMIZER) phase = Annotation::PHASE_OPTIMIZER;
        UpdateAnnotation(instructions[i].get(), [&](Annotation& a) {
          a.set_block(block_);
          // Scalar computations (a reduce's add) serve both phases: no phase.
          if (entry) a.set_phase(phase);
        });
      }
    }
    layer_.module = *std::move(module);
    return std::move(layer_);
  }

 private:
  TensorSpec Spec(std::string name, std::string dims, std::vector<int64_t> global,
                  PrimitiveType type, int split) const {
    std::vector<std::vector<MeshAxis>> splits(global.size());
    if (split >= 0 && tp_ > 1) splits[split].push_back(MeshAxis::kTp);
    return TensorSpec{std::move(name), std::move(dims), std::move(global), type, std::move(splits)};
  }
  std::vector<int64_t> LocalDims(const TensorSpec& spec) const {
    std::vector<int64_t> dims = spec.global_dims;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (!spec.split[i].empty()) dims[i] /= tp_;
    }
    return dims;
  }

  ModuleBuilder mb_;
  ComputationBuilder& entry_;
  LoweredLayer layer_;
  ResidualTable residuals_;
  NamedBuilder nb_;
  Annotation::Block block_;
  int64_t tp_;
  int64_t backward_begin_ = std::numeric_limits<int64_t>::max();
  int64_t next_channel_id_ = 1;
  std::vector<Tensor> outputs_;
};

// ---- Norms (f32 inside) ----

struct NormForward {
  Tensor out;  // in the requested type
  Tensor n;    // normalised, before scale and bias, f32 "BSD"
  Tensor r;    // 1/sqrt(mean + eps), f32 "BS"
};

double Epsilon(const NormSpec& norm) {
  return norm.has_epsilon() ? norm.epsilon() : kDefaultNormEpsilon;
}

// `bias` null for RMSNorm.
NormForward Norm(NamedBuilder& nb, const NormSpec& spec, const Tensor& x, const Tensor& scale,
                 const Tensor* bias, PrimitiveType out_type) {
  const double inv_d = 1.0 / static_cast<double>(x.size('D'));
  Tensor xf = nb.Convert(x, PrimitiveType::kF32);
  if (spec.kind() == NORM_KIND_LAYERNORM) {
    Tensor mean = nb.MulScalar(nb.Reduce(xf, "D"), inv_d);
    xf = nb.Sub(xf, mean);
  }
  Tensor mean_square = nb.MulScalar(nb.Reduce(nb.Mul(xf, xf), "D"), inv_d);
  NormForward f;
  f.r = nb.Unary(Opcode::kRsqrt, nb.AddScalar(mean_square, Epsilon(spec)));
  f.n = nb.Mul(xf, f.r);
  Tensor out = nb.Mul(f.n, nb.Convert(scale, PrimitiveType::kF32));
  if (bias != nullptr) out = nb.Add(out, nb.Convert(*bias, PrimitiveType::kF32));
  f.out = nb.Convert(out, out_type);
  return f;
}

struct NormGrads {
  Tensor dx;      // f32 "BSD"
  Tensor dscale;  // f32 "D"
  Tensor dbias;   // f32 "D"; unset for RMSNorm
};

// With n = x̂ (the normalised input) and dn = dout·scale:
//   RMSNorm    dx = r·(dn − n·mean_D(dn·n))
//   LayerNorm  dx = r·(dn − mean_D(dn) − n·mean_D(dn·n))
// dscale = Σ_{B,S} dout·n, dbias = Σ_{B,S} dout.
NormGrads NormGrad(NamedBuilder& nb, const NormSpec& spec, const NormForward& f,
                   const Tensor& scale, const Tensor& dout) {
  const double inv_d = 1.0 / static_cast<double>(f.n.size('D'));
  Tensor g = nb.Convert(dout, PrimitiveType::kF32);
  NormGrads grads;
  grads.dscale = nb.Reduce(nb.Mul(g, f.n), "BS");
  Tensor dn = nb.Mul(g, nb.Convert(scale, PrimitiveType::kF32));
  Tensor proj = nb.MulScalar(nb.Reduce(nb.Mul(dn, f.n), "D"), inv_d);
  Tensor centred = nb.Sub(dn, nb.Mul(f.n, proj));
  if (spec.kind() == NORM_KIND_LAYERNORM) {
    grads.dbias = nb.Reduce(g, "BS");
    centred = nb.Sub(centred, nb.MulScalar(nb.Reduce(dn, "D"), inv_d));
  }
  grads.dx = nb.Mul(centred, f.r);
  return grads;
}

void CheckCommon(Problems& p, int64_t batch, int64_t seq, int64_t d_model, int64_t tp,
                 PrimitiveType activation_type, PrimitiveType param_type) {
  p.Positive("batch", batch);
  p.Positive("seq", seq);
  p.Positive("d_model", d_model);
  p.Positive("tp", tp);
  p.FloatType("activation type", activation_type);
  p.FloatType("param type", param_type);
}

}  // namespace

// ---- Dense FFN ----

absl::StatusOr<LoweredLayer> LowerDenseFfn(const DenseFfnSpec& spec) {
  Problems problems("dense_ffn");
  CheckCommon(problems, spec.batch, spec.seq, spec.d_model, spec.tp, spec.activation_type,
              spec.param_type);
  problems.Positive("ffn_dim", spec.ffn_dim);
  problems.DivisibleByTp("ffn_dim", spec.ffn_dim, spec.tp);
  problems.Elements("the hidden activation [B, S, F]", {spec.batch, spec.seq, spec.ffn_dim});
  problems.Elements("the weight [D, F]", {spec.d_model, spec.ffn_dim});
  problems.Norm(spec.norm);
  const ActivationKind act = spec.activation.kind();
  if (!spec.activation.gated() || (act != ACTIVATION_KIND_SILU && act != ACTIVATION_KIND_GELU &&
                                   act != ACTIVATION_KIND_CLIPPED_SWIGLU)) {
    problems.Add(absl::StrCat("expected a gated silu, gelu or clipped_swiglu activation; got ",
                              spec.activation.gated() ? "gated " : "ungated ",
                              ActivationKind_Name(act)));
  }
  PERFSIM_RETURN_IF_ERROR(problems.status());

  const int64_t B = spec.batch, S = spec.seq, D = spec.d_model, F = spec.ffn_dim;
  const bool layernorm = spec.norm.kind() == NORM_KIND_LAYERNORM;
  const bool backward = spec.phase == Phase::kForwardBackward;
  const PrimitiveType act_type = spec.activation_type, param_type = spec.param_type;
  constexpr Annotation::Role kActivation = Annotation::ROLE_ACTIVATION;
  constexpr Annotation::Role kTrained = Annotation::ROLE_TRAINED_WEIGHT;

  BlockBuilder bb(absl::StrCat("dense_ffn_", PhaseName(spec.phase)), Annotation::BLOCK_DENSE_FFN,
                  spec.tp);
  NamedBuilder& nb = bb.nb();
  if (spec.fp8_gemms) nb.set_gemm_type(PrimitiveType::kF8E4M3FN);
  Tensor x = bb.Parameter("x", act_type, "BSD", {B, S, D}, -1, kActivation);
  Tensor scale = bb.Parameter("norm_scale", param_type, "D", {D}, -1, kTrained);
  Tensor bias;
  if (layernorm) bias = bb.Parameter("norm_bias", param_type, "D", {D}, -1, kTrained);
  Tensor w0 = bb.Parameter("w0", param_type, "DF", {D, F}, 1, kTrained);
  Tensor w1 = bb.Parameter("w1", param_type, "DF", {D, F}, 1, kTrained);
  Tensor wo = bb.Parameter("wo", param_type, "FD", {F, D}, 0, kTrained);

  // Forward. The matmuls read the weights in the activation type.
  NormForward norm = Norm(nb, spec.norm, x, scale, layernorm ? &bias : nullptr, act_type);
  Tensor w0a = nb.Convert(w0, act_type), w1a = nb.Convert(w1, act_type);
  Tensor woa = nb.Convert(wo, act_type);
  Tensor h0 = nb.Einsum("BSD,DF->BSF", norm.out, w0a);
  Tensor h1 = nb.Einsum("BSD,DF->BSF", norm.out, w1a);
  Tensor a = GatedActivation(nb, spec.activation, h0, h1, "dense_ffn");
  Tensor y = bb.AllReduce(nb.Einsum("BSF,FD->BSD", a, woa));
  if (spec.residual) y = nb.Add(x, y);
  bb.Output("y", y, {B, S, D});
  if (!backward) return std::move(bb).Finish();

  // Backward of sum(y·dy), in reverse: wo, the activation, w0 and w1, the norm, the residual.
  bb.BeginBackward();
  Tensor dy = bb.Parameter("dy", act_type, "BSD", {B, S, D}, -1, Annotation::ROLE_COTANGENT);
  Tensor da = nb.Einsum("BSD,FD->BSF", dy, woa);
  Tensor d_wo = nb.Einsum("BSF,BSD->FD", a, dy);
  auto [dh0, dh1] = GatedActivationGrad(nb, spec.activation, h0, h1, da, "dense_ffn");
  Tensor d_w0 = nb.Einsum("BSD,BSF->DF", norm.out, dh0);
  Tensor d_w1 = nb.Einsum("BSD,BSF->DF", norm.out, dh1);
  // Each device holds the partial sum over its F shard: all-reduced before the norm.
  Tensor dn =
      bb.AllReduce(nb.Add(nb.Einsum("BSF,DF->BSD", dh0, w0a), nb.Einsum("BSF,DF->BSD", dh1, w1a)));
  NormGrads ng = NormGrad(nb, spec.norm, norm, scale, dn);
  Tensor dx = nb.Convert(ng.dx, act_type);
  if (spec.residual) dx = nb.Add(dx, dy);

  bb.Output("dx", dx, {B, S, D});
  bb.Output("d_norm_scale", nb.Convert(ng.dscale, param_type), {D});
  if (layernorm) bb.Output("d_norm_bias", nb.Convert(ng.dbias, param_type), {D});
  bb.Output("d_w0", nb.Convert(d_w0, param_type), {D, F}, 1);
  bb.Output("d_w1", nb.Convert(d_w1, param_type), {D, F}, 1);
  bb.Output("d_wo", nb.Convert(d_wo, param_type), {F, D}, 0);
  return std::move(bb).Finish();
}

// ---- Embedding ----

absl::StatusOr<LoweredLayer> LowerEmbedding(const EmbeddingSpec& spec) {
  Problems problems("embedding");
  CheckCommon(problems, spec.batch, spec.seq, spec.d_model, spec.tp, spec.activation_type,
              spec.param_type);
  problems.Positive("vocab_size", spec.vocab_size);
  problems.DivisibleByTp("vocab_size", spec.vocab_size, spec.tp);
  problems.Elements("the table [V, D]", {spec.vocab_size, spec.d_model});
  problems.Elements("the output [B, S, D]", {spec.batch, spec.seq, spec.d_model});
  PERFSIM_RETURN_IF_ERROR(problems.status());

  const int64_t B = spec.batch, S = spec.seq, D = spec.d_model, V = spec.vocab_size;
  const int64_t T = B * S, V_local = V / spec.tp;
  const bool backward = spec.phase == Phase::kForwardBackward;

  BlockBuilder bb(absl::StrCat("embedding_", PhaseName(spec.phase)), Annotation::BLOCK_EMBEDDING,
                  spec.tp);
  NamedBuilder& nb = bb.nb();
  // Token ids are the block's input data (not routing): ROLE_ACTIVATION.
  Tensor ids =
      bb.Parameter("ids", PrimitiveType::kS32, "BS", {B, S}, -1, Annotation::ROLE_ACTIVATION);
  Tensor table =
      bb.Parameter("table", spec.param_type, "VD", {V, D}, 0, Annotation::ROLE_TRAINED_WEIGHT);

  // The local row of each token and whether this shard holds it (Megatron's masked lookup):
  // other tokens read row 0 and are zeroed. Ids outside [0, V) are in no shard.
  Tensor flat = nb.Reshape(ids, "T", {T});
  Tensor local = flat;
  if (spec.tp > 1) {
    Tensor offset = nb.MulScalar(bb.Rank(), static_cast<double>(V_local));
    local = nb.Sub(flat, offset);
  }
  Tensor zero_ids = nb.Full(PrimitiveType::kS32, "T", {T}, 0);
  Tensor mine = nb.Binary(
      Opcode::kAnd, nb.Compare(local, zero_ids, ComparisonDirection::kGe),
      nb.Compare(local, nb.Full(PrimitiveType::kS32, "T", {T}, static_cast<double>(V_local)),
                 ComparisonDirection::kLt));
  Tensor rows_index = nb.Select(mine, local, zero_ids);
  Tensor zero_rows = nb.Full(spec.param_type, "TD", {T, D}, 0);
  Tensor rows = nb.Select(mine, nb.GatherRows(table, rows_index), zero_rows);
  Tensor y = bb.AllReduce(nb.Convert(nb.Reshape(rows, "BSD", {B, S, D}), spec.activation_type));
  bb.Output("y", y, {B, S, D});
  if (!backward) return std::move(bb).Finish();

  // d_table[v] = Σ over the tokens whose id is v of dy[token], in f32, on the shard holding v.
  bb.BeginBackward();
  Tensor dy =
      bb.Parameter("dy", spec.activation_type, "BSD", {B, S, D}, -1, Annotation::ROLE_COTANGENT);
  Tensor dy_rows = nb.Convert(nb.Reshape(dy, "TD", {T, D}), PrimitiveType::kF32);
  dy_rows = nb.Select(mine, dy_rows, nb.Full(PrimitiveType::kF32, "TD", {T, D}, 0));
  Tensor d_table =
      nb.ScatterAddRows(nb.Full(PrimitiveType::kF32, "VD", {V_local, D}, 0), rows_index, dy_rows);
  bb.Output("d_table", nb.Convert(d_table, spec.param_type), {V, D}, 0);
  return std::move(bb).Finish();
}

// ---- LM head and loss ----

absl::StatusOr<LoweredLayer> LowerLmHead(const LmHeadSpec& spec) {
  Problems problems("lm_head");
  CheckCommon(problems, spec.batch, spec.seq, spec.d_model, spec.tp, spec.activation_type,
              spec.param_type);
  problems.Positive("vocab_size", spec.vocab_size);
  problems.DivisibleByTp("vocab_size", spec.vocab_size, spec.tp);
  problems.Elements("the logits [B, S, V]", {spec.batch, spec.seq, spec.vocab_size});
  problems.Elements("the output projection [V, D]", {spec.vocab_size, spec.d_model});
  problems.Norm(spec.norm);
  PERFSIM_RETURN_IF_ERROR(problems.status());

  const int64_t B = spec.batch, S = spec.seq, D = spec.d_model, V = spec.vocab_size;
  const int64_t V_local = V / spec.tp;
  const bool layernorm = spec.norm.kind() == NORM_KIND_LAYERNORM;
  const bool backward = spec.phase == Phase::kForwardBackward;
  const PrimitiveType act_type = spec.activation_type, param_type = spec.param_type;
  constexpr PrimitiveType kF32 = PrimitiveType::kF32;
  constexpr Annotation::Role kTrained = Annotation::ROLE_TRAINED_WEIGHT;
  const std::string w_name = spec.tied_embeddings ? "embedding" : "w_out";

  BlockBuilder bb(absl::StrCat("lm_head_", PhaseName(spec.phase)), Annotation::BLOCK_LM_HEAD,
                  spec.tp);
  NamedBuilder& nb = bb.nb();
  Tensor h = bb.Parameter("h", act_type, "BSD", {B, S, D}, -1, Annotation::ROLE_ACTIVATION);
  Tensor scale = bb.Parameter("norm_scale", param_type, "D", {D}, -1, kTrained);
  Tensor bias;
  if (layernorm) bias = bb.Parameter("norm_bias", param_type, "D", {D}, -1, kTrained);
  Tensor w = bb.Parameter(w_name, param_type, "VD", {V, D}, 0, kTrained);
  // The labels are input data like the ids: ROLE_ACTIVATION.
  Tensor labels =
      bb.Parameter("labels", PrimitiveType::kS32, "BS", {B, S}, -1, Annotation::ROLE_ACTIVATION);

  NormForward norm = Norm(nb, spec.norm, h, scale, layernorm ? &bias : nullptr, act_type);
  Tensor wa = nb.Convert(w, act_type);
  Tensor logits = nb.Einsum("BSD,VD->BSV", norm.out, wa, kF32);
  // Vocab-parallel softmax cross-entropy: the global max, the global sum of exponentials and
  // the label's logit (held by one shard; 0 from the others) are all-reduced over tp.
  Tensor max = bb.AllReduce(nb.Reduce(logits, "V", Opcode::kMaximum), Opcode::kMaximum);
  Tensor z = nb.Sub(logits, max);
  Tensor e = nb.Unary(Opcode::kExp, z);
  Tensor sum_e = bb.AllReduce(nb.Reduce(e, "V"));
  Tensor local_labels = labels;
  if (spec.tp > 1) {
    local_labels = nb.Sub(labels, nb.MulScalar(bb.Rank(), static_cast<double>(V_local)));
  }
  Tensor vocab = nb.Iota(PrimitiveType::kS32, "BSV", {B, S, V_local}, 'V');
  Tensor is_label = nb.Compare(vocab, local_labels, ComparisonDirection::kEq);
  Tensor zeros = nb.Full(kF32, "BSV", {B, S, V_local}, 0);
  Tensor picked = bb.AllReduce(nb.Reduce(nb.Select(is_label, z, zeros), "V"));
  Tensor token_loss = nb.Sub(nb.Unary(Opcode::kLog, sum_e), picked);
  const double inv_tokens = 1.0 / static_cast<double>(B * S);
  Tensor loss = nb.MulScalar(nb.Reduce(token_loss, "BS"), inv_tokens);
  bb.Output("loss", loss, {});
  if (!backward) return std::move(bb).Finish();

  // d loss / d logits = (softmax − onehot(label)) / (B·S).
  bb.BeginBackward();
  Tensor p = nb.Div(e, sum_e);
  Tensor onehot = nb.Select(is_label, nb.Full(kF32, "BSV", {B, S, V_local}, 1), zeros);
  Tensor dlogits = nb.Convert(nb.MulScalar(nb.Sub(p, onehot), inv_tokens), act_type);
  Tensor dn = bb.AllReduce(nb.Einsum("BSV,VD->BSD", dlogits, wa));
  Tensor dw = nb.Einsum("BSV,BSD->VD", dlogits, norm.out, kF32);
  NormGrads ng = NormGrad(nb, spec.norm, norm, scale, dn);

  bb.Output("dh", nb.Convert(ng.dx, act_type), {B, S, D});
  bb.Output("d_norm_scale", nb.Convert(ng.dscale, param_type), {D});
  if (layernorm) bb.Output("d_norm_bias", nb.Convert(ng.dbias, param_type), {D});
  bb.Output(absl::StrCat("d_", w_name), nb.Convert(dw, param_type), {V, D}, 0);
  return std::move(bb).Finish();
}

// ---- AdamW ----

absl::StatusOr<LoweredLayer> LowerAdamW(const OptimizerSpec& spec) {
  Problems problems("adamw");
  problems.Positive("num_params", spec.num_params);
  problems.Elements("the parameter shard", {spec.num_params});
  problems.FloatType("param type", spec.param_type);
  problems.FloatType("grad type", spec.grad_type);
  if (!(spec.b1 >= 0 && spec.b1 < 1)) {
    problems.Add(absl::StrCat("expected 0 <= b1 < 1; got ", spec.b1));
  }
  if (!(spec.b2 >= 0 && spec.b2 < 1)) {
    problems.Add(absl::StrCat("expected 0 <= b2 < 1; got ", spec.b2));
  }
  if (!(spec.eps >= 0 && std::isfinite(spec.eps))) {
    problems.Add(absl::StrCat("expected eps >= 0; got ", spec.eps));
  }
  if (!(spec.weight_decay >= 0 && std::isfinite(spec.weight_decay))) {
    problems.Add(absl::StrCat("expected weight_decay >= 0; got ", spec.weight_decay));
  }
  PERFSIM_RETURN_IF_ERROR(problems.status());

  const int64_t N = spec.num_params;
  constexpr PrimitiveType kF32 = PrimitiveType::kF32;
  constexpr Annotation::Role kActivation = Annotation::ROLE_ACTIVATION;
  constexpr Annotation::Role kState = Annotation::ROLE_FROZEN_WEIGHT;

  BlockBuilder bb("adamw", Annotation::BLOCK_OPTIMIZER, /*tp=*/1);
  NamedBuilder& nb = bb.nb();
  Tensor param =
      bb.Parameter("param", spec.param_type, "N", {N}, -1, Annotation::ROLE_TRAINED_WEIGHT);
  Tensor grad = bb.Parameter("grad", spec.grad_type, "N", {N}, -1, kActivation);
  Tensor m = bb.Parameter("m", kF32, "N", {N}, -1, kState);
  Tensor v = bb.Parameter("v", kF32, "N", {N}, -1, kState);
  Tensor lr = bb.Parameter("lr", kF32, "", {}, -1, kActivation);
  Tensor count = bb.Parameter("count", kF32, "", {}, -1, kActivation);

  // The update is one multi-output loop fusion, as XLA compiles an optimizer step: each
  // input read once, each output written once, (2·bytes(param) + bytes(grad) + 16)·N bytes.
  // Left unfused, the simulator's loop fusion (sim/simulator/fusion.h) has no multi-output
  // fusion and would write m' and v' and read them back, and read g once per consumer.
  ModuleBuilder& mb = nb.module_builder();
  ComputationBuilder& body = mb.NewComputation("adamw_update");
  NamedBuilder fb = bb.NamedBuilderFor(body);
  std::vector<Tensor> args = {param, grad, m, v, lr, count};
  std::vector<Tensor> in;
  for (size_t i = 0; i < args.size(); ++i) {
    in.push_back(fb.Parameter(static_cast<int64_t>(i), absl::StrCat(args[i].op->name(), ".in"),
                              args[i].type(), args[i].dims, args[i].shape().dimensions()));
  }
  Tensor g = fb.Convert(in[1], kF32);
  Tensor p = fb.Convert(in[0], kF32);
  Tensor m2 = fb.Add(fb.MulScalar(in[2], spec.b1), fb.MulScalar(g, 1 - spec.b1));
  Tensor v2 = fb.Add(fb.MulScalar(in[3], spec.b2), fb.MulScalar(fb.Mul(g, g), 1 - spec.b2));
  // Bias corrections on scalars: 1/(1 − b^t).
  auto inverse_correction = [&](double b) {
    Tensor power = fb.Binary(Opcode::kPower, fb.Scalar(kF32, b), in[5]);
    Tensor correction = fb.AddScalar(fb.MulScalar(power, -1), 1);
    return fb.Div(fb.Scalar(kF32, 1), correction);
  };
  Tensor m_hat = fb.Mul(m2, inverse_correction(spec.b1));
  Tensor v_hat = fb.Mul(v2, inverse_correction(spec.b2));
  Tensor update = fb.Div(m_hat, fb.AddScalar(fb.Unary(Opcode::kSqrt, v_hat), spec.eps));
  update = fb.Add(update, fb.MulScalar(p, spec.weight_decay));
  Tensor new_param = fb.Convert(fb.Sub(p, fb.Mul(update, in[4])), spec.param_type);
  body.SetRoot(body.Tuple({new_param.op, m2.op, v2.op}));

  std::vector<Instruction*> operands;
  for (const Tensor& t : args) operands.push_back(t.op);
  InstructionAttributes attributes;
  attributes.fusion_kind = FusionKind::kLoop;
  ComputationBuilder& entry = nb.raw();
  Instruction* fusion = entry.Add(Opcode::kFusion, std::move(operands), std::move(attributes),
                                  Shape(), "adamw", body.computation());
  if (!mb.IsPlaceholder(fusion)) {
    // A fusion names its computation with calls=, not to_apply= (XLA's text).
    fusion->set_calls({body.computation()});
    fusion->set_to_apply(nullptr);
  }
  auto element = [&](int64_t i, const Tensor& like) {
    return nb.Name(entry.GetTupleElement(fusion, i), like.dims);
  };
  bb.Output("new_param", element(0, param), {N});
  bb.Output("new_m", element(1, m), {N});
  bb.Output("new_v", element(2, v), {N});
  return std::move(bb).Finish();
}

}  // namespace perfsim
