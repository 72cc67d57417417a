// The whole step's dense blocks (sim/lowering/dense_layers.h) against JAX, on the committed
// goldens of tools/jax/dense_layer_goldens.py (tests/testdata/dense_layers: B=2, S=8, D=32,
// F=48, V=64, f32). perfsim lowers each block with its own explicit backward, the interpreter
// runs it on the golden inputs (looked up by the lowering's own parameter names) and every
// output (by the lowering's output names) must match JAX's.
//
// Tolerance: ∞-norm relative error ≤ 1e-5 (the error's largest magnitude over the golden's
// largest). Both sides compute in f32 with different summation orders (XLA:CPU's dot kernels
// and fused reductions vs the interpreter's), a few f32 ulps (~1.2e-7 each) per accumulation
// over at most max(D, F, V, B·S) = 64 terms. Measured: at most 5.4e-7 (d_norm_bias of the
// LayerNorm FFN); the tp = 2 and 4 runs against tp = 1 at most 3.3e-7. Every mistake planted
// while writing these tests (the norm gradient's projection term dropped, the loss gradient
// not divided by B·S, AdamW's second-moment bias correction dropped, the table gradient
// scattered to row 0, the FFN's dx all-reduce or the label logit's all-reduce dropped) failed
// them by far more. The AdamW parameter is checked per element instead (below), because its
// update is 1e-4 of its magnitude.
#include "sim/lowering/dense_layers.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/npy.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"
#include "sim/moe/model_registry.h"
#include "sim/simulator/simulator.h"

namespace perfsim {
namespace {

constexpr int64_t kB = 2, kS = 8, kD = 32, kF = 48, kV = 64;
constexpr double kTolerance = 1e-5;

Literal Load(const std::string& golden_case, const std::string& tensor) {
  absl::StatusOr<Literal> lit = ReadNpyFile(
      absl::StrCat(PERFSIM_TESTDATA_DIR, "/dense_layers/", golden_case, ".", tensor, ".npy"));
  EXPECT_TRUE(lit.ok()) << golden_case << "." << tensor << ": " << lit.status();
  return lit.ok() ? *std::move(lit) : Literal();
}

double InfNormRelativeError(const Literal& got, const Literal& want, int64_t* worst) {
  double max_want = 0, max_diff = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    max_want = std::max(max_want, std::fabs(want.GetAsDouble(i)));
    const double diff = std::fabs(got.GetAsDouble(i) - want.GetAsDouble(i));
    if (!(diff <= max_diff)) max_diff = diff, *worst = i;
  }
  return max_diff / max_want;
}

void ExpectMatches(const std::string& tensor, const Literal& got, const Literal& want,
                   double tolerance = kTolerance) {
  ASSERT_EQ(got.shape().dimensions(), want.shape().dimensions()) << tensor;
  int64_t worst = 0;
  const double error = InfNormRelativeError(got, want, &worst);
  EXPECT_LE(error, tolerance) << tensor << " at linear index " << worst << ": got "
                              << got.GetAsDouble(worst) << ", want " << want.GetAsDouble(worst);
}

// Part `index` of `parts` equal parts of dimension `dim` (row-major).
Literal SliceDim(const Literal& in, int64_t dim, int64_t parts, int64_t index) {
  std::vector<int64_t> dims = in.shape().dimensions();
  const int64_t n = dims[dim] / parts, whole = dims[dim];
  dims[dim] = n;
  Literal out(Shape::Array(in.shape().element_type(), dims));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= dims[i];
  for (size_t i = dim + 1; i < dims.size(); ++i) inner *= dims[i];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        out.SetBits((o * n + k) * inner + i, in.GetBits((o * whole + index * n + k) * inner + i));
      }
    }
  }
  return out;
}

// The dimension of `t` split over tp, -1 when none.
int64_t TpDim(const TensorSpec& t) {
  for (size_t i = 0; i < t.split.size(); ++i) {
    for (MeshAxis axis : t.split[i]) {
      if (axis == MeshAxis::kTp) return static_cast<int64_t>(i);
    }
  }
  return -1;
}

// This device's shard of a global value laid out as `t`.
Literal Shard(const Literal& global, const TensorSpec& t, int64_t tp, int64_t rank) {
  const int64_t dim = TpDim(t);
  return dim < 0 ? global : SliceDim(global, dim, tp, rank);
}

