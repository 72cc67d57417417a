// The explicit backward of the reference (dense_einsum) checked by finite differences, for every
// router family and every gated activation. dense_einsum's softmax_topk_norm path is also
// checked against jax.grad (dense_einsum_jax_test.cc); the other families have no JAX golden,
// and every backend shares the router's backward, so cross-backend comparison cannot catch a
// wrong router gradient. This test can.
//
// Method: L(θ) = Σ y(θ)·dy. For each parameter p and a random direction v (unit 2-norm), the
// central difference (L(θ + εv) − L(θ − εv)) / 2ε must equal Σ grad_p·v. f32 evaluation noise:
// |y| = O(1) over T·D = 320 outputs rounds L to ~1e-6; divided by 2ε = 2e-3 that is 5e-4
// absolute. Truncation error is O(ε²·L''') ~ 1e-6. We normalise the difference by |grad_p|₂
// (the Cauchy-Schwarz bound of the directional derivative) and require ≤ 2e-3; the gradients
// here have norms 0.5..5. Checked by mutation: with the renormalisation term of softmax_topk_norm
// dropped, or σ' replaced by σ in the sigmoid routers, the normalised error is 0.007..0.1 in at
// least one trial of x or router_w, and the test fails.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/interp/interpreter.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/validate/validate.h"

