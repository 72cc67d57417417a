// The router's forward, checked against hand-derived values for every router family. The dense
// reference shares LowerRouter with every backend, so `perfsim validate` cannot catch a router
// that is wrong everywhere; these cases can.
//
// Setup: D = E = 4, T = 2 tokens, x[t] = the unit vector e_t, so logits[t] = W[t, :] (x·W picks
// row t of W; rows 2 and 3 are zero and unused). Each case writes the logits it wants into W as
// logarithms or logits of round numbers, so softmax and sigmoid give those numbers back:
//   softmax(ln a) = a / Σa,   σ(ln(p / (1 − p))) = p.
// Values compare with 1e-6 absolute (f32 rounding of numbers of order 1).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/interp/interpreter.h"
#include "sim/ir/builder.h"
#include "sim/lowering/named_builder.h"
#include "sim/lowering/router.h"
#include "sim/moe/model_registry.h"

namespace perfsim {
namespace {

constexpr int64_t kT = 2, kD = 4, kE = 4;

double Logit(double p) { return std::log(p / (1 - p)); }

struct RouterRun {
  std::vector<std::vector<int64_t>> ids;       // [T][K]
  std::vector<std::vector<double>> weights;    // [T][K]
  std::vector<std::vector<double>> input_scale;  // [T][K] (sigmoid_prescale only)
};

// A model with E = 4 experts and the given router; K from `k`.
ModelConfig Model(const RouterSpec& router, int64_t k) {
  absl::StatusOr<ModelConfig> nano = ResolveModel("nano");
  EXPECT_TRUE(nano.ok()) << nano.status();
  ModelSpec proto = nano->proto();
  proto.set_d_model(kD);
  proto.set_num_experts(kE);
  proto.set_experts_per_token(k);
  *proto.mutable_router() = router;
  proto.mutable_router()->set_dtype(DTYPE_F32);
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(proto);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

// Lowers LowerRouter alone and runs it with logits[t] = rows[t] (and the given biases).
RouterRun RunRouter(const ModelConfig& model, const std::vector<std::vector<double>>& rows,
              const std::vector<double>& bias = {}, const std::vector<double>& score_bias = {}) {
  ModuleBuilder mb("router");
  ComputationBuilder& b = mb.Entry("main");
  DimNameTable names;
  NamedBuilder nb(mb, b, &names);
  mb.SetOpNameScope("moe/router");
  Tensor x = nb.Parameter(0, "x", PrimitiveType::kF32, "TD", {kT, kD});
  Tensor w = nb.Parameter(1, "router_w", PrimitiveType::kF32, "DE", {kD, kE});
  Tensor bias_t, score_t;
  int64_t next = 2;
  if (!bias.empty()) bias_t = nb.Parameter(next++, "router_bias", PrimitiveType::kF32, "E", {kE});
  if (!score_bias.empty()) {
    score_t = nb.Parameter(next++, "router_score_bias", PrimitiveType::kF32, "E", {kE});
  }
  RouterOutputs r = LowerRouter(nb, model, x, w, bias.empty() ? nullptr : &bias_t,
                                score_bias.empty() ? nullptr : &score_t);
  std::vector<Instruction*> outs = {r.ids.op, r.weights.op};
  if (r.input_scale.op != nullptr) outs.push_back(r.input_scale.op);
  b.SetRoot(b.Tuple(outs));
  absl::StatusOr<std::unique_ptr<Module>> module = mb.Build();
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};

  std::vector<Literal> inputs;
  Literal xl(Shape::Array(PrimitiveType::kF32, {kT, kD}));
  for (int64_t t = 0; t < kT; ++t) xl.SetFromDouble(t * kD + t, 1.0);
  Literal wl(Shape::Array(PrimitiveType::kF32, {kD, kE}));
  for (int64_t t = 0; t < kT; ++t) {
    for (int64_t e = 0; e < kE; ++e) wl.SetFromDouble(t * kE + e, rows[t][e]);
  }
  inputs.push_back(std::move(xl));
  inputs.push_back(std::move(wl));
  for (const std::vector<double>* v : {&bias, &score_bias}) {
    if (v->empty()) continue;
    Literal l(Shape::Array(PrimitiveType::kF32, {kE}));
    for (int64_t e = 0; e < kE; ++e) l.SetFromDouble(e, (*v)[e]);
    inputs.push_back(std::move(l));
  }
  absl::StatusOr<RunResult> run = RunModule(**module, {inputs}, InterpreterOptions());
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok()) return {};
  const std::vector<Literal>& out = run->outputs[0];
  const int64_t k = model.experts_per_token();
  RouterRun result;
  for (int64_t t = 0; t < kT; ++t) {
    result.ids.emplace_back();
    result.weights.emplace_back();
    result.input_scale.emplace_back();
    for (int64_t j = 0; j < k; ++j) {
      result.ids[t].push_back(static_cast<int64_t>(out[0].GetAsDouble(t * k + j)));
      result.weights[t].push_back(out[1].GetAsDouble(t * k + j));
      if (out.size() > 2) result.input_scale[t].push_back(out[2].GetAsDouble(t * k + j));
    }
  }
  return result;
}

void ExpectNear(const std::vector<std::vector<double>>& got,
                const std::vector<std::vector<double>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t t = 0; t < want.size(); ++t) {
    ASSERT_EQ(got[t].size(), want[t].size());
    for (size_t j = 0; j < want[t].size(); ++j) {
      EXPECT_NEAR(got[t][j], want[t][j], 1e-6) << "token " << t << " slot " << j;
    }
  }
}

