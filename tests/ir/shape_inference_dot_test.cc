// Shape inference for dot, ragged-dot (all three ragged modes) and convolution.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/shape_inference.h"
#include "sim/util/status_matchers.h"
#include "tests/ir/test_builder.h"

namespace perfsim {
namespace {

using ::perfsim::testing::HloBuilder;
using ::perfsim::testing::InfersShape;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::TestModule;
using ::testing::HasSubstr;

MATCHER_P(FailsWith, substring, "") {
  return ::testing::ExplainMatchResult(
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(substring)), arg, result_listener);
}

DotDimensionNumbers DotDims(std::vector<int64_t> lhs_batch, std::vector<int64_t> rhs_batch,
                            std::vector<int64_t> lhs_contracting,
                            std::vector<int64_t> rhs_contracting) {
  return DotDimensionNumbers{std::move(lhs_batch), std::move(rhs_batch), std::move(lhs_contracting),
                             std::move(rhs_contracting)};
}

Instruction* AddDot(HloBuilder& b, absl::string_view shape, Instruction* lhs, Instruction* rhs,
                    DotDimensionNumbers dnums, std::string name = "") {
  Instruction* dot = b.Add(Opcode::kDot, shape, {lhs, rhs}, std::move(name));
  dot->mutable_attributes()->dot_dimension_numbers = std::move(dnums);
  return dot;
}

// ------------------------------------------------------------------------------------ dot

TEST(ShapeInference, DotBatchedMatmulOrdersBatchThenLhsThenRhsFreeDims) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[4,256,64]");
  Instruction* rhs = b.Parameter(1, "f32[4,64,1024]");
  // batch 4, lhs free 256, rhs free 1024.
  EXPECT_THAT(InferShape(*AddDot(b, "f32[4,256,1024]", lhs, rhs, DotDims({0}, {0}, {2}, {1}))),
              InfersShape("f32[4,256,1024]"));
}

TEST(ShapeInference, DotBatchDimensionsNeedNotLeadInRhs) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[2,10]");
  Instruction* rhs = b.Parameter(1, "f32[10,2]");
  // XLA's parser test `dot`: batch lhs 0 / rhs 1, contracting lhs 1 / rhs 0 -> f32[2].
  EXPECT_THAT(InferShape(*AddDot(b, "f32[2]", lhs, rhs, DotDims({0}, {1}, {1}, {0}))),
              InfersShape("f32[2]"));
}

TEST(ShapeInference, DotWithoutDimensionNumbersIsOuterProduct) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[3]");
  Instruction* rhs = b.Parameter(1, "f32[5]");
  Instruction* dot = b.Add(Opcode::kDot, "f32[3,5]", {lhs, rhs});
  EXPECT_THAT(InferShape(*dot), InfersShape("f32[3,5]"));
}

TEST(ShapeInference, DotTakesDeclaredElementType) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f8e5m2[32,16]");
  Instruction* rhs = b.Parameter(1, "f8e4m3fn[8,16]");
  EXPECT_THAT(InferShape(*AddDot(b, "bf16[32,8]", lhs, rhs, DotDims({}, {}, {1}, {1}))),
              InfersShape("bf16[32,8]"));
}

// known_bugs.md #1: x [T=8, D=7168] against wo stored [E=4, F=2048, D=7168] with the einsum
// "td,edm->tem" contracts x's D (7168) with W's dimension 1, which is F (2048).
TEST(ShapeInference, DotRejectsMismatchedContractingDims) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[8,7168]");
  Instruction* w = b.Parameter(1, "bf16[4,2048,7168]");
  Instruction* dot = AddDot(b, "bf16[8,4,7168]", x, w, DotDims({}, {}, {1}, {1}), "dot.3");
  EXPECT_THAT(InferShape(*dot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "dot.3: expected lhs contracting dimension 1 (size 7168) to equal rhs "
                       "contracting dimension 1 (size 2048); got 7168 vs 2048"));
  // The right axis (W's dimension 2, D) contracts: [T, E, F].
  EXPECT_THAT(InferShape(*AddDot(b, "bf16[8,4,2048]", x, w, DotDims({}, {}, {1}, {2}))),
              InfersShape("bf16[8,4,2048]"));
}

