// fused_expert_ffn: the perfsim.fused_ffn reference kernel against a hand-written loop, the
// validate suite in both tilings, the tiling the kernel call carries, the row padding and its
// poisoned rows, and a transposed weight on a model with D == F.
//
// Model nano (D = 40, F = 56, E = 12, K = 2), batch 4 × seq 16 = 64 tokens; on one device the
// kernel sees m = T·K = 128 sorted rows.
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/interpreter.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/ir/hlo_parser.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/util/status_matchers.h"
#include "sim/validate/validate.h"
#include "tests/lowering/lowering_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::ExpectAllPass;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::TestStepSpec;
using ::perfsim::testing::WithModel;
using ::perfsim::testing::WithSquareExperts;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kBackend[] = "fused_expert_ffn";

// ---- the interpreter's perfsim.fused_ffn ----

// x [4, 2]; two groups with D = 2, F = 3; group sizes [1, 2], so row 3 belongs to no group.
std::string KernelModule(absl::string_view config) {
  return absl::StrCat(R"(HloModule fused
ENTRY main {
  x = f32[4,2] parameter(0)
  wi_0 = f32[2,2,3] parameter(1)
  wi_1 = f32[2,2,3] parameter(2)
  wo = f32[2,3,2] parameter(3)
  gs = s32[2] parameter(4)
  ROOT out = f32[4,2] custom-call(x, wi_0, wi_1, wo, gs), custom_call_target="perfsim.fused_ffn", backend_config=)",
                      config, "\n}\n");
}

Literal Filled(Shape shape, double start, double step) {
  Literal lit(shape);
  for (int64_t i = 0; i < lit.element_count(); ++i) lit.SetFromDouble(i, start + step * i);
  return lit;
}

absl::StatusOr<RunResult> RunKernel(absl::string_view config, std::vector<Literal>* inputs) {
  PERFSIM_ASSIGN_OR_RETURN(std::unique_ptr<Module> module,
                           ParseHloModule(KernelModule(config), "fused.hlo"));
  *inputs = {Filled(Shape::Array(PrimitiveType::kF32, {4, 2}), -0.8, 0.3),
             Filled(Shape::Array(PrimitiveType::kF32, {2, 2, 3}), -0.5, 0.09),
             Filled(Shape::Array(PrimitiveType::kF32, {2, 2, 3}), -0.4, 0.07),
             Filled(Shape::Array(PrimitiveType::kF32, {2, 3, 2}), 0.3, -0.05),
             Literal(Shape::Array(PrimitiveType::kS32, {2}))};
  (*inputs)[4].SetFromDouble(0, 1);
  (*inputs)[4].SetFromDouble(1, 2);
  return RunModule(*module, {*inputs}, InterpreterOptions());
}

// The FFN of one row in double, straight from the formulas of custom_calls.h.
std::vector<double> ExpectedRow(const std::vector<Literal>& in, int64_t row, int64_t g,
                                const std::string& activation) {
  const int64_t d = 2, f = 3;
  std::vector<double> out(d, 0.0);
  for (int64_t j = 0; j < f; ++j) {
    double h0 = 0, h1 = 0;
    for (int64_t p = 0; p < d; ++p) {
      h0 += in[0].GetAsDouble(row * d + p) * in[1].GetAsDouble((g * d + p) * f + j);
      h1 += in[0].GetAsDouble(row * d + p) * in[2].GetAsDouble((g * d + p) * f + j);
    }
    double a = 0;
    if (activation == "silu") {
      a = h0 / (1 + std::exp(-h0)) * h1;
    } else {
      // clipped_swiglu, L = 0.1, α = 1.702. h0 and h1 lie in [0.16, 0.52] in rows 0 and 2
      // (clipped) and in [0.005, 0.023] in row 1 (not clipped).
      const double gate = std::min(h0, 0.1), up = std::max(std::min(h1, 0.1), -0.1);
      a = gate / (1 + std::exp(-1.702 * gate)) * (up + 1);
    }
    for (int64_t c = 0; c < d; ++c) out[c] += a * in[3].GetAsDouble((g * f + j) * d + c);
  }
  return out;
}

void ExpectKernelMatches(absl::string_view config, const std::string& activation) {
  std::vector<Literal> inputs;
  absl::StatusOr<RunResult> run = RunKernel(config, &inputs);
  ASSERT_TRUE(run.ok()) << run.status();
  const Literal& out = run->outputs[0][0];
  // Rows 0 (group 0), 1 and 2 (group 1); f32 sums of at most 3 products: 1e-6 relative.
  const int64_t group_of_row[] = {0, 1, 1};
  for (int64_t row = 0; row < 3; ++row) {
    const std::vector<double> want = ExpectedRow(inputs, row, group_of_row[row], activation);
    for (int64_t c = 0; c < 2; ++c) {
      EXPECT_NEAR(out.GetAsDouble(row * 2 + c), want[c], 1e-6 * std::max(1.0, std::fabs(want[c])))
          << "row " << row << " col " << c;
    }
  }
  // Row 3 belongs to no group and every group is local: never written, so poisoned.
  EXPECT_TRUE(std::isnan(out.GetAsDouble(6)));
  EXPECT_TRUE(std::isnan(out.GetAsDouble(7)));
}

