// The module verifier: structure (entry, roots, names, parameter numbering, operand counts,
// cycles, recursion) and shape inference re-run against declared shapes.
#include "sim/ir/verifier.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"
#include "tests/ir/generated_hlo.h"
#include "tests/ir/test_builder.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CallChainHlo;
using ::perfsim::testing::CallFanOutHlo;
using ::perfsim::testing::HloBuilder;
using ::perfsim::testing::IsOk;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::TestModule;
using ::testing::HasSubstr;

MATCHER_P(FailsWith, substring, "") {
  return ::testing::ExplainMatchResult(
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(substring)), arg, result_listener);
}

// ENTRY main { x = f32[8,16] p0; z = f32[] p1; ROOT r = f32[8] reduce(x, z), dims={1}, add }
void BuildReduceModule(TestModule& m, absl::string_view declared = "f32[8]") {
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8,16]{1,0}");
  Instruction* zero = b.Parameter(1, "f32[]");
  Instruction* r = b.Add(Opcode::kReduce, declared, {x, zero}, "r");
  r->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  r->set_to_apply(add);
}

TEST(Verifier, CallDepthIsTheLongestChainOfComputations) {
  for (int64_t depth : {1, 2, 7, 300}) {
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(CallChainHlo(depth));
    ASSERT_TRUE(m.ok()) << m.status();
    absl::StatusOr<int64_t> got = CallDepth(**m);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, depth);
  }
}

TEST(Verifier, AcceptsCallsNestedAnyDepthAsXlaDoes) {
  // XLA parses and verifies chains of 100,000 nested calls; so does the verifier, measuring
  // nothing recursively. CheckCallDepth, which the interpreter runs before it recurses,
  // still refuses what lies beyond kMaxCallDepth, naming the depth and the chain.
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(CallChainHlo(5000));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(VerifyModule(**m), IsOk());
  EXPECT_THAT(CheckCallDepth(**m),
              FailsWith("module chain: expected calls nested at most 256 deep; got 5000 "
                        "(main > c1 > c2 > c3 > ...)"));
  absl::StatusOr<std::unique_ptr<Module>> at_limit =
      ParseHloModule(CallChainHlo(kMaxCallDepth));
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_THAT(CheckCallDepth(**at_limit), IsOk());
  absl::StatusOr<std::unique_ptr<Module>> one_more =
      ParseHloModule(CallChainHlo(kMaxCallDepth + 1));
  ASSERT_TRUE(one_more.ok()) << one_more.status();
  EXPECT_THAT(CheckCallDepth(**one_more), FailsWith("at most 256 deep; got 257"));
}

TEST(Verifier, AcceptsCallsThatExpandExponentiallyAndMeasuresTheExpansion) {
  // Each level calls the next twice: 102 computations, about 5 * 2^100 instructions expanded.
  // A valid module; the interpreter, which would run every call site, refuses it
  // (CheckCallExpansion), while cost remembers each computation and is linear.
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(CallFanOutHlo(100));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(VerifyModule(**m), IsOk());
  EXPECT_THAT(CheckCallExpansion(**m),
              FailsWith("module fan: expected at most 100000000 instructions with every call "
                        "expanded; got more than 2^63"));
  // Ten levels expand to 2 + (5 * 2^10 - 3) = 5119 instructions (f_i has 3 of its own and
  // twice f_(i-1)'s; f0 has 2): fine.
  absl::StatusOr<std::unique_ptr<Module>> small = ParseHloModule(CallFanOutHlo(10));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(CheckCallExpansion(**small), IsOk());
}

TEST(Verifier, AcceptsWellFormedModule) {
  TestModule m;
  BuildReduceModule(m);
  EXPECT_THAT(VerifyModule(m.module()), IsOk());
}