// Runs `layer` on `tp` devices; the inputs are the golden's global values named like the
// parameters, each device getting its shard. outputs[device][i].
std::vector<std::vector<Literal>> RunOnGolden(const LoweredLayer& layer,
                                              const std::string& golden_case, int64_t tp) {
  std::vector<std::vector<Literal>> inputs(tp);
  for (const TensorSpec& p : layer.parameters) {
    const Literal global = Load(golden_case, p.name);
    for (int64_t rank = 0; rank < tp; ++rank) inputs[rank].push_back(Shard(global, p, tp, rank));
  }
  InterpreterOptions options;
  options.num_devices = tp;
  absl::StatusOr<RunResult> run = RunModule(*layer.module, inputs, options);
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() ? run->outputs : std::vector<std::vector<Literal>>();
}

// Every output against the golden of the same name.
void ExpectGoldenOutputs(const LoweredLayer& layer, const std::string& golden_case) {
  std::vector<std::vector<Literal>> outputs = RunOnGolden(layer, golden_case, 1);
  ASSERT_EQ(outputs.size(), 1u);
  ASSERT_EQ(outputs[0].size(), layer.outputs.size());
  for (size_t i = 0; i < layer.outputs.size(); ++i) {
    ExpectMatches(layer.outputs[i].name, outputs[0][i], Load(golden_case, layer.outputs[i].name));
  }
}

// The same block lowered for tp devices gives, on every device, its shard of the tp = 1 run's
// outputs (tolerance: the all-reduced partial sums add in another order).
void ExpectTpMatchesTp1(const LoweredLayer& tp1, const LoweredLayer& tpn, int64_t tp,
                        const std::string& golden_case) {
  std::vector<std::vector<Literal>> one = RunOnGolden(tp1, golden_case, 1);
  std::vector<std::vector<Literal>> many = RunOnGolden(tpn, golden_case, tp);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(many.size(), static_cast<size_t>(tp));
  ASSERT_EQ(tpn.outputs.size(), tp1.outputs.size());
  for (int64_t rank = 0; rank < tp; ++rank) {
    for (size_t i = 0; i < tpn.outputs.size(); ++i) {
      ExpectMatches(absl::StrCat(tpn.outputs[i].name, " on device ", rank), many[rank][i],
                    Shard(one[0][i], tpn.outputs[i], tp, rank));
    }
  }
}

DenseFfnSpec FfnSpec(NormKind norm, ActivationKind act, Phase phase, int64_t tp = 1) {
  DenseFfnSpec spec{.batch = kB, .seq = kS, .d_model = kD, .ffn_dim = kF, .tp = tp, .phase = phase};
  spec.activation.set_kind(act);
  spec.activation.set_gated(true);
  spec.norm.set_kind(norm);
  spec.norm.set_epsilon(norm == NORM_KIND_RMSNORM ? 1e-6 : 1e-5);
  return spec;
}

EmbeddingSpec EmbedSpec(Phase phase, int64_t tp = 1) {
  return EmbeddingSpec{
      .batch = kB, .seq = kS, .vocab_size = kV, .d_model = kD, .tp = tp, .phase = phase};
}

LmHeadSpec HeadSpec(Phase phase, int64_t tp = 1) {
  LmHeadSpec spec{
      .batch = kB, .seq = kS, .vocab_size = kV, .d_model = kD, .tp = tp, .phase = phase};
  spec.norm.set_kind(NORM_KIND_RMSNORM);
  spec.norm.set_epsilon(1e-6);
  return spec;
}

