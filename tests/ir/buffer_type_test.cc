// XLA's buffer type `b(f32[16])`: the mutable array custom-calls update in place between a
// "Pin" and an "Unpin". Parsing and printing, the shape's properties, and the verifier's rule
// for custom-call output_to_operand_aliasing (XLA's ShapeVerifier::HandleCustomCall): aliased
// subshapes are equal, layouts ignored, and for Pin/Unpin a buffer equals its array.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::IsOk;
using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

absl::Status ParseAndVerify(absl::string_view text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  return VerifyModule(**module);
}

TEST(BufferShape, ParsesPrintsAndKeepsItsArraysLayout) {
  absl::StatusOr<Shape> shape = ParseShape("b(f32[4,2]{0,1})");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_TRUE(shape->IsBuffer());
  EXPECT_FALSE(shape->IsArray());
  EXPECT_FALSE(shape->IsTuple());
  EXPECT_EQ(shape->buffer_shape().ToString(), "f32[4,2]{0,1}");
  EXPECT_EQ(shape->ToString(), "b(f32[4,2]{0,1})");
  EXPECT_EQ(shape->ToString(/*print_layout=*/false), "b(f32[4,2])");
  // A buffer takes the bytes of its array: 8 f32 elements.
  EXPECT_EQ(shape->ByteSize(), 32);
  EXPECT_TRUE(ContainsBuffer(*shape));
  EXPECT_EQ(StripBuffer(*shape).ToString(), "f32[4,2]{0,1}");
}

TEST(BufferShape, ComparesByItsArrayAndIsNotItsArray) {
  const Shape buffer = *ParseShape("b(s32[2])");
  EXPECT_TRUE(SameShapeIgnoringLayout(buffer, *ParseShape("b(s32[2]{0})")));
  EXPECT_FALSE(SameShapeIgnoringLayout(buffer, *ParseShape("b(s32[3])")));
  EXPECT_FALSE(SameShapeIgnoringLayout(buffer, *ParseShape("s32[2]")));
  const Shape tuple = *ParseShape("(s32[], b(s32[2]))");
  EXPECT_TRUE(ContainsBuffer(tuple));
  EXPECT_EQ(tuple.ByteSize(), 4 + 8);
  EXPECT_FALSE(ContainsBuffer(*ParseShape("(s32[], f32[2])")));
}

