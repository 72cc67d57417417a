// Shape inference for the elementwise, leaf, tuple, shape-changing, control-flow and async
// families. The matmul, data and collective families have their own files
// (shape_inference_{dot,data,collective}_test.cc).
#include "sim/ir/shape_inference.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

// --------------------------------------------------------------------------- dispatcher

TEST(ShapeInference, DispatcherRejectsWrongOperandCount) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4]");
  Instruction* add = b.Add(Opcode::kAdd, "f32[4]", {x}, "add.1");
  EXPECT_THAT(InferShape(*add), FailsWith("add.1: expected 2 operands for add; got 1"));
}

TEST(ShapeInference, InferredShapesCarryNoLayout) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4,8]{0,1}");
  Instruction* neg = b.Add(Opcode::kNegate, "f32[4,8]{0,1}", {x});
  PERFSIM_ASSERT_OK_AND_ASSIGN(Shape shape, InferShape(*neg));
  EXPECT_FALSE(shape.has_layout());
  EXPECT_EQ(shape.ToString(), "f32[4,8]");
}

// -------------------------------------------------------------------------- elementwise

TEST(ShapeInference, BinaryAddKeepsOperandShape) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[2,<=8]");
  Instruction* y = b.Parameter(1, "bf16[2,<=8]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAdd, "bf16[2,8]", {x, y})), InfersShape("bf16[2,<=8]"));
}

TEST(ShapeInference, BinaryRejectsMismatchedDimensions) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]");
  Instruction* y = b.Parameter(1, "f32[4]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kMultiply, "f32[8]", {x, y}, "mul")),
              FailsWith("mul: expected operands of equal shape; got f32[8] and f32[4]"));
}

TEST(ShapeInference, BinaryRejectsMixedElementTypes) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]");
  Instruction* y = b.Parameter(1, "bf16[8]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAdd, "f32[8]", {x, y})),
              FailsWith("expected operands of equal shape; got f32[8] and bf16[8]"));
}

TEST(ShapeInference, ShiftRejectsFloatOperands) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kShiftLeft, "f32[8]", {x, x})),
              FailsWith("expected an integer operand; got f32[8]"));
}

TEST(ShapeInference, AndAcceptsPredAndIntegers) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* p = b.Parameter(0, "pred[3]");
  Instruction* i = b.Parameter(1, "u8[3]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAnd, "pred[3]", {p, p})), InfersShape("pred[3]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kXor, "u8[3]", {i, i})), InfersShape("u8[3]"));
}

TEST(ShapeInference, ExponentialRejectsIntegerOperand) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "s32[8]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kExp, "s32[8]", {x})),
              FailsWith("expected a floating-point or complex operand; got s32[8]"));
}

TEST(ShapeInference, IsFiniteReturnsPred) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[2,3]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kIsFinite, "pred[2,3]", {x})), InfersShape("pred[2,3]"));
}

TEST(ShapeInference, AbsOfComplexReturnsItsComponentType) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "c64[5]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAbs, "f32[5]", {x})), InfersShape("f32[5]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kReal, "f32[5]", {x})), InfersShape("f32[5]"));
}

TEST(ShapeInference, CopyAndOptimizationBarrierPassTuplesThrough) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* t = b.Parameter(0, "(f32[2], s32[])");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kCopy, "(f32[2], s32[])", {t})),
              InfersShape("(f32[2], s32[])"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kOptimizationBarrier, "(f32[2], s32[])", {t})),
              InfersShape("(f32[2], s32[])"));
}

TEST(ShapeInference, CompareReturnsPredOfOperandDimensions) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "s32[4,4]");
  Instruction* cmp = b.Add(Opcode::kCompare, "pred[4,4]", {x, x});
  cmp->mutable_attributes()->comparison_direction = ComparisonDirection::kGe;
  EXPECT_THAT(InferShape(*cmp), InfersShape("pred[4,4]"));
}

TEST(ShapeInference, CompareRequiresDirection) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "s32[4]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kCompare, "pred[4]", {x, x})),
              FailsWith("expected a comparison direction"));
}