// The golden's constants (MANIFEST.json "adamw" attributes).
OptimizerSpec AdamSpec(int64_t n = 1000) {
  return OptimizerSpec{.num_params = n, .b1 = 0.9, .b2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
}

LoweredLayer Lower(absl::StatusOr<LoweredLayer> layer) {
  EXPECT_TRUE(layer.ok()) << layer.status();
  return layer.ok() ? *std::move(layer) : LoweredLayer();
}

// ---- Numerics against JAX ----

TEST(DenseLayersJaxTest, FfnRmsNormSiluForwardMatchesJax) {
  LoweredLayer layer =
      Lower(LowerDenseFfn(FfnSpec(NORM_KIND_RMSNORM, ACTIVATION_KIND_SILU, Phase::kForward)));
  ASSERT_NE(layer.module, nullptr);
  ExpectGoldenOutputs(layer, "ffn_rmsnorm_silu");
}

TEST(DenseLayersJaxTest, FfnRmsNormSiluGradientsMatchJaxGrad) {
  LoweredLayer layer = Lower(
      LowerDenseFfn(FfnSpec(NORM_KIND_RMSNORM, ACTIVATION_KIND_SILU, Phase::kForwardBackward)));
  ASSERT_NE(layer.module, nullptr);
  ASSERT_EQ(layer.outputs.size(), 6u);  // y, dx, d_norm_scale, d_w0, d_w1, d_wo
  ExpectGoldenOutputs(layer, "ffn_rmsnorm_silu");
}

TEST(DenseLayersJaxTest, FfnLayerNormGeluGradientsMatchJaxGrad) {
  LoweredLayer layer = Lower(
      LowerDenseFfn(FfnSpec(NORM_KIND_LAYERNORM, ACTIVATION_KIND_GELU, Phase::kForwardBackward)));
  ASSERT_NE(layer.module, nullptr);
  ASSERT_EQ(layer.outputs.size(), 7u);  // ... d_norm_bias after d_norm_scale
  ExpectGoldenOutputs(layer, "ffn_layernorm_gelu");
}

TEST(DenseLayersJaxTest, FfnWithoutResidualDiffersFromTheGolden) {
  // The golden includes the residual add: dropping it must be visible (the test can fail).
  DenseFfnSpec spec = FfnSpec(NORM_KIND_RMSNORM, ACTIVATION_KIND_SILU, Phase::kForward);
  spec.residual = false;
  LoweredLayer layer = Lower(LowerDenseFfn(spec));
  ASSERT_NE(layer.module, nullptr);
  std::vector<std::vector<Literal>> out = RunOnGolden(layer, "ffn_rmsnorm_silu", 1);
  ASSERT_EQ(out.size(), 1u);
  int64_t worst = 0;
  EXPECT_GT(InfNormRelativeError(out[0][0], Load("ffn_rmsnorm_silu", "y"), &worst), 0.1);
}

TEST(DenseLayersJaxTest, EmbeddingForwardAndTableGradientMatchJax) {
  ExpectGoldenOutputs(Lower(LowerEmbedding(EmbedSpec(Phase::kForward))), "embedding");
  LoweredLayer layer = Lower(LowerEmbedding(EmbedSpec(Phase::kForwardBackward)));
  ASSERT_NE(layer.module, nullptr);
  ASSERT_EQ(layer.outputs.size(), 2u);  // y, d_table
  ExpectGoldenOutputs(layer, "embedding");
}

TEST(DenseLayersJaxTest, LmHeadLossMatchesJax) {
  LoweredLayer layer = Lower(LowerLmHead(HeadSpec(Phase::kForward)));
  ASSERT_NE(layer.module, nullptr);
  ASSERT_EQ(layer.outputs.size(), 1u);
  EXPECT_EQ(layer.outputs[0].global_dims, std::vector<int64_t>{});
  ExpectGoldenOutputs(layer, "lm_head");
}

TEST(DenseLayersJaxTest, LmHeadGradientsMatchJaxGrad) {
  LoweredLayer layer = Lower(LowerLmHead(HeadSpec(Phase::kForwardBackward)));
  ASSERT_NE(layer.module, nullptr);
  ASSERT_EQ(layer.outputs.size(), 4u);  // loss, dh, d_norm_scale, d_w_out
  ExpectGoldenOutputs(layer, "lm_head");
}

TEST(DenseLayersJaxTest, AdamWStepMatchesJax) {
  LoweredLayer layer = Lower(LowerAdamW(AdamSpec()));
  ASSERT_NE(layer.module, nullptr);
  std::vector<std::vector<Literal>> out = RunOnGolden(layer, "adamw", 1);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].size(), 3u);
  ExpectMatches("new_m", out[0][1], Load("adamw", "new_m"));
  ExpectMatches("new_v", out[0][2], Load("adamw", "new_v"));
  // new_param = p − lr·(...), an update of ~1e-4·|p|: an ∞-norm check against |p| would miss a
  // wrong update. Per element, allow the two f32 roundings of p' (2^-23·|p'| each, 2^-22 in
  // all, doubled for margin) plus 1e-5 of the update itself (its own few-ulp arithmetic).
  const Literal p = Load("adamw", "param"), want = Load("adamw", "new_param");
  int failures = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    const double w = want.GetAsDouble(i), got = out[0][0].GetAsDouble(i);
    const double allowed = std::ldexp(std::fabs(w), -21) + 1e-5 * std::fabs(w - p.GetAsDouble(i));
    if (std::fabs(got - w) > allowed && ++failures <= 5) {
      ADD_FAILURE() << "new_param[" << i << "]: got " << got << ", want " << w << " (update "
                    << w - p.GetAsDouble(i) << ")";
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(DenseLayersJaxTest, AdamWWithOtherHyperparametersDiffers) {
  // b2 = 0.999 instead of the golden's 0.95: the updates must no longer match.
  OptimizerSpec spec = AdamSpec();
  spec.b2 = 0.999;
  LoweredLayer layer = Lower(LowerAdamW(spec));
  ASSERT_NE(layer.module, nullptr);
  std::vector<std::vector<Literal>> out = RunOnGolden(layer, "adamw", 1);
  ASSERT_EQ(out.size(), 1u);
  int64_t worst = 0;
  EXPECT_GT(InfNormRelativeError(out[0][2], Load("adamw", "new_v"), &worst), 1e-3);
}

// The whole f32 golden with every tensor stored in bf16 (inputs rounded to bf16, the
// interpreter rounding after every op as XLA does; norms and weight-gradient accumulations
// in f32). Tolerance 3e-2: bf16's unit roundoff is 2^-9 ≈ 2e-3 and the longest chain (dx:
// norm, two matmuls, the activation and its gradient, three matmuls, the norm's gradient, the
// residual) rounds about ten times in sequence, ~2e-2 in the worst case (measured: at most
// 9.6e-3, d_w1).
TEST(DenseLayersJaxTest, FfnInBf16MatchesJaxWithinBf16Rounding) {
  DenseFfnSpec spec = FfnSpec(NORM_KIND_RMSNORM, ACTIVATION_KIND_SILU, Phase::kForwardBackward);
  spec.activation_type = spec.param_type = PrimitiveType::kBF16;
  LoweredLayer layer = Lower(LowerDenseFfn(spec));
  ASSERT_NE(layer.module, nullptr);
  std::vector<Literal> inputs;
  for (const TensorSpec& p : layer.parameters) {
    const Literal f32 = Load("ffn_rmsnorm_silu", p.name);
    Literal bf16(Shape::Array(PrimitiveType::kBF16, f32.shape().dimensions()));
    for (int64_t i = 0; i < f32.element_count(); ++i) bf16.SetFromDouble(i, f32.GetAsDouble(i));
    inputs.push_back(std::move(bf16));
  }
  absl::StatusOr<RunResult> run = RunModule(*layer.module, {inputs}, InterpreterOptions());
  ASSERT_TRUE(run.ok()) << run.status();
  for (size_t i = 0; i < layer.outputs.size(); ++i) {
    EXPECT_EQ(run->outputs[0][i].shape().element_type(), PrimitiveType::kBF16);
    ExpectMatches(layer.outputs[i].name, run->outputs[0][i],
                  Load("ffn_rmsnorm_silu", layer.outputs[i].name), 3e-2);
  }
}

// ---- Tensor parallelism: tp = 2 gives tp = 1's numbers ----

TEST(DenseLayersTpTest, FfnTp2MatchesTp1) {
  for (NormKind norm : {NORM_KIND_RMSNORM, NORM_KIND_LAYERNORM}) {
    const ActivationKind act =
        norm == NORM_KIND_RMSNORM ? ACTIVATION_KIND_SILU : ACTIVATION_KIND_GELU;
    const std::string golden =
        norm == NORM_KIND_RMSNORM ? "ffn_rmsnorm_silu" : "ffn_layernorm_gelu";
    LoweredLayer one = Lower(LowerDenseFfn(FfnSpec(norm, act, Phase::kForwardBackward, 1)));
    LoweredLayer two = Lower(LowerDenseFfn(FfnSpec(norm, act, Phase::kForwardBackward, 2)));
    ASSERT_NE(two.module, nullptr);
    ExpectTpMatchesTp1(one, two, 2, golden);
  }
}

TEST(DenseLayersTpTest, FfnTp2ShardsTheHiddenDimension) {
  LoweredLayer two = Lower(
      LowerDenseFfn(FfnSpec(NORM_KIND_RMSNORM, ACTIVATION_KIND_SILU, Phase::kForwardBackward, 2)));
  ASSERT_NE(two.module, nullptr);
  // x, norm_scale, w0 [D, F/2], w1 [D, F/2], wo [F/2, D], dy.
  const auto& params = two.module->entry()->parameters();
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(params[2]->shape().dimensions(), (std::vector<int64_t>{kD, kF / 2}));
  EXPECT_EQ(params[4]->shape().dimensions(), (std::vector<int64_t>{kF / 2, kD}));
  EXPECT_EQ(TpDim(two.parameters[2]), 1);
  EXPECT_EQ(TpDim(two.parameters[4]), 0);
  EXPECT_EQ(two.module->num_partitions(), 2);
  int all_reduces = 0;
  for (const auto& instruction : two.module->entry()->instructions()) {
    all_reduces += instruction->opcode() == Opcode::kAllReduce;
  }
  EXPECT_EQ(all_reduces, 2);  // y's partial sums; the norm output's gradient
}

TEST(DenseLayersTpTest, EmbeddingTp2MatchesTp1) {
  LoweredLayer one = Lower(LowerEmbedding(EmbedSpec(Phase::kForwardBackward, 1)));
  LoweredLayer two = Lower(LowerEmbedding(EmbedSpec(Phase::kForwardBackward, 2)));
  ASSERT_NE(two.module, nullptr);
  ExpectTpMatchesTp1(one, two, 2, "embedding");
}

TEST(DenseLayersTpTest, LmHeadTp2MatchesTp1) {
  LoweredLayer one = Lower(LowerLmHead(HeadSpec(Phase::kForwardBackward, 1)));
  LoweredLayer two = Lower(LowerLmHead(HeadSpec(Phase::kForwardBackward, 2)));
  ASSERT_NE(two.module, nullptr);
  ExpectTpMatchesTp1(one, two, 2, "lm_head");
  // Four ranks too (V/4 = 16 columns each): the max, sum and label all-reduces over 4.
  LoweredLayer four = Lower(LowerLmHead(HeadSpec(Phase::kForwardBackward, 4)));
  ASSERT_NE(four.module, nullptr);
  ExpectTpMatchesTp1(one, four, 4, "lm_head");
}

// ---- Bad specs ----

void ExpectError(const absl::Status& status, const std::string& substring) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find(substring), std::string::npos)
      << "expected '" << substring << "' in: " << status.message();
}