namespace perfsim {
namespace {

struct Case {
  RouterFamily router;
  ActivationKind activation;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  const char* act = info.param.activation == ACTIVATION_KIND_SILU   ? "silu"
                    : info.param.activation == ACTIVATION_KIND_GELU ? "gelu"
                                                                    : "clipped";
  return std::string(RouterFamilyName(info.param.router)) + "_" + act;
}

class RouterGradientTest : public testing::TestWithParam<Case> {};

double Loss(const Module& fwd, const std::vector<Literal>& inputs, const Literal& dy) {
  absl::StatusOr<RunResult> run = RunModule(fwd, {inputs}, InterpreterOptions());
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok()) return 0;
  const Literal& y = run->outputs[0][0];
  double loss = 0;
  for (int64_t i = 0; i < y.element_count(); ++i) loss += y.GetAsDouble(i) * dy.GetAsDouble(i);
  return loss;
}

TEST_P(RouterGradientTest, MatchesFiniteDifferences) {
  absl::StatusOr<ModelConfig> nano = ResolveModel("nano");
  ASSERT_TRUE(nano.ok()) << nano.status();
  ModelSpec proto = nano->proto();
  proto.mutable_activation()->set_kind(GetParam().activation);
  if (GetParam().activation == ACTIVATION_KIND_CLIPPED_SWIGLU) {
    // GPT-OSS's constants; a limit of 1 makes part of the inputs clip, exercising both branches.
    proto.mutable_activation()->set_clip_limit(1.0);
    proto.mutable_activation()->set_sigmoid_alpha(1.702);
  }
  absl::StatusOr<ModelConfig> base = ModelConfig::FromProto(proto);
  ASSERT_TRUE(base.ok()) << base.status();
  absl::StatusOr<ModelConfig> model = WithRouter(*base, GetParam().router);
  ASSERT_TRUE(model.ok()) << model.status();

  StepSpec spec = StepSpec::Defaults(*model);
  spec.batch = 1;
  spec.seq = 8;
  spec.phase = Phase::kForwardBackward;
  absl::StatusOr<LoweredStep> bwd = LowerStep(spec);
  ASSERT_TRUE(bwd.ok()) << bwd.status();
  spec.phase = Phase::kForward;
  absl::StatusOr<LoweredStep> fwd = LowerStep(spec);
  ASSERT_TRUE(fwd.ok()) << fwd.status();

  std::vector<Literal> inputs = MakeGlobalInputs(*bwd, RoutingCase::kRandom, /*seed=*/7);
  // Top-k is discontinuous: a token whose K-th and (K+1)-th logits lie closer than the
  // perturbation (ε·|v_e| ≈ 1e-3) would make the finite difference measure a jump, not a
  // derivative. For the families that choose by the logits' order (all but sigmoid_grouped,
  // whose biased, grouped choice the check below does not model) require a clear gap.
  if (GetParam().router != RouterFamily::kSigmoidGrouped) {
    const int64_t t_count = spec.tokens(), d = model->d_model(), e = model->num_experts();
    const int64_t k = model->experts_per_token();
    for (int64_t t = 0; t < t_count; ++t) {
      std::vector<double> logits(e, 0.0);
      for (int64_t j = 0; j < e; ++j) {
        for (int64_t i = 0; i < d; ++i) {
          logits[j] += inputs[0].GetAsDouble(t * d + i) * inputs[1].GetAsDouble(i * e + j);
        }
        if (bwd->parameters[5].name == "router_bias") logits[j] += inputs[5].GetAsDouble(j);
      }
      std::sort(logits.rbegin(), logits.rend());
      ASSERT_GT(logits[k - 1] - logits[k], 1e-2) << "token " << t << ": a near tie";
    }
  }
  absl::StatusOr<RunResult> grads = RunModule(*bwd->module, {inputs}, InterpreterOptions());
  ASSERT_TRUE(grads.ok()) << grads.status();
  const Literal dy = inputs.back();
  std::vector<Literal> fwd_inputs(inputs.begin(), inputs.end() - 1);

  // Output i + 1 is the gradient of the i-th parameter that has one (router_score_bias, the
  // score-correction bias, has none; the router matmul bias of topk_softmax has one).
  int64_t output = 1;
  uint64_t state = 12345;
  for (size_t p = 0; p + 1 < inputs.size(); ++p) {
    const std::string& name = bwd->parameters[p].name;
    if (name == "router_score_bias") continue;
    const Literal& grad = grads->outputs[0][output++];
    ASSERT_EQ(grad.element_count(), inputs[p].element_count()) << name;
    for (int trial = 0; trial < 2; ++trial) {
      std::vector<double> v(grad.element_count());
      double norm = 0, grad_norm = 0, analytic = 0;
      for (double& e : v) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        e = static_cast<double>(state >> 11) * 0x1.0p-53 - 0.5;
        norm += e * e;
      }
      norm = std::sqrt(norm);
      for (int64_t i = 0; i < grad.element_count(); ++i) {
        v[i] /= norm;
        analytic += grad.GetAsDouble(i) * v[i];
        grad_norm += grad.GetAsDouble(i) * grad.GetAsDouble(i);
      }
      grad_norm = std::sqrt(grad_norm);
      const double eps = 1e-3;
      auto shifted = [&](double sign) {
        std::vector<Literal> in;
        for (const Literal& l : fwd_inputs) in.push_back(l);
        for (int64_t i = 0; i < grad.element_count(); ++i) {
          in[p].SetFromDouble(i, inputs[p].GetAsDouble(i) + sign * eps * v[i]);
        }
        return Loss(*fwd->module, in, dy);
      };
      const double numeric = (shifted(1) - shifted(-1)) / (2 * eps);
      EXPECT_GT(grad_norm, 1e-3) << name << ": a vanishing gradient would make the test vacuous";
      EXPECT_LE(std::fabs(numeric - analytic) / grad_norm, 2e-3)
          << name << " trial " << trial << ": finite difference " << numeric << ", analytic "
          << analytic << ", |grad| " << grad_norm;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllFamilies, RouterGradientTest,
    testing::Values(Case{RouterFamily::kSoftmaxTopK, ACTIVATION_KIND_SILU},
                    Case{RouterFamily::kSoftmaxTopKNorm, ACTIVATION_KIND_SILU},
                    Case{RouterFamily::kTopKSoftmax, ACTIVATION_KIND_SILU},
                    Case{RouterFamily::kSigmoidGrouped, ACTIVATION_KIND_SILU},
                    Case{RouterFamily::kSigmoidPrescale, ACTIVATION_KIND_SILU},
                    Case{RouterFamily::kSoftmaxTopKNorm, ACTIVATION_KIND_GELU},
                    Case{RouterFamily::kSoftmaxTopKNorm, ACTIVATION_KIND_CLIPPED_SWIGLU}),
    CaseName);

}  // namespace
}  // namespace perfsim