std::vector<double> Logs(std::vector<double> v) {
  for (double& e : v) e = std::log(e);
  return v;
}

RouterSpec Spec(RouterKind kind) {
  RouterSpec r;
  r.set_kind(kind);
  r.set_num_groups(1);
  r.set_topk_groups(1);
  r.set_routed_scaling_factor(1);
  return r;
}

// Token 0: logits ln(1, 2, 3, 4) -> softmax (.1, .2, .3, .4). Token 1: ln(4, 1, 1, 2) ->
// softmax (.5, .125, .125, .25).
const std::vector<std::vector<double>> kSoftmaxRows = {Logs({1, 2, 3, 4}), Logs({4, 1, 1, 2})};

TEST(RouterReferenceTest, SoftmaxTopKPicksTheLargestProbabilities) {
  // Top-2 of the probabilities: token 0 experts 3 (.4), 2 (.3); token 1 experts 0 (.5), 3 (.25).
  RouterRun r = RunRouter(Model(Spec(ROUTER_KIND_SOFTMAX_TOPK), 2), kSoftmaxRows);
  EXPECT_EQ(r.ids, (std::vector<std::vector<int64_t>>{{3, 2}, {0, 3}}));
  ExpectNear(r.weights, {{0.4, 0.3}, {0.5, 0.25}});
}

TEST(RouterReferenceTest, SoftmaxTopKRenormalisedSumsToOne) {
  // Qwen3's norm_topk_prob: (.4, .3) / .7 = (4/7, 3/7); (.5, .25) / .75 = (2/3, 1/3).
  RouterSpec spec = Spec(ROUTER_KIND_SOFTMAX_TOPK);
  spec.set_renormalize(true);
  RouterRun r = RunRouter(Model(spec, 2), kSoftmaxRows);
  EXPECT_EQ(r.ids, (std::vector<std::vector<int64_t>>{{3, 2}, {0, 3}}));
  ExpectNear(r.weights, {{4.0 / 7, 3.0 / 7}, {2.0 / 3, 1.0 / 3}});
}

TEST(RouterReferenceTest, TopKSoftmaxIsASoftmaxOverTheChosenLogits) {
  // Mixtral: top-2 logits ln 4, ln 3 -> softmax (4/7, 3/7); ln 4, ln 2 -> (2/3, 1/3). The same
  // numbers as the renormalised softmax, as models.md section 3 says they must be.
  RouterRun r = RunRouter(Model(Spec(ROUTER_KIND_TOPK_SOFTMAX), 2), kSoftmaxRows);
  EXPECT_EQ(r.ids, (std::vector<std::vector<int64_t>>{{3, 2}, {0, 3}}));
  ExpectNear(r.weights, {{4.0 / 7, 3.0 / 7}, {2.0 / 3, 1.0 / 3}});
}

TEST(RouterReferenceTest, RouterBiasIsAddedToTheLogits) {
  // GPT-OSS: l = x·W + b with b = ln(1, 1, 1, 3): token 0 l = ln(1, 2, 3, 12) -> top-2 experts
  // 3, 2 with softmax (12/15, 3/15) = (.8, .2); token 1 l = ln(4, 1, 1, 6) -> experts 3, 0 with
  // (6/10, 4/10). A bias used only for the choice (DeepSeek's) would give token 0 (4/7, 3/7),
  // and token 1 the order 0, 3.
  RouterSpec spec = Spec(ROUTER_KIND_TOPK_SOFTMAX);
  spec.set_has_bias(true);
  RouterRun r = RunRouter(Model(spec, 2), kSoftmaxRows, Logs({1, 1, 1, 3}));
  EXPECT_EQ(r.ids, (std::vector<std::vector<int64_t>>{{3, 2}, {3, 0}}));
  ExpectNear(r.weights, {{0.8, 0.2}, {0.6, 0.4}});
}