TEST(DenseLayersSpecTest, FfnRejectsHiddenNotDivisibleByTp) {
  ExpectError(
      LowerDenseFfn(FfnSpec(NORM_KIND_RMSNORM, ACTIVATION_KIND_SILU, Phase::kForward, 5)).status(),
      "dense_ffn: expected ffn_dim divisible by tp = 5; got 48");
}

TEST(DenseLayersSpecTest, FfnReportsEveryProblemAtOnce) {
  DenseFfnSpec spec = FfnSpec(NORM_KIND_UNSPECIFIED, ACTIVATION_KIND_SILU, Phase::kForward);
  spec.batch = 0;
  spec.ffn_dim = 0;
  spec.activation.set_gated(false);
  const absl::Status status = LowerDenseFfn(spec).status();
  ExpectError(status, "dense_ffn: expected batch > 0; got 0");
  ExpectError(status, "dense_ffn: expected ffn_dim > 0; got 0");
  ExpectError(status,
              "expected norm kind NORM_KIND_RMSNORM or NORM_KIND_LAYERNORM; got "
              "NORM_KIND_UNSPECIFIED");
  ExpectError(status,
              "expected a gated silu, gelu or clipped_swiglu activation; got ungated "
              "ACTIVATION_KIND_SILU");
}

TEST(DenseLayersSpecTest, EmbeddingAndLmHeadRejectVocabNotDivisibleByTp) {
  ExpectError(LowerEmbedding(EmbedSpec(Phase::kForward, 3)).status(),
              "embedding: expected vocab_size divisible by tp = 3; got 64");
  ExpectError(LowerLmHead(HeadSpec(Phase::kForward, 3)).status(),
              "lm_head: expected vocab_size divisible by tp = 3; got 64");
}

