// MoE-block and fused-layer rows (sim/accuracy/scenario.h BlockScenario, block_model.h): what
// the cells map to, and that the prediction is the step simulator's, on the chip with the
// factors of the column.
#include "sim/accuracy/block_model.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/moe/model_config.h"
#include "sim/predict/predict.h"
#include "tests/accuracy/accuracy_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CalibrationRow;
using ::testing::HasSubstr;

BlockScenario MustMapBlock(const Measurement& row) {
  absl::StatusOr<MappedRow> mapped = MapMeasurement(row);
  EXPECT_TRUE(mapped.ok()) << mapped.status();
  if (!mapped.ok()) return BlockScenario();
  EXPECT_TRUE(mapped->block.has_value()) << row.id << ": " << mapped->skipped_reason;
  return mapped->block.value_or(BlockScenario());
}

TEST(BlockRows, MoeBlockRowIsOneLayerOnOneTpuChip) {
  // M103: v5p, "1? (not stated)" chips, E=128 K=8 D=2048 F=768, "32768 tokens", gmm, bf16
  // (assumed).
  const BlockScenario b = MustMapBlock(CalibrationRow("M103"));
  EXPECT_EQ(b.chip, "tpu_v5p");
  EXPECT_EQ(b.mesh, "1x1x1");
  EXPECT_EQ(b.devices, 1);
  EXPECT_EQ(b.tokens, 32768);
  EXPECT_EQ(b.backend, "megablox_gmm");
  EXPECT_EQ(b.model.num_experts(), 128);
  EXPECT_EQ(b.model.experts_per_token(), 8);
  EXPECT_EQ(b.model.d_model(), 2048);
  EXPECT_EQ(b.model.expert_ffn_dim(), 768);
  EXPECT_EQ(b.model.num_shared_experts(), 0);
  EXPECT_EQ(b.model.param_dtype(), DTYPE_BF16);
  EXPECT_EQ(b.unit, MeasurementUnit::kMilliseconds);
  EXPECT_THAT(b.description, HasSubstr("device count is not stated"));
}

TEST(BlockRows, FusedLayerRowsAreTokensPerRankOverExpertParallelGpus) {
  // M173: H200, 8 chips, "M=512 tokens per rank", FP8 x FP8: 4096 tokens over ep=8.
  const BlockScenario h200 = MustMapBlock(CalibrationRow("M173"));
  EXPECT_EQ(h200.chip, "gpu_h200");
  EXPECT_EQ(h200.mesh, "8");
  EXPECT_EQ(h200.devices, 8);
  EXPECT_EQ(h200.tokens, 8 * 512);
  EXPECT_EQ(h200.backend, "ep_ragged_a2a");
  EXPECT_EQ(h200.model.param_dtype(), DTYPE_F8E4M3FN);
  EXPECT_THAT(h200.description, HasSubstr("simulated as the unfused path"));
  // M165: "1 tokens per rank" on 8 SM100 GPUs (B200-class), FP4 weights read as FP8.
  const BlockScenario decode = MustMapBlock(CalibrationRow("M165"));
  EXPECT_EQ(decode.chip, "gpu_b200");
  EXPECT_EQ(decode.tokens, 8);
  EXPECT_THAT(decode.description, HasSubstr("FP4 weights as FP8"));
}

// One moe_block row with the columns a block row reads.
Measurement BlockRow(const std::string& cells) {
  absl::StatusOr<MeasurementFile> f = ReadMeasurements(
      absl::StrCat("id,category,hardware,num_chips,E,K,D,F,tokens,dtype,backend_kernel,op_shape,"
                   "metric,value,unit\n",
                   cells, "\n"),
      "blocks.csv");
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() && !f->rows.empty() ? f->rows[0] : Measurement();
}

TEST(BlockRows, SizesBeyondAnyLayerAreCellErrorsAndMissingOnesSkip) {
  const std::string tail = ",bf16,gmm,routed MoE block,time,1,ms";
  EXPECT_TRUE(MapMeasurement(BlockRow("A,moe_block,TPU v5p,1,64,2,1024,512,4096" + tail))->block);
  const std::pair<const char*, const char*> too_big[] = {
      {"B,moe_block,TPU v5p,1,8192,2,1024,512,4096", "E: expected at most 4096 experts"},
      {"C,moe_block,TPU v5p,1,64,2,100000,512,4096", "D: expected at most 65536"},
      {"D,moe_block,H100 SXM,8192,64,2,1024,512,4096", "num_chips: expected at most 4096"},
      {"E,moe_block,H100 SXM,8,64,2,1024,512,4194304 tokens per rank",
       "tokens: expected at most 16777216 tokens in all"}};
  for (const auto& [cells, message] : too_big) {
    absl::StatusOr<MappedRow> mapped = MapMeasurement(BlockRow(cells + tail));
    ASSERT_FALSE(mapped.ok()) << cells;
    EXPECT_THAT(mapped.status().message(), HasSubstr(message)) << cells;
  }
  // No F: skipped with the reason; K > E: an error.
  absl::StatusOr<MappedRow> no_f = MapMeasurement(BlockRow("F,moe_block,TPU v5p,1,64,2,1024,,4096" + tail));
  ASSERT_TRUE(no_f.ok());
  EXPECT_THAT(no_f->skipped_reason, HasSubstr("E, K, D and F"));
  EXPECT_FALSE(MapMeasurement(BlockRow("G,moe_block,TPU v5p,1,4,8,1024,512,4096" + tail)).ok());
}

TEST(BlockRows, PredictionIsTheStepSimulatorsOnTheChipWithTheColumnsFactors) {
  const BlockScenario b = MustMapBlock(CalibrationRow("M103"));
  absl::StatusOr<BlockPrediction> physics = PredictBlock(b, ChipFactors());
  ASSERT_TRUE(physics.ok()) << physics.status();
  EXPECT_THAT(physics->detail, HasSubstr("experts"));

  // The same layer through Predict with a chip file of datasheet factors.
  absl::StatusOr<Chip> datasheet = ChipWithFactors("tpu_v5p", ChipFactors());
  ASSERT_TRUE(datasheet.ok());
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(b.model);
  ASSERT_TRUE(model.ok()) << model.status();
  PredictOptions o{.spec = StepSpec::Defaults(*model)};
  o.spec.batch = 1;
  o.spec.seq = 32768;
  o.spec.phase = Phase::kForward;
  o.spec.backend = "megablox_gmm";
  o.hw = "tpu_v5p";
  o.chip = *datasheet;
  o.mesh = "1x1x1";
  absl::StatusOr<Prediction> direct = Predict(o);
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_DOUBLE_EQ(physics->value, direct->step_seconds * 1e3);  // the row's unit is ms

  // Every rate at half its peak: each op's rate-bound time doubles and the fixed costs stay
  // (kernel launches, the gmm kernels' per-grid-step costs: under 20% of a layer of ~14 ms at
  // 32768 tokens), so with R the rate-bound and F the fixed time the layer takes
  // (2R + F) / (R + F), between 1.8x (F = 20%) and 2x as long.
  ChipFactors half;
  for (FactorKind kind : {FactorKind::kMatmul, FactorKind::kHbm, FactorKind::kRing,
                          FactorKind::kBidirectionalRing, FactorKind::kDirect,
                          FactorKind::kHierarchical}) {
    half.Set(kind, 0.5);
  }
  absl::StatusOr<BlockPrediction> slow = PredictBlock(b, half);
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_LE(slow->value, 2 * physics->value * (1 + 1e-9));
  EXPECT_GE(slow->value, 1.8 * physics->value);
}

}  // namespace
}  // namespace perfsim