TEST(ShapeInference, DotRejectsMismatchedBatchDims) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[4,8,16]");
  Instruction* rhs = b.Parameter(1, "f32[5,16,8]");
  EXPECT_THAT(InferShape(*AddDot(b, "f32[4,8,8]", lhs, rhs, DotDims({0}, {0}, {2}, {1}))),
              FailsWith("expected lhs batch dimension 0 (size 4) to equal rhs batch dimension 0 "
                        "(size 5); got 4 vs 5"));
}

TEST(ShapeInference, DotRejectsUnequalDimensionCounts) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[4,8]");
  Instruction* rhs = b.Parameter(1, "f32[8,4]");
  EXPECT_THAT(InferShape(*AddDot(b, "f32[4,4]", lhs, rhs, DotDims({}, {}, {1}, {}))),
              FailsWith("expected lhs contracting dimensions {1} and rhs contracting dimensions "
                        "{} of equal count; got 1 vs 0"));
}

TEST(ShapeInference, DotRejectsDimensionOutOfRangeAndOverlap) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[4,8]");
  Instruction* rhs = b.Parameter(1, "f32[8,4]");
  EXPECT_THAT(InferShape(*AddDot(b, "f32[4,4]", lhs, rhs, DotDims({}, {}, {2}, {0}))),
              FailsWith("expected lhs contracting dimensions in [0, 2); got 2 in {2}"));
  EXPECT_THAT(InferShape(*AddDot(b, "f32[4]", lhs, rhs, DotDims({1}, {0}, {1}, {0}))),
              FailsWith("expected disjoint lhs batch and contracting dimensions; got dimension 1 "
                        "in both"));
}

// ----------------------------------------------------------------------------- ragged-dot

Instruction* AddRaggedDot(HloBuilder& b, absl::string_view shape, Instruction* lhs,
                          Instruction* rhs, Instruction* group_sizes, DotDimensionNumbers dnums,
                          std::vector<int64_t> lhs_ragged, std::vector<int64_t> rhs_group,
                          std::string name = "") {
  Instruction* rd = b.Add(Opcode::kRaggedDot, shape, {lhs, rhs, group_sizes}, std::move(name));
  rd->mutable_attributes()->ragged_dot_dimension_numbers =
      RaggedDotDimensionNumbers{std::move(dnums), std::move(lhs_ragged), std::move(rhs_group)};
  return rd;
}

TEST(ShapeInference, RaggedDotNonContractingMoeShape) {
  TestModule m;
  HloBuilder b = m.Entry();
  // Tokens [M=6, K=4] sorted by expert, weights [G=3, K=4, N=5]: [M, N].
  Instruction* lhs = b.Parameter(0, "f32[6,4]");
  Instruction* rhs = b.Parameter(1, "f32[3,4,5]");
  Instruction* gs = b.Parameter(2, "s64[3]");
  EXPECT_THAT(
      InferShape(*AddRaggedDot(b, "f32[6,5]", lhs, rhs, gs, DotDims({}, {}, {1}, {1}), {0}, {0})),
      InfersShape("f32[6,5]"));
}

// known_bugs.md #2: lax.ragged_dot(lhs[64,32], rhs[4,16,32]) — rhs given [G,N,K] instead of
// [G,K,N] — contracts K=32 against 16.
TEST(ShapeInference, RaggedDotRejectsRhsGivenAsGNK) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "bf16[64,32]");
  Instruction* rhs = b.Parameter(1, "bf16[4,16,32]");
  Instruction* gs = b.Parameter(2, "s32[4]");
  EXPECT_THAT(InferShape(*AddRaggedDot(b, "bf16[64,32]", lhs, rhs, gs, DotDims({}, {}, {1}, {1}),
                                       {0}, {0}, "ragged-dot.1")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "ragged-dot.1: expected lhs contracting dimension 1 (size 32) to equal rhs "
                       "contracting dimension 1 (size 16); got 32 vs 16"));
}

