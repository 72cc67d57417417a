// Proof that `perfsim validate` catches the bugs of shared/reference/known_bugs.md it is
// responsible for, each by a deliberately broken variant of a lowering (the mutation lives
// here, in test code) and the message naming the cause. Entries covered elsewhere: #1
// (validate_test.cc, megablox_gmm_test.cc, fused_expert_ffn_test.cc), #10
// (grouped_gemm_aligned_test.cc, ep_ragged_a2a_test.cc), #17 (ep_ragged_a2a_test.cc). Here:
//   #2   a grouped matmul's rhs read as [G, N, K] (silent when N == K) or stacked rank 4;
//   #4   a kernel's tk and tn swapped;
//   #23  megablox's f32 default tiles overflowing v5p's scoped VMEM, which a lowering that
//        shrinks tiles to the dimensions hides;
//   #28  the router computing in bf16.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/fit/module_fit.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/checks.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/validate/validate.h"
#include "tests/lowering/lowering_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::TestStepSpec;
using ::perfsim::testing::WithSquareExperts;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Testdata(const std::string& path) {
  return std::string(PERFSIM_TESTDATA_DIR) + "/" + path;
}

// 2 sequences of 16 tokens.
StepSpec Spec(const std::string& model, const std::string& backend, Phase phase) {
  return TestStepSpec(model, backend, phase, /*batch=*/2, /*seq=*/16);
}

// nano with F = D = 40.
StepSpec SquareSpec(const std::string& backend, Phase phase) {
  return WithSquareExperts(Spec("nano", backend, phase));
}

// The ragged-dots of the forward expert stage whose rhs is the parameter `weight`.
std::vector<Instruction*> RaggedDotsOn(const LoweredStep& step, const std::string& weight) {
  std::vector<Instruction*> found;
  for (const auto& i : step.module->entry()->instructions()) {
    if (i->opcode() == Opcode::kRaggedDot && i->operand(1)->name() == weight &&
        StageNameOf(*i) == "experts") {
      found.push_back(i.get());
    }
  }
  return found;
}

// known_bugs.md #2, silent form: the down-projection's ragged_dot reads wo [E, F, D] as if it
// were [E, D, F] (rhs contracting dimension 2 instead of 1), on a model where D == F.
TEST(KnownBugsTest, RaggedDotRhsReadAsGnkIsCaughtByNamesAndByNumbers) {
  StepSpec spec = SquareSpec("sparse_ragged_dot", Phase::kForward);
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<Instruction*> wo = RaggedDotsOn(*step, "wo");
  ASSERT_EQ(wo.size(), 1u);
  RaggedDotDimensionNumbers& d = *wo[0]->mutable_attributes()->ragged_dot_dimension_numbers;
  ASSERT_EQ(d.dot.rhs_contracting_dimensions, (std::vector<int64_t>{1}));
  d.dot.rhs_contracting_dimensions = {2};

  ReferenceCache cache;
  ValidationResult r = ValidateLowered(*step, {.spec = spec}, cache);
  EXPECT_FALSE(r.pass);
  EXPECT_THAT(r.message,
              AllOf(HasSubstr("static check"), HasSubstr(wo[0]->name()),
                    HasSubstr("(F, size 40) vs rhs wo dimension 2 (D, size 40)"),
                    HasSubstr("[G, N, K] instead of [G, K, N] (known_bugs.md #2")));
  // A module without names (a user's) is caught by the numbers.
  step->dim_names.clear();
  ValidationResult numbers = ValidateLowered(*step, {.spec = spec}, cache);
  EXPECT_FALSE(numbers.pass);
  EXPECT_THAT(numbers.message, HasSubstr("y differs from dense_einsum"));
}

// known_bugs.md #2, the TE form: wi_0 and wi_1 stacked into one rank-4 [E, 2, D, F] rhs
// instead of concatenated along the last axis. Shape checks of a real grouped GEMM do not see
// it ("walks off the end of the RHS and returns NaN"); the structural check does, names or not.
TEST(KnownBugsTest, StackedRankFourGroupedRhsIsRefused) {
  StepSpec spec = Spec("nano", "sparse_ragged_dot", Phase::kForward);
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<Instruction*> wi_0 = RaggedDotsOn(*step, "wi_0");
  ASSERT_EQ(wi_0.size(), 1u);
  Instruction* weight = wi_0[0]->operand(1);
  std::vector<int64_t> dims = weight->shape().dimensions();  // [12, 40, 56]
  auto stacked = std::make_unique<Instruction>(
      Opcode::kReshape, "wi_stacked",
      Shape::Array(weight->shape().element_type(), {dims[0], 1, dims[1], dims[2]}));
  stacked->AppendOperand(weight);
  wi_0[0]->set_operand(1, step->module->entry()->AddInstruction(std::move(stacked)));
  step->dim_names.clear();

  ReferenceCache cache;
  ValidationResult r = ValidateLowered(*step, {.spec = spec}, cache);
  EXPECT_FALSE(r.pass);
  EXPECT_THAT(r.message, AllOf(HasSubstr("static check"), HasSubstr(wi_0[0]->name()),
                               HasSubstr("expected a rank-3 grouped rhs; got rank 4"),
                               HasSubstr("known_bugs.md #2")));
}