TEST(Verifier, AcceptsLoopAndConditional) {
  TestModule m;
  HloBuilder cond = m.NewComputation("cond");
  Instruction* cp = cond.Parameter(0, "(s32[], f32[4])");
  Instruction* i = cond.Add(Opcode::kGetTupleElement, "s32[]", {cp});
  i->mutable_attributes()->tuple_index = 0;
  Instruction* lt = cond.Add(Opcode::kCompare, "pred[]", {i, i});
  lt->mutable_attributes()->comparison_direction = ComparisonDirection::kLt;
  HloBuilder body = m.NewComputation("body");
  body.Add(Opcode::kCopy, "(s32[], f32[4])", {body.Parameter(0, "(s32[], f32[4])")});
  HloBuilder neg = m.NewComputation("neg");
  neg.Add(Opcode::kNegate, "f32[4]", {neg.Parameter(0, "f32[4]")});
  HloBuilder b = m.Entry();
  Instruction* init = b.Parameter(0, "(s32[], f32[4])");
  Instruction* w = b.Add(Opcode::kWhile, "(s32[], f32[4])", {init});
  w->set_condition(cond.computation());
  w->set_body(body.computation());
  Instruction* x = b.Add(Opcode::kGetTupleElement, "f32[4]", {w});
  x->mutable_attributes()->tuple_index = 1;
  Instruction* pred = b.Parameter(1, "pred[]");
  Instruction* c = b.Add(Opcode::kConditional, "f32[4]", {pred, x, x});
  c->set_branch_computations({neg.computation(), neg.computation()}, true);
  EXPECT_THAT(VerifyModule(m.module()), IsOk());
}

TEST(Verifier, RejectsDeclaredShapeMismatch) {
  TestModule m;
  BuildReduceModule(m, "f32[16]");
  EXPECT_THAT(VerifyModule(m.module()),
              StatusIs(absl::StatusCode::kInvalidArgument, "r: expected f32[8]; got f32[16]"));
}

TEST(Verifier, PrefixesLineAndColumnWhenKnown) {
  TestModule m;
  BuildReduceModule(m, "f32[16]");
  m.module().entry()->FindInstruction("r")->set_location({12, 3});
  EXPECT_THAT(VerifyModule(m.module()), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 "12:3: r: expected f32[8]; got f32[16]"));
}

TEST(Verifier, PrefixesLocationOfShapeInferenceErrors) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "bf16[8,7168]");
  Instruction* w = b.Parameter(1, "bf16[4,2048,7168]");
  Instruction* dot = b.Add(Opcode::kDot, "bf16[8,4,7168]", {x, w}, "dot.3");
  dot->mutable_attributes()->dot_dimension_numbers = DotDimensionNumbers{{}, {}, {1}, {1}};
  dot->set_location({7, 9});
  EXPECT_THAT(VerifyModule(m.module()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "7:9: dot.3: expected lhs contracting dimension 1 (size 7168) to equal rhs "
                       "contracting dimension 1 (size 2048); got 7168 vs 2048"));
}

TEST(Verifier, IgnoresLayoutsAndComparesDynamicBounds) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[<=8,4]{0,1}");
  b.Add(Opcode::kNegate, "f32[<=8,4]{1,0}", {x});
  EXPECT_THAT(VerifyModule(m.module()), IsOk());
  TestModule m2;
  HloBuilder b2 = m2.Entry();
  Instruction* y = b2.Parameter(0, "f32[<=8,4]");
  b2.Add(Opcode::kNegate, "f32[<=6,4]", {y}, "neg");
  EXPECT_THAT(VerifyModule(m2.module()), FailsWith("neg: expected f32[<=8,4]; got f32[<=6,4]"));
}

TEST(Verifier, RejectsMissingEntry) {
  TestModule m;
  HloBuilder b = m.NewComputation("orphan");
  b.Parameter(0, "f32[]");
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("module test: expected an entry computation; got none"));
}

TEST(Verifier, RejectsMissingRoot) {
  TestModule m;
  HloBuilder b = m.Entry();
  b.Parameter(0, "f32[]");
  b.computation()->set_root(nullptr);
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("computation main: expected a root instruction; got none"));
}