TEST(DenseLayersSpecTest, RejectsZeroSizes) {
  EmbeddingSpec embed = EmbedSpec(Phase::kForward);
  embed.vocab_size = 0;
  ExpectError(LowerEmbedding(embed).status(), "embedding: expected vocab_size > 0; got 0");
  LmHeadSpec head = HeadSpec(Phase::kForward);
  head.d_model = 0;
  ExpectError(LowerLmHead(head).status(), "lm_head: expected d_model > 0; got 0");
  ExpectError(LowerAdamW(AdamSpec(0)).status(), "adamw: expected num_params > 0; got 0");
  head = HeadSpec(Phase::kForward);
  head.seq = int64_t{1} << 40;
  ExpectError(LowerLmHead(head).status(), "lm_head: expected the logits [B, S, V] of at most");
}

TEST(DenseLayersSpecTest, AdamWRejectsBadHyperparameters) {
  OptimizerSpec spec = AdamSpec();
  spec.b1 = 1;
  spec.eps = -1;
  spec.grad_type = PrimitiveType::kS32;
  const absl::Status status = LowerAdamW(spec).status();
  ExpectError(status, "adamw: expected 0 <= b1 < 1; got 1");
  ExpectError(status, "adamw: expected eps >= 0; got -1");
  ExpectError(status, "adamw: expected grad type f32, bf16 or f16; got s32");
}

