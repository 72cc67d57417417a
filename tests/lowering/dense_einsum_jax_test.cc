// dense_einsum, perfsim's numerical reference, against JAX: the committed goldens
// moe_dense_einsum_fwd / moe_dense_einsum_grad (tools/jax/moe_models.py: T=64, D=24, F=40,
// E=16, K=2, softmax over E, top-k, renormalised, SwiGLU, f32; the gradient is jax.grad of
// sum(y · cotangent)). perfsim lowers the same step itself (explicit backward, no autodiff),
// runs it in the interpreter on the golden inputs, and must match JAX's outputs.
//
// Tolerance: ∞-norm relative error ≤ 1e-5. Both sides compute in f32 with different
// summation orders (perfsim sums over E densely, JAX through XLA:CPU's fused dots), which gives
// errors of a few f32 ulps (~1e-7) per accumulation over at most D·E = 384 products.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/npy.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_config.h"

namespace perfsim {
namespace {

ModelConfig GoldenModel() {
  ModelSpec spec;
  spec.set_name("jax_golden");
  spec.set_d_model(24);
  spec.set_expert_ffn_dim(40);
  spec.set_num_experts(16);
  spec.set_experts_per_token(2);
  spec.set_num_layers(1);
  spec.set_num_moe_layers(1);
  spec.mutable_activation()->set_kind(ACTIVATION_KIND_SILU);
  spec.mutable_activation()->set_gated(true);
  spec.mutable_router()->set_kind(ROUTER_KIND_SOFTMAX_TOPK);
  spec.mutable_router()->set_renormalize(true);
  spec.mutable_router()->set_dtype(DTYPE_F32);
  spec.set_param_dtype(DTYPE_F32);
  spec.set_activation_dtype(DTYPE_F32);
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

Literal Load(const std::string& name) {
  absl::StatusOr<Literal> lit =
      ReadNpyFile(absl::StrCat(PERFSIM_TESTDATA_DIR, "/hlo/jax/", name));
  EXPECT_TRUE(lit.ok()) << name << ": " << lit.status();
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

void ExpectMatches(absl::string_view tensor, const Literal& got, const Literal& want) {
  ASSERT_EQ(got.shape().dimensions(), want.shape().dimensions()) << tensor;
  int64_t worst = 0;
  const double error = InfNormRelativeError(got, want, &worst);
  EXPECT_LE(error, 1e-5) << tensor << " at linear index " << worst << ": got "
                         << got.GetAsDouble(worst) << ", want " << want.GetAsDouble(worst);
}

TEST(DenseEinsumJaxTest, ForwardMatchesJax) {
  StepSpec spec = StepSpec::Defaults(GoldenModel());
  spec.batch = 1;
  spec.seq = 64;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<Literal> inputs;
  for (int i = 0; i < 5; ++i) {
    inputs.push_back(Load("moe_dense_einsum_fwd.in" + std::to_string(i) + ".npy"));
  }
  absl::StatusOr<RunResult> run = RunModule(*step->module, {inputs}, InterpreterOptions());
  ASSERT_TRUE(run.ok()) << run.status();
  ExpectMatches("y", run->outputs[0][0], Load("moe_dense_einsum_fwd.out0.npy"));
}

TEST(DenseEinsumJaxTest, GradientsMatchJaxGrad) {
  StepSpec spec = StepSpec::Defaults(GoldenModel());
  spec.batch = 1;
  spec.seq = 64;
  spec.phase = Phase::kForwardBackward;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  // Parameters x, router_w, wi_0, wi_1, wo, dy: the golden's order (cotangent last).
  std::vector<Literal> inputs;
  for (int i = 0; i < 6; ++i) {
    inputs.push_back(Load("moe_dense_einsum_grad.in" + std::to_string(i) + ".npy"));
  }
  absl::StatusOr<RunResult> run = RunModule(*step->module, {inputs}, InterpreterOptions());
  ASSERT_TRUE(run.ok()) << run.status();
  const char* names[] = {"dx", "d_router_w", "d_wi_0", "d_wi_1", "d_wo"};
  for (int i = 0; i < 5; ++i) {
    // outputs: y, then the gradients in parameter order.
    ExpectMatches(names[i], run->outputs[0][i + 1],
                  Load("moe_dense_einsum_grad.out" + std::to_string(i) + ".npy"));
  }
}

}  // namespace
}  // namespace perfsim