TEST(FusedFfnKernelTest, ComputesTheGatedFfnOfEachGroup) {
  ExpectKernelMatches(R"({"tiling":[2,2,1],"tiled_dim":"F","activation":"silu"})", "silu");
  ExpectKernelMatches(R"({"tiling":[4,1,3],"tiled_dim":"D","activation":"silu"})", "silu");
  ExpectKernelMatches(R"({"tiling":[2,2,3],"tiled_dim":"F","activation":"clipped_swiglu",)"
                      R"("clip_limit":0.1,"sigmoid_alpha":1.702})",
                      "clipped_swiglu");
}

TEST(FusedFfnKernelTest, RejectsBadConfigs) {
  std::vector<Literal> inputs;
  EXPECT_THAT(
      RunKernel(R"({"tiling":[3,2,3],"tiled_dim":"F","activation":"silu"})", &inputs).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("expected m = 4 to be a multiple of the row tile tm = 3")));
  EXPECT_THAT(
      RunKernel(R"({"tiling":[2,1,3],"tiled_dim":"F","activation":"silu"})", &inputs).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("expected a tiling over F with td = D = 2 and a tile in [1, 3]; "
                         "got (2, 1, 3)")));
  EXPECT_THAT(
      RunKernel(R"({"tiling":[2,2,3],"tiled_dim":"X","activation":"silu"})", &inputs).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("expected backend_config \"tiled_dim\" \"F\" or \"D\"; got 'X'")));
  EXPECT_THAT(
      RunKernel(R"({"tiling":[2,2,3],"tiled_dim":"F","activation":"relu"})", &inputs).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("silu, gelu or clipped_swiglu; got 'relu'")));
  EXPECT_THAT(RunKernel(R"({"tiled_dim":"F","activation":"silu"})", &inputs).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected backend_config \"tiling\":[tm,td,tf]")));
}

// ---- the backend ----

StepSpec NanoSpec(Phase phase) { return TestStepSpec("nano", kBackend, phase); }

// nano with F = D = 40.
StepSpec SquareSpec(Phase phase) { return WithSquareExperts(NanoSpec(phase)); }

TEST(FusedExpertFfnTest, ValidateSuitePassesEveryCaseTiledOverF) {
  SuiteOptions options{.base = NanoSpec(Phase::kForward), .backends = {kBackend}};
  // 5 router families × 4 routings × 2 phases × devices 1, 2, 4, 8.
  EXPECT_EQ(ExpectAllPass(RunSuite(options)), 160);
}

TEST(FusedExpertFfnTest, ValidateSuitePassesTiledOverDWithPaddedRows) {
  SuiteOptions options{
      .base = NanoSpec(Phase::kForward), .backends = {kBackend}, .devices = {1, 2}};
  options.base.knobs.fused_tiling = FusedFfnTiling::kOverD;
  options.base.knobs.fused_tile = 16;
  options.base.knobs.wi.fwd.tm = 24;  // 128 -> 144 rows (64 -> 72)
  EXPECT_EQ(ExpectAllPass(RunSuite(options)), 80);
}

TEST(FusedExpertFfnTest, ValidateSuitePassesForGeluAndClippedSwiglu) {
  for (ActivationKind kind : {ACTIVATION_KIND_GELU, ACTIVATION_KIND_CLIPPED_SWIGLU}) {
    SuiteOptions options{.base = WithModel(NanoSpec(Phase::kForward),
                                           [&](ModelSpec& m) {
                                             m.mutable_activation()->set_kind(kind);
                                             if (kind != ACTIVATION_KIND_CLIPPED_SWIGLU) return;
                                             // Small enough that some h0, h1 are clipped.
                                             m.mutable_activation()->set_clip_limit(0.25);
                                             m.mutable_activation()->set_sigmoid_alpha(1.702);
                                           }),
                         .backends = {kBackend},
                         .routers = {RouterFamily::kSoftmaxTopK},
                         .devices = {1, 2}};
    EXPECT_EQ(ExpectAllPass(RunSuite(options)), 16) << ActivationKind_Name(kind);
  }
}

std::vector<const Instruction*> Calls(const Module& module, absl::string_view target) {
  std::vector<const Instruction*> calls;
  for (const auto& instruction : module.entry()->instructions()) {
    if (instruction->attributes().custom_call_target == target) calls.push_back(instruction.get());
  }
  return calls;
}

