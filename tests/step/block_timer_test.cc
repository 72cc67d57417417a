// SimulatedBlockTimer (sim/step/block_timer.h): blocks lowered and simulated, identical layers
// once, and an fp8 step's GEMMs at the chip's fp8 rate.
#include "sim/step/block_timer.h"

#include <string>

#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/lowering/dense_layers.h"
#include "sim/moe/model_registry.h"

namespace perfsim {
namespace {

struct H100Node {
  Chip chip = *ResolveChip("gpu_h100");
  Topology topology = *Topology::Create(chip, "8");
};

TrainingStep DeepSeekStep(PrecisionKind precision) {
  TrainingStepSpec proto;
  proto.set_model("deepseek_v3");
  proto.set_devices(8);
  proto.set_global_batch(8);
  proto.set_seq_len(4096);
  proto.mutable_parallelism()->set_ep(8);
  proto.mutable_parallelism()->set_pp(1);
  proto.mutable_precision()->set_compute(precision);
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  EXPECT_TRUE(step.ok()) << step.status();
  return *std::move(step);
}

// The H100's dense fp8 rate is twice its bf16 rate (1979 against 989 TFLOP/s): an fp8 step's
// dense FFN (DeepSeek-V3's layer 0, 7168 x 18432, compute-bound at 4096 tokens) and attention
// projections run faster; the attention core (flash, bf16) and the MoE experts (bf16 in this
// model: block_timer.h) do not change.
TEST(BlockTimerTest, Fp8StepRunsItsDenseGemmsAtTheFp8Rate) {
  H100Node s;
  SimulatedBlockTimer timer(s.chip, s.topology);
  const TrainingStep bf16 = DeepSeekStep(PRECISION_BF16);
  const TrainingStep fp8 = DeepSeekStep(PRECISION_FP8);
  absl::StatusOr<BlockTiming> dense_bf16 = timer.Ffn(bf16, 0);
  absl::StatusOr<BlockTiming> dense_fp8 = timer.Ffn(fp8, 0);
  ASSERT_TRUE(dense_bf16.ok() && dense_fp8.ok());
  // Compute-bound GEMMs: at most ~0.6x the bf16 time (half the compute, plus the element-wise
  // norm, activation and residual, which do not change).
  EXPECT_LT(dense_fp8->forward_seconds, 0.7 * dense_bf16->forward_seconds);
  EXPECT_LT(dense_fp8->backward_seconds, 0.7 * dense_bf16->backward_seconds);
  absl::StatusOr<BlockTiming> attn_bf16 = timer.Attention(bf16, 0);
  absl::StatusOr<BlockTiming> attn_fp8 = timer.Attention(fp8, 0);
  ASSERT_TRUE(attn_bf16.ok() && attn_fp8.ok());
  EXPECT_LT(attn_fp8->forward_seconds, attn_bf16->forward_seconds);
  EXPECT_EQ(attn_fp8->core_forward_seconds, attn_bf16->core_forward_seconds);
  absl::StatusOr<BlockTiming> moe_bf16 = timer.Ffn(bf16, 3);
  absl::StatusOr<BlockTiming> moe_fp8 = timer.Ffn(fp8, 3);
  ASSERT_TRUE(moe_bf16.ok() && moe_fp8.ok());
  EXPECT_EQ(moe_fp8->forward_seconds, moe_bf16->forward_seconds);
}

// The fp8 lowering itself: the dense FFN's dots read f8e4m3fn operands and write bf16.
TEST(BlockTimerTest, Fp8GemmsConvertTheirOperands) {
  absl::StatusOr<ModelConfig> model = ResolveModel("deepseek_v3");
  ASSERT_TRUE(model.ok());
  DenseFfnSpec spec = DenseFfnSpec::FromModel(*model, 1, 128, 1, Phase::kForward);
  spec.activation_type = PrimitiveType::kBF16;
  spec.param_type = PrimitiveType::kBF16;
  spec.fp8_gemms = true;
  absl::StatusOr<LoweredLayer> layer = LowerDenseFfn(spec);
  ASSERT_TRUE(layer.ok()) << layer.status();
  int dots = 0;
  for (const auto& instruction : layer->module->entry()->instructions()) {
    if (instruction->opcode() != Opcode::kDot) continue;
    ++dots;
    EXPECT_EQ(instruction->shape().element_type(), PrimitiveType::kBF16);
    for (const Instruction* operand : instruction->operands()) {
      EXPECT_EQ(operand->shape().element_type(), PrimitiveType::kF8E4M3FN);
    }
  }
  EXPECT_EQ(dots, 3);  // w0, w1, wo
}

}  // namespace
}  // namespace perfsim