TEST(ShapeInference, SelectRequiresPredicateOfOperandDimensions) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* p = b.Parameter(0, "pred[3]");
  Instruction* x = b.Parameter(1, "f32[4]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kSelect, "f32[4]", {p, x, x})),
              FailsWith("expected a predicate with the dimensions of f32[4]; got pred[3]"));
}

TEST(ShapeInference, SelectAcceptsScalarPredicate) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* p = b.Parameter(0, "pred[]");
  Instruction* x = b.Parameter(1, "f32[4]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kSelect, "f32[4]", {p, x, x})), InfersShape("f32[4]"));
}

TEST(ShapeInference, SelectRejectsNonPredPredicate) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* p = b.Parameter(0, "s32[4]");
  Instruction* x = b.Parameter(1, "f32[4]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kSelect, "f32[4]", {p, x, x})),
              FailsWith("expected a pred predicate; got s32[4]"));
}

TEST(ShapeInference, ClampAcceptsScalarBoundsAndRejectsOtherShapes) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* lo = b.Parameter(0, "f32[]");
  Instruction* x = b.Parameter(1, "f32[6]");
  Instruction* bad = b.Parameter(2, "f32[3]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kClamp, "f32[6]", {lo, x, lo})), InfersShape("f32[6]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kClamp, "f32[6]", {lo, x, bad})),
              FailsWith("expected clamp bounds that are scalars or of shape f32[6]; got f32[3]"));
}

TEST(ShapeInference, ConvertTakesDeclaredElementTypeAndOperandDimensions) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[2,3]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kConvert, "f32[2,3]", {x})), InfersShape("f32[2,3]"));
  // The dimensions still come from the operand, so a wrong declaration shows up.
  EXPECT_THAT(InferShape(*b.Add(Opcode::kConvert, "f32[3,2]", {x})), InfersShape("f32[2,3]"));
}

TEST(ShapeInference, BitcastConvertBetweenWidthsAddsOrRemovesMinorDimension) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* wide = b.Parameter(0, "f32[100]");
  Instruction* narrow = b.Parameter(1, "u8[100,4]");
  Instruction* bad = b.Parameter(2, "u8[100,3]");
  // 32-bit to 8-bit: ratio 32/8 = 4 becomes a new minor dimension.
  EXPECT_THAT(InferShape(*b.Add(Opcode::kBitcastConvert, "u8[100,4]", {wide})),
              InfersShape("u8[100,4]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kBitcastConvert, "f32[100]", {narrow})),
              InfersShape("f32[100]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kBitcastConvert, "f32[100]", {bad})),
              FailsWith("expected a minor dimension of size 4"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kBitcastConvert, "u32[100]", {wide})),
              InfersShape("u32[100]"));
}

TEST(ShapeInference, BitcastAcceptsSameBitsAndRejectsOthers) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8,16]");
  // 8*16 elements * 32 bits = 4096 bits = s32[128] = u8[128,4] (512 * 8 bits).
  EXPECT_THAT(InferShape(*b.Add(Opcode::kBitcast, "s32[128]", {x})), InfersShape("s32[128]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kBitcast, "u8[128,4]", {x})), InfersShape("u8[128,4]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kBitcast, "f32[8,8]", {x})),
              FailsWith("expected a result of the operand's size (f32[8,16], 128 x 32 bits); got "
                        "f32[8,8], 64 x 32 bits"));
}

// -------------------------------------------------------------------------------- leaves

TEST(ShapeInference, ParameterAndCustomCallReturnDeclaredShape) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "(f32[2], token[])");
  Instruction* cc = b.Add(Opcode::kCustomCall, "(bf16[4,4], s8[64])", {x});
  cc->mutable_attributes()->custom_call_target = "__cublas$lt$matmul";
  EXPECT_THAT(InferShape(*x), InfersShape("(f32[2], token[])"));
  EXPECT_THAT(InferShape(*cc), InfersShape("(bf16[4,4], s8[64])"));
}

