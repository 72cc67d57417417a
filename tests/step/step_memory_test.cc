// HBM per device of a whole step (sim/step/step_memory.h) against hand-derived goldens.
#include "sim/step/step_memory.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"

namespace perfsim {
namespace {

Chip ChipNamed(const std::string& name) {
  absl::StatusOr<Chip> chip = ResolveChip(name);
  EXPECT_TRUE(chip.ok()) << chip.status();
  return *chip;
}

TrainingStep Step(const std::string& model, int64_t devices, int64_t gbs, int64_t seq,
                  const std::string& parallelism,
                  const std::function<void(TrainingStepSpec&)>& edit = {}) {
  TrainingStepSpec proto;
  proto.set_model(model);
  proto.set_devices(devices);
  proto.set_global_batch(gbs);
  proto.set_seq_len(seq);
  EXPECT_TRUE(ApplyParallelismString(parallelism, proto).ok());
  if (edit) edit(proto);
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  EXPECT_TRUE(step.ok()) << step.status();
  return *std::move(step);
}

// Mixtral 8x7B, D = 4096, F = 14336, E = 8, K = 2, H = 32, Hkv = 8, Dh = 128, V = 32000, 32
// layers, untied. Parameters per layer: attention 4096·4096 + 2·4096·1024 + 4096·4096 =
// 41,943,040; norms 2·4096 = 8,192; router 4096·8 = 32,768; experts 8·3·4096·14336 =
// 1,409,286,144: 1,451,270,144. ×32 = 46,440,644,608, + embedding and head 2·32000·4096 =
// 262,144,000, + final norm 4,096: 46,702,792,704 (Mixtral's published 46.7B).
constexpr double kMixtralParams = 46702792704.0;

// ZeRO-3 (FSDP over all 64 devices), bf16 parameters, fp32 master, grads and AdamW moments:
// 2 + 4 + 4 + 2·4 = 18 bytes per parameter, all sharded 64 ways.
// Activations, no remat, per token per layer (bytes, bf16 = 2, f32 = 4):
//   attention  norm in 8,192 + norm out 8,192 + q/k/v (32 + 16)·128·2 = 12,288
//              + O 4096·2 = 8,192 + lse 32·4 = 128                               = 36,992
//   MoE        norm in + out 16,384 + router 2·8·4 = 64 + dispatched and outputs
//              2·2·4096·2 = 32,768 + h0, h1 2·2·14336·2 = 114,688 + act 2·14336·2 = 57,344
//                                                                                = 221,248
//   258,240 per token per layer; one micro-batch (MBS 1, pp 1) of 4096 tokens through 32
//   layers: 258,240 · 4096 · 32 = 33,848,033,280.
// Transient: logits 4096·32000·4 = 524,288,000; two gathered layers 2·1,451,270,144·2 =
// 5,805,080,576.
TEST(StepMemoryTest, MixtralZero3MatchesHandDerivation) {
  const TrainingStep step = Step("mixtral_8x7b", 64, 64, 4096, "FSDP 64");
  absl::StatusOr<StepMemory> m = StepHbm(step, ChipNamed("tpu_v5p"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(m->model_parameters, kMixtralParams);
  EXPECT_NEAR(m->parameter_bytes, kMixtralParams * 2 / 64, 1);
  EXPECT_NEAR(m->master_weight_bytes, kMixtralParams * 4 / 64, 1);
  EXPECT_NEAR(m->gradient_bytes, kMixtralParams * 4 / 64, 1);
  EXPECT_NEAR(m->optimizer_state_bytes, kMixtralParams * 8 / 64, 1);
  EXPECT_NEAR(m->activation_bytes, 33848033280.0, 1);
  EXPECT_NEAR(m->transient_bytes, 524288000.0 + 5805080576.0, 1);
  const double total = kMixtralParams * 18 / 64 + 33848033280.0 + 524288000.0 + 5805080576.0;
  EXPECT_NEAR(m->total_bytes, total, 1);
  EXPECT_TRUE(m->fits);  // 53.0e9 of v5p's 102.0e9
  EXPECT_EQ(m->max_micro_batch, 1);
}

// Full remat keeps each layer's input only: 4096·2 bytes per token per layer,
// 8,192 · 4096 · 32 = 1,073,741,824.
TEST(StepMemoryTest, FullRematKeepsLayerInputs) {
  const TrainingStep step = Step("mixtral_8x7b", 64, 64, 4096, "FSDP 64",
                                 [](TrainingStepSpec& p) { p.mutable_remat()->set_policy(REMAT_FULL); });
  absl::StatusOr<StepMemory> m = StepHbm(step, ChipNamed("tpu_v5p"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_NEAR(m->activation_bytes, 1073741824.0, 1);
}

// Selective recompute of the experts' activation drops K·F·2 = 57,344 bytes per token from
// every MoE layer (221,248 -> 163,904).
TEST(StepMemoryTest, SelectiveRecomputeDropsNamedModules) {
  const TrainingStep step = Step("mixtral_8x7b", 64, 64, 4096, "FSDP 64", [](TrainingStepSpec& p) {
    p.mutable_remat()->set_policy(REMAT_SELECTIVE);
    p.mutable_remat()->add_recompute("moe_act");
  });
  EXPECT_DOUBLE_EQ(ActivationBytesPerToken(step, 0), 36992.0 + 221248.0 - 57344.0);
}

// 1F1B with p = 4, m = 8 (GBS 16 on dp 2, MBS 1): rank 0 holds p = 4 micro-batches in flight,
// the last rank 1; ZeRO-0 data parallelism replicates the states. Rank 0 reports (it holds
// the embedding and the most activations): its 8 layers' activations are
// 4 · 258,240 · 4096 · 8.
TEST(StepMemoryTest, PipelineRankZeroHoldsPMicrobatches) {
  const TrainingStep step = Step("mixtral_8x7b", 8, 16, 4096, "PP4 DP2");
  absl::StatusOr<StepMemory> m = StepHbm(step, ChipNamed("gpu_h100"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->stage, 0);
  EXPECT_NEAR(m->activation_bytes, 4 * 258240.0 * 4096 * 8, 1);
  // 8 layers + embedding, unsharded: (8 · 1,451,270,144 + 131,072,000) · 2 bytes.
  EXPECT_NEAR(m->parameter_bytes, (8 * 1451270144.0 + 131072000.0) * 2, 1);
  EXPECT_FALSE(m->fits);  // 18 bytes · 11.7e9 parameters alone exceed 80 GB
  EXPECT_EQ(m->max_micro_batch, 0);
}

// ZeRO-1 shards master weights and moments over dp (experts over dp·fsdp·cp / ep): with
// dp 8, ep 8 the routed experts are not replicated, so only the dense part shrinks.
TEST(StepMemoryTest, Zero1ShardsOptimizerStateOverDataParallel) {
  const TrainingStep zero0 = Step("mixtral_8x7b", 8, 8, 4096, "DP8 EP8");
  const TrainingStep zero1 = Step("mixtral_8x7b", 8, 8, 4096, "DP8 EP8",
                                  [](TrainingStepSpec& p) { p.mutable_parallelism()->set_zero(ZERO_1); });
  absl::StatusOr<StepMemory> a = StepHbm(zero0, ChipNamed("gpu_h100"));
  absl::StatusOr<StepMemory> b = StepHbm(zero1, ChipNamed("gpu_h100"));
  ASSERT_TRUE(a.ok() && b.ok());
  // Dense per device: 32 · (41,943,040 + 8,192 + 32,768) + 262,144,000 + 4,096 = 1,605,636,096;
  // experts per device 32 · 1,409,286,144 / 8 = 5,637,144,576.
  const double dense = 1605636096.0;
  const double experts = 5637144576.0;
  EXPECT_NEAR(a->optimizer_state_bytes, (dense + experts) * 8, 1);
  EXPECT_NEAR(b->optimizer_state_bytes, (dense / 8 + experts) * 8, 1);
  EXPECT_NEAR(b->gradient_bytes, a->gradient_bytes, 1);  // ZeRO-1 keeps full gradients
}

// The largest micro-batch grows as HBM does.
TEST(StepMemoryTest, LargestMicrobatchThatFits) {
  const TrainingStep step = Step("mixtral_8x7b", 64, 512, 4096, "FSDP 64",
                                 [](TrainingStepSpec& p) { p.mutable_remat()->set_policy(REMAT_FULL); });
  absl::StatusOr<StepMemory> m = StepHbm(step, ChipNamed("tpu_v5p"));
  ASSERT_TRUE(m.ok()) << m.status();
  // Static 13.1e9 + transient (5.8e9 + 0.52e9·MBS) + 1.07e9·MBS <= 102.0e9: MBS <= 52, and the
  // divisors of 512 / 64 = 8 are 1, 2, 4, 8: all fit.
  EXPECT_EQ(m->max_micro_batch, 8);
}

}  // namespace
}  // namespace perfsim