TEST(ShapeInference, RaggedDotRejectsGroupCountMismatch) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[6,4]");
  Instruction* rhs = b.Parameter(1, "f32[4,4,5]");
  Instruction* gs = b.Parameter(2, "s32[3]");
  EXPECT_THAT(
      InferShape(*AddRaggedDot(b, "f32[6,5]", lhs, rhs, gs, DotDims({}, {}, {1}, {1}), {0}, {0})),
      FailsWith("expected rhs group dimension 0 (size 4) to equal the group count 3 of "
                "group_sizes s32[3]; got 4 vs 3"));
}

TEST(ShapeInference, RaggedDotNonContractingRequiresOneGroupDimension) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[6,4]");
  Instruction* rhs = b.Parameter(1, "f32[3,4,5]");
  Instruction* gs = b.Parameter(2, "s32[3]");
  EXPECT_THAT(
      InferShape(*AddRaggedDot(b, "f32[6,3,5]", lhs, rhs, gs, DotDims({}, {}, {1}, {1}), {0}, {})),
      FailsWith("expected exactly one rhs group dimension for a ragged non-contracting "
                "lhs dimension; got {}"));
}

TEST(ShapeInference, RaggedDotRaggedContractingPrependsGroups) {
  TestModule m;
  HloBuilder b = m.Entry();
  // Weight-gradient form: [M=64, K=9] x [K=9, N=8], K split into G=2 groups: [G, M, N].
  Instruction* lhs = b.Parameter(0, "f16[64,9]");
  Instruction* rhs = b.Parameter(1, "f16[9,8]");
  Instruction* gs = b.Parameter(2, "s64[2]");
  EXPECT_THAT(
      InferShape(*AddRaggedDot(b, "f16[2,64,8]", lhs, rhs, gs, DotDims({}, {}, {1}, {0}), {1}, {})),
      InfersShape("f16[2,64,8]"));
  EXPECT_THAT(InferShape(*AddRaggedDot(b, "f16[2,64,8]", lhs, rhs, gs, DotDims({}, {}, {1}, {0}),
                                       {1}, {0})),
              FailsWith("expected no rhs group dimensions when the ragged dimension is a "
                        "contracting dimension; got {0}"));
}

TEST(ShapeInference, RaggedDotRaggedBatchDimension) {
  TestModule m;
  HloBuilder b = m.Entry();
  // Batch 5 split into 2 groups; the result is dot_general's [B, M, N].
  Instruction* lhs = b.Parameter(0, "f16[5,16,9]");
  Instruction* rhs = b.Parameter(1, "f16[5,9,8]");
  Instruction* gs = b.Parameter(2, "s64[2]");
  EXPECT_THAT(InferShape(*AddRaggedDot(b, "f16[5,16,8]", lhs, rhs, gs, DotDims({0}, {0}, {2}, {1}),
                                       {0}, {})),
              InfersShape("f16[5,16,8]"));
}

TEST(ShapeInference, RaggedDotGroupSizesWithLeadingLhsDimensions) {
  TestModule m;
  HloBuilder b = m.Entry();
  // lhs [2, 6, 4] ragged in dimension 1: group_sizes is [2 (dims before it), G=3].
  Instruction* lhs = b.Parameter(0, "f32[2,6,4]");
  Instruction* rhs = b.Parameter(1, "f32[3,4,5]");
  Instruction* gs = b.Parameter(2, "s64[2,3]");
  EXPECT_THAT(
      InferShape(*AddRaggedDot(b, "f32[2,6,5]", lhs, rhs, gs, DotDims({}, {}, {2}, {1}), {1}, {0})),
      InfersShape("f32[2,6,5]"));
  Instruction* bad_gs = b.Parameter(3, "s64[7,3]");
  EXPECT_THAT(InferShape(*AddRaggedDot(b, "f32[2,6,5]", lhs, rhs, bad_gs, DotDims({}, {}, {2}, {1}),
                                       {1}, {0})),
              FailsWith("expected group_sizes of shape [G] or with leading dimensions {2}"));
}