TEST(ShapeInference, CustomCallRejectsMalformedShape) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* cc =
      b.AddShape(Opcode::kCustomCall, Shape::Array(PrimitiveType::kF32, {-3}), {}, "cc");
  EXPECT_THAT(InferShape(*cc), FailsWith("cc: f32[-3]: expected dimension 0 to be non-negative"));
}

TEST(ShapeInference, IotaRequiresDimensionInRange) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* ok = b.Add(Opcode::kIota, "s32[4,8]");
  ok->mutable_attributes()->iota_dimension = 1;
  Instruction* bad = b.Add(Opcode::kIota, "s32[4,8]");
  bad->mutable_attributes()->iota_dimension = 2;
  EXPECT_THAT(InferShape(*ok), InfersShape("s32[4,8]"));
  EXPECT_THAT(InferShape(*bad), FailsWith("expected iota_dimension in [0, 2); got 2"));
}

TEST(ShapeInference, ReplicaAndPartitionIdAreU32Scalars) {
  TestModule m;
  HloBuilder b = m.Entry();
  EXPECT_THAT(InferShape(*b.Add(Opcode::kReplicaId, "u32[]")), InfersShape("u32[]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kPartitionId, "s32[]")), InfersShape("u32[]"));
}

// -------------------------------------------------------------------------------- tuples

TEST(ShapeInference, TupleAndGetTupleElement) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[2]");
  Instruction* y = b.Parameter(1, "s32[]");
  Instruction* t = b.Add(Opcode::kTuple, "(f32[2], s32[])", {x, y});
  EXPECT_THAT(InferShape(*t), InfersShape("(f32[2], s32[])"));
  Instruction* gte = b.Add(Opcode::kGetTupleElement, "s32[]", {t});
  gte->mutable_attributes()->tuple_index = 1;
  EXPECT_THAT(InferShape(*gte), InfersShape("s32[]"));
  Instruction* out_of_range = b.Add(Opcode::kGetTupleElement, "s32[]", {t}, "gte.bad");
  out_of_range->mutable_attributes()->tuple_index = 2;
  EXPECT_THAT(InferShape(*out_of_range),
              FailsWith("gte.bad: expected index in [0, 2) of (f32[2], s32[]); got 2"));
}

// ------------------------------------------------------------------------ shape changing

TEST(ShapeInference, BroadcastMapsOperandDimensions) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[16]");
  Instruction* ok = b.Add(Opcode::kBroadcast, "f32[8,16]", {x});
  ok->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  EXPECT_THAT(InferShape(*ok), InfersShape("f32[8,16]"));
  Instruction* bad = b.Add(Opcode::kBroadcast, "f32[8,16]", {x});
  bad->mutable_attributes()->dimensions = std::vector<int64_t>{0};
  EXPECT_THAT(InferShape(*bad),
              FailsWith("expected result dimension 0 to have the size of operand dimension 0 "
                        "(16); got 8 in f32[8,16]"));
}

TEST(ShapeInference, BroadcastOfScalarTakesOperandElementType) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "u32[]");
  Instruction* bcast = b.Add(Opcode::kBroadcast, "f32[16]", {x});
  bcast->mutable_attributes()->dimensions = std::vector<int64_t>{};
  EXPECT_THAT(InferShape(*bcast), InfersShape("u32[16]"));
}

TEST(ShapeInference, ReshapeRejectsElementCountChange) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[2,4]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kReshape, "f32[4,2,1]", {x})), InfersShape("f32[4,2,1]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kReshape, "f32[2,3]", {x})),
              FailsWith("expected a result of 8 elements like f32[2,4]; got f32[2,3] with 6"));
}