TEST(FusedExpertFfnTest, KernelCallCarriesItsTilingOnPaddedRows) {
  // m = T·K = 128 rows; wi.fwd tm 24 pads them to m_p = ⌈128/24⌉·24 = 144 (megablox_calls.h).
  // Over F with fused_tile 32: (tm, td, tf) = (24, D = 40, min(32, F = 56) = 32).
  StepSpec spec = NanoSpec(Phase::kForward);
  spec.knobs.wi.fwd.tm = 24;
  spec.knobs.fused_tile = 32;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<const Instruction*> calls = Calls(*step->module, kFusedFfnTarget);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]->shape().dimensions(), (std::vector<int64_t>{144, 40}));
  EXPECT_EQ(calls[0]->operand(0)->shape().dimensions(), (std::vector<int64_t>{144, 40}));
  EXPECT_EQ(*calls[0]->attributes().backend_config,
            R"({"tiling":[24,40,32],"tiled_dim":"F","activation":"silu","group_offset":0})");
  EXPECT_TRUE(Calls(*step->module, kGmmTarget).empty());

  // Over D with fused_tile 0: td = the wo.fwd tn 1024 clamped to D = 40, tf = F = 56.
  spec.knobs.fused_tiling = FusedFfnTiling::kOverD;
  spec.knobs.fused_tile = 0;
  step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  calls = Calls(*step->module, kFusedFfnTarget);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(*calls[0]->attributes().backend_config,
            R"({"tiling":[24,40,56],"tiled_dim":"D","activation":"silu","group_offset":0})");

  // GPT-OSS's clipped SwiGLU carries its constants exactly; fused_tile 16 over D -> td = 16.
  spec.knobs.fused_tile = 16;
  spec = WithModel(spec, [](ModelSpec& m) {
    m.mutable_activation()->set_kind(ACTIVATION_KIND_CLIPPED_SWIGLU);
    m.mutable_activation()->set_clip_limit(7);
    m.mutable_activation()->set_sigmoid_alpha(1.702);
  });
  step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  calls = Calls(*step->module, kFusedFfnTarget);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(*calls[0]->attributes().backend_config,
            R"({"tiling":[24,16,56],"tiled_dim":"D","activation":"clipped_swiglu",)"
            R"("clip_limit":7,"sigmoid_alpha":1.702,"group_offset":0})");
}

TEST(FusedExpertFfnTest, BackwardRecomputesWithGmmAndTgmm) {
  // Backward: h0, h1 recomputed (2 gmm), da (gmm), d_rows (2 gmm); d_wo, d_wi_0, d_wi_1 (tgmm).
  absl::StatusOr<LoweredStep> step = LowerStep(NanoSpec(Phase::kForwardBackward));
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(Calls(*step->module, kFusedFfnTarget).size(), 1u);
  EXPECT_EQ(Calls(*step->module, kGmmTarget).size(), 5u);
  EXPECT_EQ(Calls(*step->module, kTgmmTarget).size(), 3u);
}

TEST(FusedExpertFfnTest, RejectsBadTilings) {
  StepSpec spec = NanoSpec(Phase::kForwardBackward);
  spec.knobs.wi.fwd.tm = 24;   // m_p = 144
  spec.knobs.wo.dlhs.tm = 96;  // does not divide 144
  EXPECT_THAT(LowerStep(spec).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("wo.dlhs tiling (96, 1024, 1024)"),
                             HasSubstr("expected tm dividing the padded row count m = 144"),
                             HasSubstr("got tm = 96"))));
  spec.phase = Phase::kForward;  // the forward makes no dlhs call
  EXPECT_TRUE(LowerStep(spec).ok());
  spec.knobs.fused_tile = -8;
  EXPECT_THAT(LowerStep(spec).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fused_ffn tiling: expected positive tiles (tm, tk, tn); got "
                                 "(24, 40, -8)")));
}