TEST(DenseLayersSpecTest, SpecsFromABuiltInModel) {
  absl::StatusOr<ModelConfig> model = ResolveModel("deepseek_v3");
  ASSERT_TRUE(model.ok()) << model.status();
  // F_dense = 18432 over tp = 8; bf16 weights and activations; RMSNorm.
  LoweredLayer ffn =
      Lower(LowerDenseFfn(DenseFfnSpec::FromModel(*model, 1, 128, 8, Phase::kForwardBackward)));
  ASSERT_NE(ffn.module, nullptr);
  const Instruction* w0 = ffn.module->entry()->parameter(2);
  EXPECT_EQ(w0->name(), "w0");
  EXPECT_EQ(w0->shape().dimensions(), (std::vector<int64_t>{7168, 18432 / 8}));
  EXPECT_EQ(w0->shape().element_type(), PrimitiveType::kBF16);
  // V = 129280 over tp = 8.
  LoweredLayer head = Lower(LowerLmHead(LmHeadSpec::FromModel(*model, 1, 128, 8, Phase::kForward)));
  ASSERT_NE(head.module, nullptr);
  EXPECT_EQ(head.module->entry()->parameter(2)->shape().dimensions(),
            (std::vector<int64_t>{129280 / 8, 7168}));
  EXPECT_TRUE(LowerEmbedding(EmbeddingSpec::FromModel(*model, 1, 128, 8, Phase::kForward)).ok());
  // GPT-OSS has no dense layers: F_dense = 0.
  absl::StatusOr<ModelConfig> gpt = ResolveModel("gpt_oss_120b");
  ASSERT_TRUE(gpt.ok()) << gpt.status();
  ExpectError(LowerDenseFfn(DenseFfnSpec::FromModel(*gpt, 1, 128, 1, Phase::kForward)).status(),
              "dense_ffn: expected ffn_dim > 0; got 0");
}

TEST(DenseLayersSpecTest, TiedEmbeddingsNameTheHeadWeightAfterTheEmbedding) {
  LmHeadSpec spec = HeadSpec(Phase::kForwardBackward);
  spec.tied_embeddings = true;
  LoweredLayer head = Lower(LowerLmHead(spec));
  ASSERT_NE(head.module, nullptr);
  EXPECT_EQ(head.parameters[2].name, "embedding");
  EXPECT_EQ(head.outputs.back().name, "d_embedding");
  EXPECT_EQ(head.parameters[2].global_dims, (std::vector<int64_t>{kV, kD}));
}

// ---- Annotations, verifier, text round trip ----

struct BlockCase {
  std::string name;
  absl::StatusOr<LoweredLayer> (*lower)();
  Annotation::Block block;
};

std::vector<BlockCase> AllBlocks() {
  return {
      {"ffn_fwd_bwd_tp2",
       [] {
         return LowerDenseFfn(
             FfnSpec(NORM_KIND_LAYERNORM, ACTIVATION_KIND_GELU, Phase::kForwardBackward, 2));
       },
       Annotation::BLOCK_DENSE_FFN},
      {"embedding_fwd_bwd_tp2",
       [] { return LowerEmbedding(EmbedSpec(Phase::kForwardBackward, 2)); },
       Annotation::BLOCK_EMBEDDING},
      {"lm_head_fwd_bwd_tp2", [] { return LowerLmHead(HeadSpec(Phase::kForwardBackward, 2)); },
       Annotation::BLOCK_LM_HEAD},
      {"adamw", [] { return LowerAdamW(AdamSpec()); }, Annotation::BLOCK_OPTIMIZER},
  };
}