TEST(ShapeInference, TransposePermutesDimensions) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[2,3,5]");
  Instruction* t = b.Add(Opcode::kTranspose, "f32[5,2,3]", {x});
  t->mutable_attributes()->dimensions = std::vector<int64_t>{2, 0, 1};
  EXPECT_THAT(InferShape(*t), InfersShape("f32[5,2,3]"));
  Instruction* bad = b.Add(Opcode::kTranspose, "f32[5,2,3]", {x});
  bad->mutable_attributes()->dimensions = std::vector<int64_t>{2, 0, 0};
  EXPECT_THAT(InferShape(*bad), FailsWith("expected transpose dimensions without repeats"));
}

TEST(ShapeInference, ReverseRejectsDimensionOutOfRange) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[2,3]");
  Instruction* r = b.Add(Opcode::kReverse, "f32[2,3]", {x});
  r->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  EXPECT_THAT(InferShape(*r), InfersShape("f32[2,3]"));
  r->mutable_attributes()->dimensions = std::vector<int64_t>{3};
  EXPECT_THAT(InferShape(*r), FailsWith("expected reverse dimensions in [0, 2); got 3 in {3}"));
}

// -------------------------------------------------------------------------- control flow

TEST(ShapeInference, CallReturnsRootAndChecksArguments) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[]");
  Instruction* y = b.Parameter(1, "s32[]");
  Instruction* call = b.Add(Opcode::kCall, "f32[]", {x, x});
  call->set_to_apply(add);
  EXPECT_THAT(InferShape(*call), InfersShape("f32[]"));
  Instruction* bad = b.Add(Opcode::kCall, "f32[]", {x, y}, "call.bad");
  bad->set_to_apply(add);
  EXPECT_THAT(InferShape(*bad),
              FailsWith("call.bad: expected operand 1 to have the shape of parameter 1 of called "
                        "computation add (f32[]); got s32[]"));
}

TEST(ShapeInference, FusionUsesCalledComputation) {
  TestModule m;
  Computation* add = m.ScalarBinary("fused", "bf16");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[]");
  Instruction* fusion = b.Add(Opcode::kFusion, "bf16[]", {x, x});
  fusion->set_calls({add});
  EXPECT_THAT(InferShape(*fusion), InfersShape("bf16[]"));
  Instruction* missing = b.Add(Opcode::kFusion, "bf16[]", {x}, "fusion.bad");
  EXPECT_THAT(InferShape(*missing),
              FailsWith("fusion.bad: expected a calls computation; got none"));
}

// A counted loop: (s32[], f32[4]) carried; condition i < 10.
struct Loop {
  Computation* condition;
  Computation* body;
};

Loop MakeLoop(TestModule& m, absl::string_view carried, absl::string_view condition_root) {
  HloBuilder cond = m.NewComputation("cond");
  Instruction* cp = cond.Parameter(0, carried);
  Instruction* i = cond.Add(Opcode::kGetTupleElement, "s32[]", {cp});
  i->mutable_attributes()->tuple_index = 0;
  Instruction* limit = cond.Add(Opcode::kConstant, "s32[]");
  Instruction* lt = cond.Add(Opcode::kCompare, condition_root, {i, limit});
  lt->mutable_attributes()->comparison_direction = ComparisonDirection::kLt;
  HloBuilder body = m.NewComputation("body");
  Instruction* bp = body.Parameter(0, carried);
  body.Add(Opcode::kCopy, carried, {bp});
  return {cond.computation(), body.computation()};
}

TEST(ShapeInference, WhileReturnsLoopCarriedShape) {
  TestModule m;
  Loop loop = MakeLoop(m, "(s32[], f32[4])", "pred[]");
  HloBuilder b = m.Entry();
  Instruction* init = b.Parameter(0, "(s32[], f32[4])");
  Instruction* w = b.Add(Opcode::kWhile, "(s32[], f32[4])", {init});
  w->set_condition(loop.condition);
  w->set_body(loop.body);
  EXPECT_THAT(InferShape(*w), InfersShape("(s32[], f32[4])"));
}