TEST(Verifier, RejectsParameterGap) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.NumberedParameter(0, "f32[]", "x");
  Instruction* y = b.NumberedParameter(2, "f32[]", "y");
  b.Add(Opcode::kAdd, "f32[]", {x, y});
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("y: expected a parameter number in [0, 2) (parameters numbered 0..n-1 "
                        "without gaps); got parameter(2)"));
}

TEST(Verifier, RejectsDuplicateParameterNumber) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.NumberedParameter(0, "f32[]", "x");
  Instruction* y = b.NumberedParameter(0, "f32[]", "y");
  b.Add(Opcode::kAdd, "f32[]", {x, y});
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("y: expected a parameter number used once in computation main; got "
                        "parameter(0) also used by x"));
}

TEST(Verifier, RejectsDuplicateInstructionName) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[]", "x");
  b.Add(Opcode::kNegate, "f32[]", {x}, "x");
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("x: expected a name unique in computation main; got a second instruction "
                        "with this name"));
}

TEST(Verifier, AcceptsSameInstructionNameInDifferentComputations) {
  // Real dumps reuse names across computations (e.g. `param_0` in every reducer).
  TestModule m;
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  Instruction* lhs = b.Parameter(0, "f32[]", "lhs");
  Instruction* call = b.Add(Opcode::kCall, "f32[]", {lhs, lhs}, "r");
  call->set_to_apply(add);
  EXPECT_THAT(VerifyModule(m.module()), IsOk());
}

TEST(Verifier, RejectsDuplicateComputationName) {
  TestModule m;
  m.ScalarBinary("add", "f32");
  m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  b.Parameter(0, "f32[]");
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("computation add: expected a name unique in module test"));
}

TEST(Verifier, RejectsCycle) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4]");
  Instruction* a = b.Add(Opcode::kAdd, "f32[4]", {x, x}, "a");
  Instruction* n = b.Add(Opcode::kNegate, "f32[4]", {a}, "n");
  a->set_operand(1, n);  // a -> n -> a
  EXPECT_THAT(VerifyModule(m.module()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("expected an acyclic")));
}

TEST(Verifier, RejectsCycleThroughControlPredecessors) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4]");
  Instruction* a = b.Add(Opcode::kNegate, "f32[4]", {x}, "a");
  Instruction* c = b.Add(Opcode::kNegate, "f32[4]", {a}, "c");
  a->AddControlPredecessor(c);
  EXPECT_THAT(VerifyModule(m.module()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("cycle")));
}

TEST(Verifier, RejectsRecursiveCall) {
  TestModule m;
  HloBuilder f = m.NewComputation("f");
  HloBuilder g = m.NewComputation("g");
  Instruction* fx = f.Parameter(0, "f32[]");
  Instruction* call_g = f.Add(Opcode::kCall, "f32[]", {fx});
  call_g->set_to_apply(g.computation());
  Instruction* gx = g.Parameter(0, "f32[]");
  Instruction* call_f = g.Add(Opcode::kCall, "f32[]", {gx});
  call_f->set_to_apply(f.computation());
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[]");
  b.Add(Opcode::kCall, "f32[]", {x})->set_to_apply(f.computation());
  EXPECT_THAT(VerifyModule(m.module()), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                 HasSubstr("expected a non-recursive call graph")));
}

TEST(Verifier, RejectsWrongOperandCount) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4]");
  b.Add(Opcode::kNegate, "f32[4]", {x, x}, "n");
  EXPECT_THAT(VerifyModule(m.module()), FailsWith("n: expected 1 operands for negate; got 2"));
}

TEST(Verifier, RejectsOperandFromAnotherComputation) {
  TestModule m;
  HloBuilder other = m.NewComputation("other");
  Instruction* foreign = other.Parameter(0, "f32[4]", "foreign");
  HloBuilder b = m.Entry();
  b.Parameter(0, "f32[4]");
  b.Add(Opcode::kNegate, "f32[4]", {foreign}, "n");
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("n: expected operand 0 from computation main; got foreign from another "
                        "computation"));
}