TEST(DenseLayersModuleTest, EveryEntryInstructionHasBlockAndPhaseAndParametersTheirRole) {
  for (const BlockCase& c : AllBlocks()) {
    SCOPED_TRACE(c.name);
    LoweredLayer layer = Lower(c.lower());
    ASSERT_NE(layer.module, nullptr);
    EXPECT_TRUE(VerifyModule(*layer.module).ok());
    const Computation& entry = *layer.module->entry();
    int forward = 0, backward = 0;
    for (const auto& instruction : entry.instructions()) {
      const Annotation* a = instruction->annotation();
      ASSERT_NE(a, nullptr) << instruction->name();
      EXPECT_EQ(a->block(), c.block) << instruction->name();
      if (c.block == Annotation::BLOCK_OPTIMIZER) {
        EXPECT_EQ(a->phase(), Annotation::PHASE_OPTIMIZER) << instruction->name();
      } else {
        EXPECT_TRUE(a->phase() == Annotation::PHASE_FORWARD ||
                    a->phase() == Annotation::PHASE_BACKWARD)
            << instruction->name();
      }
      forward += a->phase() == Annotation::PHASE_FORWARD;
      backward += a->phase() == Annotation::PHASE_BACKWARD;
    }
    if (c.block != Annotation::BLOCK_OPTIMIZER) {
      EXPECT_GT(forward, 0);
      EXPECT_GT(backward, 0);
    }
    ASSERT_EQ(entry.parameter_count(), static_cast<int64_t>(layer.parameters.size()));
    for (int64_t i = 0; i < entry.parameter_count(); ++i) {
      const Instruction* p = entry.parameter(i);
      EXPECT_EQ(p->annotation()->role(), layer.parameters[i].role) << p->name();
      EXPECT_NE(layer.parameters[i].role, Annotation::ROLE_UNSPECIFIED) << p->name();
      EXPECT_NE(layer.parameters[i].role, Annotation::ROLE_ROUTING_INPUT) << p->name();
      // The cotangent is the backward's input; every other parameter the forward's.
      if (layer.parameters[i].role == Annotation::ROLE_COTANGENT) {
        EXPECT_EQ(p->annotation()->phase(), Annotation::PHASE_BACKWARD);
      } else if (c.block != Annotation::BLOCK_OPTIMIZER) {
        EXPECT_EQ(p->annotation()->phase(), Annotation::PHASE_FORWARD);
      }
    }
    // The first output is the forward's result (y or the loss).
    if (c.block != Annotation::BLOCK_OPTIMIZER) {
      EXPECT_EQ(entry.root()->operand(0)->annotation()->phase(), Annotation::PHASE_FORWARD);
    }
  }
}

TEST(DenseLayersModuleTest, ModulesPrintAndParseBack) {
  for (const BlockCase& c : AllBlocks()) {
    SCOPED_TRACE(c.name);
    LoweredLayer layer = Lower(c.lower());
    ASSERT_NE(layer.module, nullptr);
    const std::string text = PrintModule(*layer.module);
    absl::StatusOr<std::unique_ptr<Module>> parsed = ParseHloModule(text, c.name + ".hlo");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(VerifyModule(**parsed).ok());
    EXPECT_EQ(PrintModule(**parsed), text);
    // The annotations survive the text.
    EXPECT_EQ((*parsed)->entry()->root()->annotation()->block(), c.block);
  }
}

// ---- The simulator times every block ----

struct Timed {
  Timeline timeline;
  Chip chip;
};

Timed Simulate(const Module& module) {
  absl::StatusOr<Chip> chip = ResolveChip("tpu_v5p");
  EXPECT_TRUE(chip.ok()) << chip.status();
  absl::StatusOr<Topology> topology = TopologyForModule(module, *chip, "");
  EXPECT_TRUE(topology.ok()) << topology.status();
  absl::StatusOr<Timeline> t = SimulateModule(module, *chip, *topology);
  EXPECT_TRUE(t.ok()) << t.status();
  return Timed{t.ok() ? *std::move(t) : Timeline(), *chip};
}