TEST(BufferShape, HoldsOnlyAnArray) {
  EXPECT_THAT(ParseShape("b((f32[2]))"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected an array shape in b(...); got (f32[2])")));
  EXPECT_THAT(ParseShape("b(token[])"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got token[]")));
  EXPECT_THAT(ParseShape("b(f32[2]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("')'")));
  // `b` is an element type only before `(`; `b[2]` is no shape.
  EXPECT_THAT(ParseShape("b[2]"), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

// XLA's custom_call_test: Pin, two in-place updates, Unpin; and an instruction named `b`.
constexpr char kPinUpdateUnpin[] = R"(HloModule m
ENTRY e {
  b = s32[2] parameter(0)
  b0 = b(s32[2]) custom-call(b), custom_call_target="Pin",
    output_to_operand_aliasing={{}: (0, {})}
  b1 = b(s32[2]) custom-call(b0), custom_call_target="xla.gpu.add_one",
    output_to_operand_aliasing={{}: (0, {})}
  ROOT v = s32[2] custom-call(b1), custom_call_target="Unpin",
    output_to_operand_aliasing={{}: (0, {})}
})";

TEST(BufferShape, PinUpdateUnpinVerifiesAndPrintsBack) {
  EXPECT_THAT(ParseAndVerify(kPinUpdateUnpin), IsOk());
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(kPinUpdateUnpin);
  ASSERT_TRUE(module.ok());
  const std::string printed = PrintModule(**module);
  EXPECT_THAT(printed, HasSubstr("b0 = b(s32[2]) custom-call(b), custom_call_target=\"Pin\""));
  absl::StatusOr<std::unique_ptr<Module>> again = ParseHloModule(printed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(PrintModule(**again), printed);
}

TEST(BufferShape, FlowsThroughWhileLoops) {
  // hlo_verifier_test's loop: the buffer is carried in the loop state, Unpinned, updated and
  // Pinned again in the body.
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
cond {
  param = (s32[], b(s32[2])) parameter(0)
  count = s32[] get-tuple-element(param), index=0
  ROOT lt = pred[] compare(count, s32[] constant(3)), direction=LT
}
body {
  param = (s32[], b(s32[2])) parameter(0)
  count = s32[] get-tuple-element(param), index=0
  b3 = b(s32[2]) get-tuple-element(param), index=1
  v0 = s32[2] custom-call(b3), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
  v1 = s32[2] add(v0, v0)
  b6 = b(s32[2]) custom-call(v1), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  ROOT result = (s32[], b(s32[2])) tuple(s32[] add(count, s32[] constant(1)), b6)
}
ENTRY e {
  init = s32[2] parameter(0)
  b0 = b(s32[2]) custom-call(init), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  w = (s32[], b(s32[2])) while((s32[], b(s32[2])) tuple(s32[] constant(0), b0)), condition=cond, body=body
  b1 = b(s32[2]) get-tuple-element(w), index=1
  ROOT v = s32[2] custom-call(b1), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
})"),
              IsOk());
}

TEST(BufferShape, ElementwiseOpsRefuseABuffer) {
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p = s32[2] parameter(0)
  b0 = b(s32[2]) custom-call(p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  ROOT n = b(s32[2]) negate(b0)
})"),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(CustomCallAliasing, PinMayChangeTheLayoutButNotTheArray) {
  // hlo_verifier_test: Pin of f32[4,2]{1,0} as b(f32[4,2]{0,1}) is valid (layouts ignored).
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p0 = f32[4,2]{1,0} parameter(0)
  a = b(f32[4,2]{0,1}) custom-call(p0), custom_call_target="Pin", output_to_operand_aliasing={{}:(0, {})}
  ROOT c = f32[4,2]{0,1} custom-call(a), custom_call_target="Unpin", output_to_operand_aliasing={{}:(0, {})}
})"),
              IsOk());
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p0 = f32[4,2] parameter(0)
  ROOT a = b(f32[2,4]) custom-call(p0), custom_call_target="Pin", output_to_operand_aliasing={{}:(0, {})}
})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("result {} aliased to operand 0 {} to have its shape f32[4,2]; got b(f32[2,4])")));
}

TEST(CustomCallAliasing, OnlyPinAndUnpinMayAliasABufferToAnArray) {
  // Any other target's aliased buffer must alias a buffer (XLA ignores buffers only for
  // Pin/Unpin).
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p = s32[2] parameter(0)
  ROOT b0 = b(s32[2]) custom-call(p), custom_call_target="update", output_to_operand_aliasing={{}: (0, {})}
})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got b(s32[2])")));
  // ... unless the frontend attribute asks to skip the check.
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p = s32[2] parameter(0)
  ROOT b0 = b(s32[2]) custom-call(p), custom_call_target="update", output_to_operand_aliasing={{}: (0, {})}, frontend_attributes={xla_skip_custom_call_alias_shape_check="true"}
})"),
              IsOk());
}

TEST(CustomCallAliasing, IndicesMustNameAnOperandAndSubshapes) {
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = (f32[2], u32[]) custom-call(p), custom_call_target="x", output_to_operand_aliasing={{0}: (0, {})}
})"),
              IsOk());
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = (f32[2], u32[]) custom-call(p), custom_call_target="x", output_to_operand_aliasing={{0}: (1, {})}
})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected an aliased operand number below 1; got 1")));
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = (f32[2], u32[]) custom-call(p), custom_call_target="x", output_to_operand_aliasing={{2}: (0, {})}
})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("aliased shape index of the result")));
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = (f32[2], u32[]) custom-call(p), custom_call_target="x", output_to_operand_aliasing={{0}: (0, {0})}
})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("aliased shape index of operand 0")));
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = (f32[2], u32[]) custom-call(p), custom_call_target="x", output_to_operand_aliasing={{0}: 0}
})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected output_to_operand_aliasing={{output index}")));
  // 19 digits would overflow a naive reader; it is refused, not wrapped.
  EXPECT_THAT(ParseAndVerify(R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = (f32[2], u32[]) custom-call(p), custom_call_target="x", output_to_operand_aliasing={{0}: (9999999999999999999, {})}
})"),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

}  // namespace
}  // namespace perfsim