TEST(Verifier, RejectsInvalidDeclaredShape) {
  TestModule m;
  HloBuilder b = m.Entry();
  b.AddShape(Opcode::kParameter, Shape::Array(PrimitiveType::kF32, {-2}), {}, "bad");
  EXPECT_THAT(VerifyModule(m.module()), FailsWith("bad: f32[-2]: expected dimension 0"));
}

TEST(Verifier, RejectsConstantWhoseLiteralDisagreesWithDeclaredShape) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* c = b.Add(Opcode::kConstant, "s32[3]", {}, "c");
  c->mutable_attributes()->literal = Literal(testing::S("s32[2]"));
  EXPECT_THAT(VerifyModule(m.module()), FailsWith("c: expected s32[2]; got s32[3]"));
  c->mutable_attributes()->literal = Literal(testing::S("s32[3]"));
  EXPECT_THAT(VerifyModule(m.module()), IsOk());
}

TEST(Verifier, ChecksReducerSignature) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "s32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8,16]");
  Instruction* zero = b.Parameter(1, "f32[]");
  Instruction* r = b.Add(Opcode::kReduce, "f32[8]", {x, zero}, "r");
  r->mutable_attributes()->dimensions = std::vector<int64_t>{1};
  r->set_to_apply(add);
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("r: expected to_apply computation add taking (f32[], f32[]); got "
                        "parameter 0 of shape s32[]"));
}

TEST(Verifier, ChecksWhileConditionReturnsPred) {
  TestModule m;
  HloBuilder cond = m.NewComputation("cond");
  cond.Add(Opcode::kCopy, "s32[]", {cond.Parameter(0, "s32[]")});
  HloBuilder body = m.NewComputation("body");
  body.Add(Opcode::kNegate, "s32[]", {body.Parameter(0, "s32[]")});
  HloBuilder b = m.Entry();
  Instruction* init = b.Parameter(0, "s32[]");
  Instruction* w = b.Add(Opcode::kWhile, "s32[]", {init}, "w");
  w->set_condition(cond.computation());
  w->set_body(body.computation());
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("w: expected condition computation cond to return pred[]; got s32[]"));
}

TEST(Verifier, ChecksConditionalBranchParameterCount) {
  TestModule m;
  Computation* two_params = m.ScalarBinary("two", "f32");
  HloBuilder one = m.NewComputation("one");
  one.Add(Opcode::kNegate, "f32[]", {one.Parameter(0, "f32[]")});
  HloBuilder b = m.Entry();
  Instruction* index = b.Parameter(0, "s32[]");
  Instruction* x = b.Parameter(1, "f32[]");
  Instruction* c = b.Add(Opcode::kConditional, "f32[]", {index, x, x}, "c");
  c->set_branch_computations({one.computation(), two_params}, false);
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("c: expected branch 1 computation two to take 1 parameter; got 2"));
}

TEST(Verifier, ChecksSortComparatorReturnsPred) {
  TestModule m;
  Computation* add = m.ScalarBinary("not_a_comparator", "f32");
  HloBuilder b = m.Entry();
  Instruction* keys = b.Parameter(0, "f32[16]");
  Instruction* sort = b.Add(Opcode::kSort, "f32[16]", {keys}, "sort");
  sort->mutable_attributes()->dimensions = std::vector<int64_t>{0};
  sort->set_to_apply(add);
  EXPECT_THAT(VerifyModule(m.module()),
              FailsWith("sort: expected comparator not_a_comparator returning pred[]; got f32[]"));
}

TEST(Verifier, ReportsCalleeErrorBeforeCaller) {
  TestModule m;
  // The callee's root is declared wrongly; the caller's declaration is also wrong, but the
  // callee comes first in the call graph's post order.
  HloBuilder callee = m.NewComputation("callee");
  callee.Add(Opcode::kNegate, "f32[3]", {callee.Parameter(0, "f32[4]")}, "inner");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4]");
  b.Add(Opcode::kCall, "f32[5]", {x}, "outer")->set_to_apply(callee.computation());
  EXPECT_THAT(VerifyModule(m.module()), FailsWith("inner: expected f32[4]; got f32[3]"));
}

}  // namespace
}  // namespace perfsim