TEST(DenseLayersSimulatorTest, EveryBlockHasAPositiveTimeAndNoUntimedOps) {
  // Llama-3-8B-like sizes, 4096 tokens per device, bf16.
  DenseFfnSpec ffn = FfnSpec(NORM_KIND_RMSNORM, ACTIVATION_KIND_SILU, Phase::kForwardBackward, 4);
  ffn.batch = 1, ffn.seq = 4096, ffn.d_model = 4096, ffn.ffn_dim = 14336;
  ffn.activation_type = ffn.param_type = PrimitiveType::kBF16;
  EmbeddingSpec embed = EmbedSpec(Phase::kForwardBackward, 4);
  embed.batch = 1, embed.seq = 4096, embed.d_model = 4096, embed.vocab_size = 128256;
  embed.activation_type = embed.param_type = PrimitiveType::kBF16;
  LmHeadSpec head = HeadSpec(Phase::kForwardBackward, 4);
  head.batch = 1, head.seq = 4096, head.d_model = 4096, head.vocab_size = 128256;
  head.activation_type = head.param_type = PrimitiveType::kBF16;
  std::vector<std::pair<std::string, LoweredLayer>> layers;
  layers.emplace_back("dense_ffn", Lower(LowerDenseFfn(ffn)));
  layers.emplace_back("embedding", Lower(LowerEmbedding(embed)));
  layers.emplace_back("lm_head", Lower(LowerLmHead(head)));
  layers.emplace_back("adamw", Lower(LowerAdamW(AdamSpec(int64_t{1} << 30))));
  for (const auto& [name, layer] : layers) {
    SCOPED_TRACE(name);
    ASSERT_NE(layer.module, nullptr);
    Timed t = Simulate(*layer.module);
    EXPECT_GT(t.timeline.step_seconds, 0);
    EXPECT_TRUE(t.timeline.untimed.empty()) << t.timeline.untimed.front();
    // tpu_v5p's description leaves the transcendental and f32 vector rates unset ("Not in the
    // references", hardware/tpu_v5p.textproto); those ops' times are lower bounds. No other
    // rate may be missing.
    for (const std::string& rate : t.timeline.unknown_rates) {
      EXPECT_TRUE(rate == "compute.transcendentals_per_second" ||
                  rate == "compute.vector_f32_flops_per_second")
          << rate;
    }
    std::cout << name << ": step " << t.timeline.step_seconds * 1e3 << " ms, serial "
              << t.timeline.serial_seconds * 1e3 << " ms, flops " << t.timeline.flops
              << ", exposed communication " << t.timeline.exposed_communication * 1e3 << " ms\n";
  }
}

TEST(DenseLayersSimulatorTest, DenseFfnIsComputeBoundAndOptimizerIsMemoryBound) {
  // The FFN's matmuls dominate its time: 6 matmuls of 2·T·D·F/tp flops for fwd_bwd plus the
  // forward's 3 = 9·2·4096·4096·14336/4 ≈ 1.1e12 flops per device.
  DenseFfnSpec ffn = FfnSpec(NORM_KIND_RMSNORM, ACTIVATION_KIND_SILU, Phase::kForwardBackward, 4);
  ffn.batch = 1, ffn.seq = 4096, ffn.d_model = 4096, ffn.ffn_dim = 14336;
  ffn.activation_type = ffn.param_type = PrimitiveType::kBF16;
  LoweredLayer ffn_layer = Lower(LowerDenseFfn(ffn));
  ASSERT_NE(ffn_layer.module, nullptr);
  Timed f = Simulate(*ffn_layer.module);
  EXPECT_GE(f.timeline.flops, 9 * 2.0 * 4096 * 4096 * 14336 / 4);
  double compute = 0;
  for (const TimelineOp& op : f.timeline.ops)
    compute += op.bound == Bound::kCompute ? op.seconds : 0;
  EXPECT_GT(compute, 0.5 * f.timeline.serial_seconds);

  // AdamW on 2^30 f32 parameters is one loop fusion that reads param, grad, m, v (and two
  // scalars) and writes param, m, v: 7·4·2^30 bytes (+8), so its time is that over the chip's
  // HBM bandwidth (within 1%: a kernel's fixed overhead and the scalar arithmetic are
  // microseconds against ~11 ms), and the op is memory-bound.
  const int64_t n = int64_t{1} << 30;
  LoweredLayer adam = Lower(LowerAdamW(AdamSpec(n)));
  ASSERT_NE(adam.module, nullptr);
  Timed a = Simulate(*adam.module);
  const double min_bytes = 7.0 * 4 * n;
  const double hbm_seconds = min_bytes / a.chip.hbm_bytes_per_second();
  double memory = 0, bytes = 0;
  for (const TimelineOp& op : a.timeline.ops) {
    if (op.bound == Bound::kMemory) memory += op.seconds;
    bytes += op.bytes;
  }
  EXPECT_GE(bytes, min_bytes);
  EXPECT_LE(bytes, min_bytes + 64);
  EXPECT_GE(a.timeline.step_seconds, hbm_seconds);
  EXPECT_LE(a.timeline.step_seconds, 1.01 * hbm_seconds);
  EXPECT_GT(memory, 0.99 * a.timeline.serial_seconds);
  std::cout << "adamw 2^30: step " << a.timeline.step_seconds * 1e3 << " ms, HBM bytes " << bytes
            << ", HBM bound " << hbm_seconds * 1e3 << " ms\n";
}

}  // namespace
}  // namespace perfsim