TEST(ShapeInference, WhileRejectsConditionNotReturningPred) {
  TestModule m;
  // compare declared s32[]: the condition's root is not pred[].
  Loop loop = MakeLoop(m, "(s32[], f32[4])", "s32[]");
  HloBuilder b = m.Entry();
  Instruction* init = b.Parameter(0, "(s32[], f32[4])");
  Instruction* w = b.Add(Opcode::kWhile, "(s32[], f32[4])", {init}, "while");
  w->set_condition(loop.condition);
  w->set_body(loop.body);
  EXPECT_THAT(InferShape(*w),
              FailsWith("while: expected condition computation cond to return pred[]; got s32[]"));
}

TEST(ShapeInference, WhileRejectsInitOfOtherShape) {
  TestModule m;
  Loop loop = MakeLoop(m, "(s32[], f32[4])", "pred[]");
  HloBuilder b = m.Entry();
  Instruction* init = b.Parameter(0, "(s32[], f32[5])");
  Instruction* w = b.Add(Opcode::kWhile, "(s32[], f32[5])", {init});
  w->set_condition(loop.condition);
  w->set_body(loop.body);
  EXPECT_THAT(InferShape(*w),
              FailsWith("expected condition computation cond to take the operand shape "
                        "(s32[], f32[5]); got (s32[], f32[4])"));
}

TEST(ShapeInference, ConditionalIndexedBranches) {
  TestModule m;
  HloBuilder neg = m.NewComputation("negate");
  neg.Add(Opcode::kNegate, "f32[]", {neg.Parameter(0, "f32[]")});
  HloBuilder conv = m.NewComputation("convert");
  conv.Add(Opcode::kConvert, "f32[]", {conv.Parameter(0, "s32[]")});
  HloBuilder b = m.Entry();
  Instruction* index = b.Parameter(0, "s32[]");
  Instruction* x = b.Parameter(1, "f32[]");
  Instruction* i = b.Parameter(2, "s32[]");
  Instruction* c = b.Add(Opcode::kConditional, "f32[]", {index, x, i});
  c->set_branch_computations({neg.computation(), conv.computation()}, false);
  EXPECT_THAT(InferShape(*c), InfersShape("f32[]"));
  Instruction* swapped = b.Add(Opcode::kConditional, "f32[]", {index, i, x});
  swapped->set_branch_computations({neg.computation(), conv.computation()}, false);
  EXPECT_THAT(InferShape(*swapped),
              FailsWith("expected branch 0 computation negate to take the operand shape s32[]; "
                        "got f32[]"));
}

TEST(ShapeInference, ConditionalRejectsBranchResultMismatch) {
  TestModule m;
  HloBuilder a = m.NewComputation("a");
  a.Add(Opcode::kNegate, "f32[]", {a.Parameter(0, "f32[]")});
  HloBuilder c = m.NewComputation("c");
  c.Add(Opcode::kConvert, "s32[]", {c.Parameter(0, "f32[]")});
  HloBuilder b = m.Entry();
  Instruction* pred = b.Parameter(0, "pred[]");
  Instruction* x = b.Parameter(1, "f32[]");
  Instruction* cond = b.Add(Opcode::kConditional, "f32[]", {pred, x, x});
  cond->set_branch_computations({a.computation(), c.computation()}, true);
  EXPECT_THAT(InferShape(*cond),
              FailsWith("expected every branch to return f32[]; got s32[] from branch 1 (c)"));
  Instruction* three = b.Add(Opcode::kConditional, "f32[]", {pred, x, x, x});
  three->set_branch_computations({a.computation(), a.computation(), a.computation()}, false);
  EXPECT_THAT(InferShape(*three), FailsWith("expected 2 branches for a pred selector; got 3"));
}

TEST(ShapeInference, MapTakesToApplyElementType) {
  TestModule m;
  Computation* lt = m.ScalarBinary("lt", "f32", Opcode::kCompare);
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[3,4]");
  Instruction* map = b.Add(Opcode::kMap, "pred[3,4]", {x, x});
  map->set_to_apply(lt);
  EXPECT_THAT(InferShape(*map), InfersShape("pred[3,4]"));
  Instruction* y = b.Parameter(1, "f32[4,3]");
  Instruction* bad = b.Add(Opcode::kMap, "pred[3,4]", {x, y});
  bad->set_to_apply(lt);
  EXPECT_THAT(InferShape(*bad), FailsWith("expected operands with the dimensions of f32[3,4]"));
}

