// Shape and Layout printing, ValidateShape, and ParseShape reading back what ToString writes.
#include "sim/ir/shape.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::IsOk;
using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

TEST(Shape, PrintsArraysTuplesAndTokens) {
  Shape array = Shape::Array(PrimitiveType::kF32, {8, 128});
  EXPECT_EQ(array.ToString(), "f32[8,128]");
  array.set_layout(Layout::Default(2));
  EXPECT_EQ(array.ToString(), "f32[8,128]{1,0}");
  EXPECT_EQ(array.ToString(/*print_layout=*/false), "f32[8,128]");
  EXPECT_EQ(Shape::Scalar(PrimitiveType::kBF16).ToString(), "bf16[]");
  EXPECT_EQ(
      Shape::Tuple({array, Shape::Tuple({Shape::Scalar(PrimitiveType::kS32), Shape::Token()})})
          .ToString(),
      "(f32[8,128]{1,0}, (s32[], token[]))");
  EXPECT_EQ(Shape::Tuple({}).ToString(), "()");
}

TEST(Shape, PrintsDynamicDimensions) {
  Shape shape = Shape::Array(PrimitiveType::kF32, {10, Shape::kUnboundedSize, 3});
  shape.set_dynamic_dimension(0, true);
  shape.set_dynamic_dimension(1, true);
  EXPECT_EQ(shape.ToString(), "f32[<=10,?,3]");
  EXPECT_FALSE(shape.is_static());
  EXPECT_THAT(ValidateShape(shape), IsOk());
}

TEST(Layout, PrintsTilesOnceLikeXla) {
  // XLA writes one T before all tiles: T(8,128)(2,1), not T(8,128)T(2,1).
  Layout layout = Layout::Default(4);
  layout.tiles = {Tile{{8, 128}}, Tile{{2, 1}}};
  layout.memory_space = 3;
  EXPECT_EQ(layout.ToString(), "{3,2,1,0:T(8,128)(2,1)S(3)}");
  Layout combine;
  combine.tiles = {Tile{{Tile::kCombineDimension, 128}}};
  EXPECT_EQ(combine.ToString(), "{:T(*,128)}");
  Layout sub_byte = Layout::Default(2);
  sub_byte.element_size_bits = 4;
  sub_byte.other_attributes = "L(4)";
  EXPECT_EQ(sub_byte.ToString(), "{1,0:E(4)L(4)}");
}

TEST(Shape, ElementCountAndByteSize) {
  const Shape shape = Shape::Array(PrimitiveType::kBF16, {16, 5, 32});
  EXPECT_EQ(shape.ElementCount(), 16 * 5 * 32);
  EXPECT_EQ(shape.ByteSize(), 16 * 5 * 32 * 2);
  // Sub-byte types take one byte per element in an unpacked buffer.
  EXPECT_EQ(Shape::Array(PrimitiveType::kS4, {3}).ByteSize(), 3);
  EXPECT_EQ(Shape::Tuple({shape, Shape::Scalar(PrimitiveType::kF32)}).ByteSize(),
            16 * 5 * 32 * 2 + 4);
  EXPECT_EQ(Shape::Token().ByteSize(), 0);
}

TEST(ValidateShape, RejectsElementCountOverflow) {
  // 2^62 * 4 = 2^64 elements: does not fit in int64.
  const Shape shape = Shape::Array(PrimitiveType::kF32, {int64_t{1} << 62, 4});
  EXPECT_THAT(ValidateShape(shape),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected an element count that fits in int64")));
}

TEST(ValidateShape, RejectsByteSizeOverflow) {
  // 2^62 elements fit, but at 4 bytes each the byte size is 2^64.
  const Shape shape = Shape::Array(PrimitiveType::kF32, {int64_t{1} << 62});
  EXPECT_THAT(ValidateShape(shape), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("byte size that fits in int64")));
  // Two elements of 2^62 bytes each: each fits, the tuple's 2^63 does not.
  const Shape half = Shape::Array(PrimitiveType::kU8, {int64_t{1} << 62});
  EXPECT_THAT(ValidateShape(half), IsOk());
  EXPECT_THAT(ValidateShape(Shape::Tuple({half, half})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte size")));
}

TEST(ValidateShape, RejectsLayoutThatIsNotAPermutation) {
  Shape shape = Shape::Array(PrimitiveType::kF32, {2, 3});
  Layout layout;
  layout.minor_to_major = {0, 0};
  shape.set_layout(layout);
  EXPECT_THAT(ValidateShape(shape),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("permutation of 0..1")));
  layout.minor_to_major = {0};
  shape.set_layout(layout);
  EXPECT_THAT(ValidateShape(shape),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got {0}")));
}

TEST(ValidateShape, AcceptsScalarTiledLayoutsTokensAndOpaque) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(Shape tiled, ParseShape("s32[]{:T(128)}"));
  EXPECT_THAT(ValidateShape(tiled), IsOk());
  EXPECT_THAT(ValidateShape(Shape::Token()), IsOk());
  EXPECT_THAT(ValidateShape(Shape::Scalar(PrimitiveType::kOpaque)), IsOk());
  EXPECT_THAT(ValidateShape(Shape()), StatusIs(absl::StatusCode::kInvalidArgument,
                                               HasSubstr("expected an array, tuple or token")));
}

TEST(ParseShape, ReadsBackWhatToStringWrites) {
  for (const char* text :
       {"f32[8,128]{1,0}", "bf16[16,5,32]", "f32[<=10,?]", "bf16[1024,512]{1,0:T(8,128)(2,1)S(3)}",
        "s4[16]{0:E(4)}", "(f32[2]{0}, (s32[], token[]))", "()", "s32[]{:T(128)}", "pred[2,0,3]",
        "f8e4m3fn[4]", "u32[7]{0:T(2,*)L(4)}"}) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(Shape shape, ParseShape(text));
    EXPECT_EQ(shape.ToString(), text);
  }
}

TEST(ParseShape, AcceptsSpacesAndKeepsMissingLayoutsMissing) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(Shape shape, ParseShape("bf16[16, 5, 32]"));
  EXPECT_EQ(shape.ToString(), "bf16[16,5,32]");
  EXPECT_FALSE(shape.has_layout());
  // The effective layout of an unwritten one is the default descending layout.
  EXPECT_EQ(shape.EffectiveLayout().ToString(), "{2,1,0}");
}

TEST(ParseShape, RejectsMalformedShapes) {
  EXPECT_THAT(ParseShape("f33[2]"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("1:1: expected a shape; got 'f33'")));
  EXPECT_THAT(ParseShape("f32[2"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected ',' or ']'")));
  EXPECT_THAT(ParseShape("f32[-2]"), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("non-negative dimension size")));
  EXPECT_THAT(ParseShape("f32[99999999999999999999]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a dimension size")));
  EXPECT_THAT(ParseShape("f32[4611686018427387904,4]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fits in int64")));
  EXPECT_THAT(ParseShape("f32[2,3]{0,2}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("permutation")));
  EXPECT_THAT(ParseShape("f32[2]{0:Q}"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("'(' after a layout attribute")));
  EXPECT_THAT(ParseShape("f32[2] x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("end of the shape")));
}

}  // namespace
}  // namespace perfsim