// The gmm kernel call of `role` in `step`.
Instruction* KernelCall(const LoweredStep& step, const std::string& role) {
  for (const auto& i : step.module->entry()->instructions()) {
    if (i->opcode() == Opcode::kCustomCall && i->annotation() != nullptr &&
        KernelRoleOf(i->annotation()->kernel()) == role) {
      return i.get();
    }
  }
  return nullptr;
}

// known_bugs.md #4 (maxtext 6ce6ef62e): the wo tile tuple passed in (m, embed, mlp) order where
// the kernel wants (m, k = mlp, n = embed), so tk and tn land on each other's dimension. The
// numbers stay right (megablox masks k and n remainders); only the roles show it.
TEST(KnownBugsTest, SwappedTileRolesAreCaught) {
  StepSpec spec = Spec("nano", "megablox_gmm", Phase::kForward);
  // wo.fwd planned as (tm 64, tk = 16 on the contraction F, tn = 8 on the output D).
  spec.knobs.wo.fwd = {64, 16, 8};
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  Instruction* wo = KernelCall(*step, "wo.fwd");
  ASSERT_NE(wo, nullptr);
  std::string& config = *wo->mutable_attributes()->backend_config;
  const std::string planned = R"("tiling":[64,16,8])";
  ASSERT_NE(config.find(planned), std::string::npos) << config;
  config.replace(config.find(planned), planned.size(), R"("tiling":[64,8,16])");

  ReferenceCache cache;
  ValidationResult r = ValidateLowered(*step, {.spec = spec}, cache);
  EXPECT_FALSE(r.pass);
  EXPECT_THAT(r.message,
              AllOf(HasSubstr("static check"), HasSubstr(wo->name() + " (wo.fwd)"),
                    HasSubstr("expected the tiling (64, 16, 8)"),
                    HasSubstr("tk on the contraction k = 56 and tn on the output n = 40"),
                    HasSubstr("got (64, 8, 16): tk and tn are swapped"),
                    HasSubstr("known_bugs.md #4")));
}

// known_bugs.md #23's repro: v5p, batch 4, seq 512, D = 2048, F = 512, E = 8, K = 8, f32 in and
// out, megablox tiles (512, 1024, 1024). m = 4·512·8 = 16384 rows. The wi forward gmm's blocks
// at full tile size (tn = 1024 > n = F = 512: Pallas allocates the block, not the clipped dim):
//   lhs 2·512·1024·4 + rhs 2·1024·1024·4 + out 2·512·1024·4 + acc 512·1024·4
//   = 4 + 8 + 4 + 2 = 18 MiB > v5p's 16 MiB scoped default.
// bf16 in and out halves the first three: 2 + 4 + 2 + 2 = 10 MiB, which fits.
StepSpec Bug23Spec(DType dtype) {
  StepSpec spec = Spec("nano", "megablox_gmm", Phase::kForward);
  ModelSpec proto = spec.model.proto();
  proto.set_name("known_bug_23");
  proto.set_d_model(2048);
  proto.set_expert_ffn_dim(512);
  proto.set_num_experts(8);
  proto.set_experts_per_token(8);
  proto.set_num_shared_experts(0);
  proto.set_shared_expert_ffn_dim(0);
  proto.set_param_dtype(dtype);
  proto.set_activation_dtype(dtype);
  *proto.mutable_router() = RouterSpec();
  proto.mutable_router()->set_kind(ROUTER_KIND_SOFTMAX_TOPK);
  proto.mutable_router()->set_dtype(DTYPE_F32);
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(proto);
  EXPECT_TRUE(model.ok()) << model.status();
  spec.model = *model;
  spec.batch = 4;
  spec.seq = 512;
  return spec;  // StepSpec::Defaults: every tiling (512, 1024, 1024)
}