TEST(FusedExpertFfnTest, PoisonedPaddingRowsNeverReachAnOutput) {
  StepSpec spec = NanoSpec(Phase::kForwardBackward);
  spec.knobs.wi.fwd.tm = 24;  // 128 rows padded to 144
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<Literal> inputs = MakeGlobalInputs(*step, RoutingCase::kSkewed, /*seed=*/1);
  std::mutex mutex;
  int kernel_calls = 0;
  int64_t padding_nan = 0, padding_values = 0, covered_non_finite = 0;
  InterpreterOptions options;
  options.observer = [&](int64_t, const Instruction& instruction, const Literal& value) {
    const std::string& target = instruction.attributes().custom_call_target;
    if (target != kFusedFfnTarget && target != kGmmTarget) return;
    std::lock_guard<std::mutex> lock(mutex);
    ++kernel_calls;
    const int64_t n = value.shape().dimensions(1);
    for (int64_t i = 0; i < value.element_count(); ++i) {
      if (i / n >= 128) {
        ++padding_values;
        padding_nan += std::isnan(value.GetAsDouble(i)) ? 1 : 0;
      } else if (!std::isfinite(value.GetAsDouble(i))) {
        ++covered_non_finite;
      }
    }
  };
  absl::StatusOr<RunResult> run = RunModule(*step->module, {inputs}, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(kernel_calls, 6);  // fused_ffn + 5 gmm
  EXPECT_EQ(padding_values, 16 * (40 + 56 + 56 + 56 + 40 + 40));
  EXPECT_EQ(padding_nan, padding_values);
  EXPECT_EQ(covered_non_finite, 0);
  for (size_t o = 0; o < run->outputs[0].size(); ++o) {
    const Literal& out = run->outputs[0][o];
    for (int64_t i = 0; i < out.element_count(); ++i) {
      ASSERT_TRUE(std::isfinite(out.GetAsDouble(i))) << step->outputs[o].name << " at " << i;
    }
  }
  ReferenceCache cache;
  ValidationResult r =
      ValidateLowered(*step, ValidationCase{.spec = spec, .routing = RoutingCase::kSkewed}, cache);
  EXPECT_TRUE(r.pass) << r.message;
}

TEST(FusedExpertFfnTest, SquareModelPassesAndATransposedWeightFails) {
  SuiteOptions options{
      .base = SquareSpec(Phase::kForward), .backends = {kBackend}, .devices = {1, 2}};
  EXPECT_EQ(ExpectAllPass(RunSuite(options)), 80);
  ReferenceCache cache;

  // Mutation 1: the fused kernel is given wi_0 transposed, [E, F, D] where it expects
  // [E, D, F] (same shape since D == F). The static checks do not look inside perfsim.fused_ffn,
  // so the numbers must catch it.
  {
    absl::StatusOr<LoweredStep> step = LowerStep(SquareSpec(Phase::kForward));
    ASSERT_TRUE(step.ok()) << step.status();
    std::vector<const Instruction*> calls = Calls(*step->module, kFusedFfnTarget);
    ASSERT_EQ(calls.size(), 1u);
    Instruction* fused = const_cast<Instruction*>(calls[0]);
    Instruction* wi_0 = fused->operand(1);
    ASSERT_EQ(wi_0->name(), "wi_0");
    auto transposed =
        std::make_unique<Instruction>(Opcode::kTranspose, "wi_0_transposed", wi_0->shape());
    transposed->AppendOperand(wi_0);
    transposed->mutable_attributes()->dimensions = std::vector<int64_t>{0, 2, 1};
    Instruction* t = step->module->entry()->AddInstruction(std::move(transposed));
    step->dim_names[t] = "EFD";
    fused->set_operand(1, t);
    ValidationResult r = ValidateLowered(*step, ValidationCase{.spec = step->spec}, cache);
    EXPECT_FALSE(r.pass);
    EXPECT_THAT(r.message, HasSubstr("y differs from dense_einsum"));
  }

  // Mutation 2: the backward's recompute gmm of h0 reads wi_0 as [E, F, D] (transpose_rhs
  // flipped): the static check names D contracted with F.
  {
    absl::StatusOr<LoweredStep> step = LowerStep(SquareSpec(Phase::kForwardBackward));
    ASSERT_TRUE(step.ok()) << step.status();
    Instruction* mutated = nullptr;
    for (const Instruction* call : Calls(*step->module, kGmmTarget)) {
      if (call->operand(1)->name() == "wi_0" &&
          call->attributes().backend_config->find("\"transpose_rhs\":false") != std::string::npos) {
        ASSERT_EQ(mutated, nullptr) << "one recompute gmm of wi_0 expected";
        mutated = const_cast<Instruction*>(call);
      }
    }
    ASSERT_NE(mutated, nullptr);
    std::string& config = *mutated->mutable_attributes()->backend_config;
    config.replace(config.find("\"transpose_rhs\":false"),
                   std::string("\"transpose_rhs\":false").size(), "\"transpose_rhs\":true");
    ValidationResult r = ValidateLowered(*step, ValidationCase{.spec = step->spec}, cache);
    EXPECT_FALSE(r.pass);
    EXPECT_THAT(r.message, AllOf(HasSubstr("static check"), HasSubstr(mutated->name()),
                                 HasSubstr("(D, size 40) vs rhs wi_0 dimension 2 (F, size 40)"),
                                 HasSubstr("known_bugs.md #2")));
  }
}

}  // namespace
}  // namespace perfsim