TEST(ShapeInference, RaggedDotMultipleContractingDims) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[6,4,3]");
  Instruction* rhs = b.Parameter(1, "f32[2,4,3,5]");
  Instruction* gs = b.Parameter(2, "s64[2]");
  EXPECT_THAT(InferShape(*AddRaggedDot(b, "f32[6,5]", lhs, rhs, gs, DotDims({}, {}, {1, 2}, {1, 2}),
                                       {0}, {0})),
              InfersShape("f32[6,5]"));
}

TEST(ShapeInference, RaggedDotRejectsFloatGroupSizes) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[6,4]");
  Instruction* rhs = b.Parameter(1, "f32[3,4,5]");
  Instruction* gs = b.Parameter(2, "f32[3]");
  EXPECT_THAT(
      InferShape(*AddRaggedDot(b, "f32[6,5]", lhs, rhs, gs, DotDims({}, {}, {1}, {1}), {0}, {0})),
      FailsWith("expected integer group_sizes of rank >= 1; got f32[3]"));
}

// ---------------------------------------------------------------------------- convolution

Instruction* AddConvolution(HloBuilder& b, absl::string_view shape, Instruction* lhs,
                            Instruction* rhs, std::string dim_labels,
                            std::vector<WindowDimension> window, int64_t feature_groups = 1,
                            int64_t batch_groups = 1) {
  Instruction* conv = b.Add(Opcode::kConvolution, shape, {lhs, rhs});
  InstructionAttributes* attrs = conv->mutable_attributes();
  attrs->dim_labels = std::move(dim_labels);
  attrs->window = std::move(window);
  attrs->feature_group_count = feature_groups;
  attrs->batch_group_count = batch_groups;
  return conv;
}

WindowDimension Window(int64_t size, int64_t stride = 1, int64_t pad_low = 0, int64_t pad_high = 0,
                       int64_t lhs_dilate = 1, int64_t rhs_dilate = 1) {
  WindowDimension w;
  w.size = size;
  w.stride = stride;
  w.padding_low = pad_low;
  w.padding_high = pad_high;
  w.base_dilation = lhs_dilate;
  w.window_dilation = rhs_dilate;
  return w;
}

TEST(ShapeInference, ConvolutionSamePaddingKeepsSpatialSize) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[1,8,8,3]");
  Instruction* rhs = b.Parameter(1, "f32[3,3,3,16]");
  // 8 + 1 + 1 - 3 + 1 = 8 per spatial dimension; features 3 -> 16.
  EXPECT_THAT(InferShape(*AddConvolution(b, "f32[1,8,8,16]", lhs, rhs, "b01f_01io->b01f",
                                         {Window(3, 1, 1, 1), Window(3, 1, 1, 1)})),
              InfersShape("f32[1,8,8,16]"));
}

TEST(ShapeInference, ConvolutionStrideAndDilation) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[2,4,10]");
  Instruction* rhs = b.Parameter(1, "f32[6,4,3]");
  // bf0 / oi0 -> bf0. Dilated window (3-1)*2+1 = 5; padded 10; (10-5)/2+1 = 3.
  EXPECT_THAT(InferShape(*AddConvolution(b, "f32[2,6,3]", lhs, rhs, "bf0_oi0->bf0",
                                         {Window(3, 2, 0, 0, 1, 2)})),
              InfersShape("f32[2,6,3]"));
  // lhs dilation 2: (10-1)*2+1 = 19; window 3: 19-3+1 = 17.
  EXPECT_THAT(InferShape(*AddConvolution(b, "f32[2,6,17]", lhs, rhs, "bf0_oi0->bf0",
                                         {Window(3, 1, 0, 0, 2, 1)})),
              InfersShape("f32[2,6,17]"));
}

TEST(ShapeInference, ConvolutionDepthwiseFeatureGroups) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[1,8,8,16]");
  Instruction* rhs = b.Parameter(1, "f32[3,3,1,16]");
  // 16 input features / 16 groups = 1 kernel input feature; 8-3+1 = 6.
  EXPECT_THAT(InferShape(*AddConvolution(b, "f32[1,6,6,16]", lhs, rhs, "b01f_01io->b01f",
                                         {Window(3), Window(3)}, /*feature_groups=*/16)),
              InfersShape("f32[1,6,6,16]"));
}