TEST(KnownBugsTest, F32DefaultTilesOverflowV5pVmemAsInTheLog) {
  absl::StatusOr<Chip> v5p = ResolveChip("tpu_v5p");
  ASSERT_TRUE(v5p.ok()) << v5p.status();
  StepSpec spec = Bug23Spec(DTYPE_F32);
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  Instruction* wi = KernelCall(*step, "wi.fwd");
  ASSERT_NE(wi, nullptr);
  EXPECT_EQ(wi->operand(0)->shape().dimensions(), (std::vector<int64_t>{16384, 2048}));
  EXPECT_THAT(*wi->attributes().backend_config, HasSubstr(R"("tiling":[512,1024,1024])"));

  // validate fit-checks before it runs anything.
  ReferenceCache cache;
  ValidationResult r = ValidateLowered(*step, {.spec = spec, .chip = &*v5p}, cache);
  EXPECT_FALSE(r.pass);
  EXPECT_THAT(r.message, AllOf(HasSubstr("fit on tpu_v5p"), HasSubstr(wi->name()),
                               HasSubstr("needs 18 MiB"), HasSubstr("limit 16 MiB")));

  // The bug a shrinking lowering hides (the mutation: tiles clipped to each call's k and n, as
  // this lowering did): the wi call, (512, 1024, min(1024, F = 512)), claims
  // 4 + 4 + 2 + 1 = 11 MiB; the wo call, (512, min(1024, F = 512), 1024), 2 + 4 + 4 + 2 = 12 MiB.
  // Both "fit", and the OOM the log shows would only appear on the TPU.
  for (const auto& i : step->module->entry()->instructions()) {
    if (i->opcode() != Opcode::kCustomCall) continue;
    std::string& config = *i->mutable_attributes()->backend_config;
    const std::string full = R"("tiling":[512,1024,1024])";
    const int64_t k = i->operand(0)->shape().dimensions(1), n = i->shape().dimensions(1);
    config.replace(config.find(full), full.size(),
                   "\"tiling\":[512," + std::to_string(std::min<int64_t>(1024, k)) + "," +
                       std::to_string(std::min<int64_t>(1024, n)) + "]");
  }
  EXPECT_TRUE(CheckModuleFits(*step->module, *v5p, std::nullopt).ok());

  // The bf16 run of the same configuration fits, as in the log.
  absl::StatusOr<LoweredStep> bf16 = LowerStep(Bug23Spec(DTYPE_BF16));
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_TRUE(CheckModuleFits(*bf16->module, *v5p, std::nullopt).ok());
}

// known_bugs.md #28: a router that keeps its math in the activation dtype. The mutation retypes
// every f32 floating value of the router stage to bf16 (what leaving out the f32 casts does),
// on nano_bf16, whose router is f32 as every model here.
TEST(KnownBugsTest, RouterInBf16IsCaught) {
  StepSpec spec = Spec(Testdata("validate/nano_bf16.textproto"), "sparse_ragged_dot",
                       Phase::kForward);
  absl::StatusOr<ModelConfig> model = WithRouter(spec.model, RouterFamily::kSoftmaxTopKNorm);
  ASSERT_TRUE(model.ok()) << model.status();
  spec.model = *model;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  ASSERT_TRUE(CheckRouterPrecision(*step).ok()) << CheckRouterPrecision(*step);
  const Instruction* divide = nullptr;
  for (const auto& i : step->module->entry()->instructions()) {
    if (StageNameOf(*i) != "router" || !i->shape().IsArray() ||
        i->shape().element_type() != PrimitiveType::kF32) {
      continue;
    }
    i->mutable_shape()->set_element_type(PrimitiveType::kBF16);
    if (i->opcode() == Opcode::kDivide) divide = i.get();
  }
  ASSERT_NE(divide, nullptr) << "softmax_topk_norm divides by Σ_K w";

  ReferenceCache cache;
  ValidationResult r = ValidateLowered(*step, {.spec = spec}, cache);
  EXPECT_FALSE(r.pass);
  EXPECT_THAT(r.message, AllOf(HasSubstr("static check"), HasSubstr("(moe/router)"),
                               HasSubstr("expected the router's math in f32; got bf16"),
                               HasSubstr("known_bugs.md #28")));
  // With only the renormalisation left in bf16, the check names it as such.
  for (const auto& i : step->module->entry()->instructions()) {
    if (i.get() != divide && StageNameOf(*i) == "router" && i->shape().IsArray() &&
        i->shape().element_type() == PrimitiveType::kBF16) {
      i->mutable_shape()->set_element_type(PrimitiveType::kF32);
    }
  }
  EXPECT_THAT(CheckRouterPrecision(*step).message(),
              AllOf(HasSubstr(divide->name()),
                    HasSubstr("a low-precision normalisation by a sum that can underflow")));
}

}  // namespace
}  // namespace perfsim