RouterSpec DeepSeekSpec() {
  RouterSpec spec = Spec(ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK);
  spec.set_num_groups(2);  // {0, 1} and {2, 3}
  spec.set_topk_groups(1);
  spec.set_group_score(GROUP_SCORE_TOP2_SUM);
  spec.set_renormalize(true);
  spec.set_routed_scaling_factor(2.5);
  return spec;
}

// Sigmoid scores s: token 0 (.5, .2, .6, .3), token 1 (.9, .1, .55, .5).
const std::vector<std::vector<double>> kSigmoidRows = {
    {Logit(.5), Logit(.2), Logit(.6), Logit(.3)}, {Logit(.9), Logit(.1), Logit(.55), Logit(.5)}};

TEST(RouterReferenceTest, SigmoidGroupedKeepsTheBestGroupAndRenormalisesAndScales) {
  // No bias. Group scores (sum of the group's top 2 = the whole group of 2): token 0 .7 vs .9,
  // token 1 1.0 vs 1.05: both keep group 1, experts 2, 3. Weights s / Σ s · 2.5:
  //   token 0 (.6, .3) / .9 · 2.5 = (5/3, 5/6); token 1 (.55, .5) / 1.05 · 2.5.
  RouterRun r = RunRouter(Model(DeepSeekSpec(), 2), kSigmoidRows);
  EXPECT_EQ(r.ids, (std::vector<std::vector<int64_t>>{{2, 3}, {2, 3}}));
  ExpectNear(r.weights, {{5.0 / 3, 5.0 / 6}, {.55 / 1.05 * 2.5, .5 / 1.05 * 2.5}});
}

TEST(RouterReferenceTest, ScoreCorrectionBiasChoosesButDoesNotWeigh) {
  // DeepSeek-V3 with c = (.3, 0, 0, 0): s + c gives group 0 the scores .8 + .2 = 1.0 > .9
  // (token 0) and 1.2 + .1 = 1.3 > 1.05 (token 1), so group 0 wins; top-2 of s + c in it:
  // experts 0, 1. The weights use s WITHOUT c: token 0 (.5, .2) / .7 · 2.5 = (25/14, 5/7);
  // token 1 (.9, .1) / 1.0 · 2.5 = (2.25, .25). With c in the weights token 0 would get
  // (.8, .2)·2.5 = (2, .5); with c added to the logits (a router bias) σ(0 + .3) ≠ .8.
  RouterSpec spec = DeepSeekSpec();
  spec.set_has_score_correction_bias(true);
  RouterRun r = RunRouter(Model(spec, 2), kSigmoidRows, {}, {.3, 0, 0, 0});
  EXPECT_EQ(r.ids, (std::vector<std::vector<int64_t>>{{0, 1}, {0, 1}}));
  ExpectNear(r.weights, {{25.0 / 14, 5.0 / 7}, {2.25, 0.25}});
}

TEST(RouterReferenceTest, SigmoidGroupedWithTheMaxGroupScore) {
  // DeepSeek-V2's group score is the group's best score: token 0 max(.5, .2) = .5 vs .6 ->
  // group 1; token 1 .9 vs .55 -> group 0 (the sum would have picked group 1: 1.0 < 1.05).
  RouterSpec spec = DeepSeekSpec();
  spec.set_group_score(GROUP_SCORE_MAX);
  RouterRun r = RunRouter(Model(spec, 2), kSigmoidRows);
  EXPECT_EQ(r.ids, (std::vector<std::vector<int64_t>>{{2, 3}, {0, 1}}));
  ExpectNear(r.weights, {{5.0 / 3, 5.0 / 6}, {2.25, 0.25}});
}

TEST(RouterReferenceTest, SigmoidPrescaleScalesTheInputAndWeighsOne) {
  // Llama 4, K = 1: token 0 logits ln(1, 2, 3, 4) -> expert 3, input scale σ(ln 4) = 4/5;
  // token 1 logits ln(9, 1, 1, 2) -> expert 0, σ(ln 9) = 9/10. Combine weight 1.
  RouterRun r = RunRouter(Model(Spec(ROUTER_KIND_SIGMOID_INPUT_PRESCALE), 1),
                    {Logs({1, 2, 3, 4}), Logs({9, 1, 1, 2})});
  EXPECT_EQ(r.ids, (std::vector<std::vector<int64_t>>{{3}, {0}}));
  ExpectNear(r.weights, {{1}, {1}});
  ExpectNear(r.input_scale, {{0.8}, {0.9}});
}

}  // namespace
}  // namespace perfsim