TEST(ShapeInference, ConvolutionBatchGroupsDivideBatch) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[8,4]");
  Instruction* rhs = b.Parameter(1, "f32[4,2]");
  // No spatial dimensions; batch 8 / 2 groups = 4.
  EXPECT_THAT(InferShape(*AddConvolution(b, "f32[4,2]", lhs, rhs, "bf_io->bf", {}, 1, 2)),
              InfersShape("f32[4,2]"));
}

TEST(ShapeInference, ConvolutionRejectsFeatureMismatch) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[1,8,8,3]");
  Instruction* rhs = b.Parameter(1, "f32[3,3,4,16]");
  EXPECT_THAT(InferShape(*AddConvolution(b, "f32[1,6,6,16]", lhs, rhs, "b01f_01io->b01f",
                                         {Window(3), Window(3)})),
              FailsWith("expected lhs feature dimension (size 3) / feature_group_count 1 to "
                        "equal rhs input feature dimension (size 4); got 3/1 vs 4"));
}

TEST(ShapeInference, ConvolutionRejectsBadDimLabelsAndWindow) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[1,8,8,3]");
  Instruction* rhs = b.Parameter(1, "f32[3,3,3,16]");
  EXPECT_THAT(InferShape(*AddConvolution(b, "f32[1,6,6,16]", lhs, rhs, "b01f_01io",
                                         {Window(3), Window(3)})),
              FailsWith("expected dim_labels like b01f_01io->b01f; got b01f_01io"));
  EXPECT_THAT(
      InferShape(*AddConvolution(b, "f32[1,6,6,16]", lhs, rhs, "b01f_01io->b01f", {Window(3)})),
      FailsWith("expected a window of 2 dimensions; got 1"));
  EXPECT_THAT(InferShape(*AddConvolution(b, "f32[1,6,6,16]", lhs, rhs, "b01f_01io->b01f",
                                         {Window(3), Window(2)})),
              FailsWith("expected window size of spatial dimension 1 to equal the rhs spatial "
                        "dimension (size 3); got 2"));
}

TEST(ShapeInference, SparseConvolutionRhsIsValuesAndMetadata) {
  // XLA's hlo_evaluator_sparsity_test: values f32[2,1] keeping 1 of every 4 elements along
  // dimension 0 stand for a dense rhs f32[2*4/1, 1] = f32[8,1], which matches lhs f32[1,8]
  // (bf_io->bf: 8 input features); the result is f32[1 (batch), 1 (output features)].
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[1,8]");
  Instruction* kernel = b.Parameter(1, "(f32[2,1], s32[2,1])");
  Instruction* conv = b.Add(Opcode::kConvolution, "f32[1,1]", {lhs, kernel});
  conv->mutable_attributes()->dim_labels = "bf_io->bf";
  conv->mutable_attributes()->other.emplace_back(
      "sparsity_config", "{ rhs={sparsity=1x4 dimension=0 stride=1} }");
  EXPECT_THAT(InferShape(*conv), InfersShape("f32[1,1]"));
  // 1x2 stands for f32[4,1]: 4 input features against the lhs's 8.
  conv->mutable_attributes()->other.back().second = "{rhs={sparsity=1x2 dimension=0 stride=1}}";
  EXPECT_THAT(InferShape(*conv),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("8/1 vs 4")));
  // Without a sparsity_config the tuple is no convolution operand.
  conv->mutable_attributes()->other.clear();
  EXPECT_THAT(InferShape(*conv), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("expected rhs to be an array; got (")));
  // The metadata must be integers of the values' rank.
  conv->mutable_attributes()->other.emplace_back("sparsity_config",
                                                 "{rhs={sparsity=1x4 dimension=0 stride=1}}");
  Instruction* bad = b.Add(Opcode::kConvolution, "f32[1,1]",
                           {lhs, b.Parameter(2, "(f32[2,1], f32[2,1])")});
  bad->mutable_attributes()->dim_labels = "bf_io->bf";
  bad->mutable_attributes()->other = conv->attributes().other;
  EXPECT_THAT(InferShape(*bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected sparse rhs to be a tuple (values, integer metadata of "
                                 "the same rank)")));
}

}  // namespace
}  // namespace perfsim