TEST(ShapeInference, TokensAfterAllAndAddDependency) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* t0 = b.Parameter(0, "token[]");
  Instruction* x = b.Parameter(1, "f32[2]");
  Instruction* joined = b.Add(Opcode::kAfterAll, "token[]", {t0, t0});
  EXPECT_THAT(InferShape(*joined), InfersShape("token[]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAddDependency, "f32[2]", {x, joined})),
              InfersShape("f32[2]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAddDependency, "f32[2]", {x, x})),
              FailsWith("expected a token as operand 1; got f32[2]"));
  // after-all takes operands of any shape (XLA's hlo_parser_test AfterAllWithMultipleOperands
  // joins an f32[] and two tokens); its result is a token all the same.
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAfterAll, "token[]", {t0, x})), InfersShape("token[]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAfterAll, "token[]", {x})), InfersShape("token[]"));
}

// --------------------------------------------------------------------------------- async

TEST(ShapeInference, AsyncStartWrapsCalledComputationAndDoneUnwraps) {
  TestModule m;
  HloBuilder wrapped = m.NewComputation("wrapped");
  wrapped.Add(Opcode::kNegate, "f32[10]", {wrapped.Parameter(0, "f32[10]")});
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[10]");
  // XLA prints ((operands), result, context): the s32[] context is backend-defined.
  Instruction* start = b.Add(Opcode::kAsyncStart, "((f32[10]), f32[10], s32[])", {x});
  start->set_calls({wrapped.computation()});
  EXPECT_THAT(InferShape(*start), InfersShape("((f32[10]), f32[10], s32[])"));
  Instruction* update = b.Add(Opcode::kAsyncUpdate, "((f32[10]), f32[10], s32[])", {start});
  EXPECT_THAT(InferShape(*update), InfersShape("((f32[10]), f32[10], s32[])"));
  Instruction* done = b.Add(Opcode::kAsyncDone, "f32[10]", {update});
  EXPECT_THAT(InferShape(*done), InfersShape("f32[10]"));
}

TEST(ShapeInference, AsyncStartRejectsOperandNotMatchingWrappedParameter) {
  TestModule m;
  HloBuilder wrapped = m.NewComputation("wrapped");
  wrapped.Add(Opcode::kNegate, "f32[10]", {wrapped.Parameter(0, "f32[10]")});
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[12]");
  Instruction* start = b.Add(Opcode::kAsyncStart, "((f32[12]), f32[10])", {x}, "start");
  start->set_calls({wrapped.computation()});
  EXPECT_THAT(InferShape(*start),
              FailsWith("start: expected operand 0 to have the shape of parameter 0 of async "
                        "computation wrapped (f32[10]); got f32[12]"));
}

TEST(ShapeInference, AsyncDoneRejectsOperandThatIsNotAStart) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "(f32[2], f32[2])");
  Instruction* done = b.Add(Opcode::kAllGatherDone, "f32[2]", {x}, "done");
  EXPECT_THAT(
      InferShape(*done),
      FailsWith("done: expected an operand produced by all-gather-start; got parameter p0"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAsyncUpdate, "(f32[2], f32[2])", {x}, "update")),
              FailsWith("update: expected an operand produced by async-start or async-update; "
                        "got parameter p0"));
}

TEST(ShapeInference, CopyStartAndCopyDone) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]{0:S(1)}");
  Instruction* start = b.Add(Opcode::kCopyStart, "(f32[8], f32[8], u32[])", {x});
  EXPECT_THAT(InferShape(*start), InfersShape("(f32[8], f32[8], u32[])"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kCopyDone, "f32[8]", {start})), InfersShape("f32[8]"));
}

}  // namespace
}  // namespace perfsim
