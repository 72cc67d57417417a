// Control flow (while, conditional, call, fusion) and the errors a run reports for ops and
// inputs it cannot take. The memory budget is in memory_test.cc.
#include <cmath>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::F32;
using ::perfsim::testing::Run1;
using ::perfsim::testing::S32;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::Values;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kSumLoop[] = R"(
HloModule m
cond {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = s32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  acc1 = s32[] add(acc, i)
  ROOT t = (s32[], s32[]) tuple(i1, acc1)
}
ENTRY e {
  zero = s32[] constant(0)
  init = (s32[], s32[]) tuple(zero, zero)
  ROOT w = (s32[], s32[]) while(init), condition=cond, body=body
})";

TEST(InterpControl, WhileLoopRunsUntilTheConditionFails) {
  // i = 0..4 adds 0+1+2+3+4 = 10; the loop stops at i = 5.
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kSumLoop, {}));
  EXPECT_EQ(out[0].GetAsDouble(0), 5);
  EXPECT_EQ(out[1].GetAsDouble(0), 10);
}

TEST(InterpControl, WhileLoopLongerThanTheLimitIsAnError) {
  InterpreterOptions options;
  options.max_while_iterations = 3;
  EXPECT_THAT(Run1(kSumLoop, {}, options),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("w: expected the loop to end within max_while_iterations=3")));
}

TEST(InterpControl, ConditionalRunsTheLastBranchForAnOutOfRangeIndex) {
  // Index 0 runs b0 (x + 1); index 7 is out of range for two branches, so the last (x * 10).
  constexpr char kHlo[] = R"(
HloModule m
b0 { x = f32[] parameter(0)  one = f32[] constant(1)  ROOT y = f32[] add(x, one) }
b1 { x = f32[] parameter(0)  ten = f32[] constant(10)  ROOT y = f32[] multiply(x, ten) }
ENTRY e {
  i = s32[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(i, x, x), branch_computations={b0, b1}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> a, Run1(kHlo, {S32({}, {0}), F32({}, {2})}));
  EXPECT_EQ(a[0].GetAsDouble(0), 3);
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> b, Run1(kHlo, {S32({}, {7}), F32({}, {2})}));
  EXPECT_EQ(b[0].GetAsDouble(0), 20);
}

TEST(InterpControl, PredicatedConditionalAndCallAndFusion) {
  constexpr char kHlo[] = R"(
HloModule m
t { x = f32[] parameter(0)  ROOT y = f32[] negate(x) }
f { x = f32[] parameter(0)  ROOT y = f32[] abs(x) }
sq { x = f32[] parameter(0)  ROOT y = f32[] multiply(x, x) }
fused { x = f32[] parameter(0)  ROOT y = f32[] add(x, x) }
ENTRY e {
  p = pred[] parameter(0)
  x = f32[] parameter(1)
  c = f32[] conditional(p, x, x), true_computation=t, false_computation=f
  s = f32[] call(c), to_apply=sq
  ROOT d = f32[] fusion(s), kind=kLoop, calls=fused
})";
  // p true: -(-3) = 3 -> 9 -> 18. p false: |-3| = 3 -> 9 -> 18 as well; use x = 2 for p:
  // -2 -> 4 -> 8.
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {testing::MakeLiteral(PrimitiveType::kPred, {}, {1}), F32({}, {2})}));
  EXPECT_EQ(out[0].GetAsDouble(0), 8);
}

TEST(InterpControl, UnknownCustomCallTargetIsNamed) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  ROOT y = f32[2] custom-call(x), custom_call_target="tpu_custom_call"
})";
  EXPECT_THAT(Run1(kHlo, {F32({2}, {1, 2})}),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("y: expected a custom-call target the interpreter knows"),
                             HasSubstr("perfsim.gmm"), HasSubstr("got 'tpu_custom_call'"))));
}

TEST(InterpControl, OpsWithoutMeaningOnCpuSayWhy) {
  // Built directly (no parser involved): e { t = token[] after-all()  ROOT i = infeed(t) }.
  Module module("m");
  auto entry = std::make_unique<Computation>("e");
  Instruction* token =
      entry->AddInstruction(std::make_unique<Instruction>(Opcode::kAfterAll, "t", Shape::Token()));
  auto infeed = std::make_unique<Instruction>(
      Opcode::kInfeed, "i", Shape::Tuple({Shape::Array(PrimitiveType::kF32, {2}), Shape::Token()}));
  infeed->AppendOperand(token);
  entry->set_root(entry->AddInstruction(std::move(infeed)));
  module.set_entry(module.AddComputation(std::move(entry)));
  EXPECT_THAT(RunModule(module, {{}}, InterpreterOptions{}),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("i: the interpreter does not run infeed: host and peer "
                                 "transfers happen outside the module")));
}

TEST(InterpControl, ElidedConstantsAreAnErrorAndTupleConstantsWork) {
  // A dump that elided a constant's values cannot be run: the values are unknown.
  constexpr char kElided[] = R"(
HloModule m
ENTRY e {
  ROOT c = f32[3] constant({...})
})";
  EXPECT_THAT(Run1(kElided, {}), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("c: expected literal values; got {...}")));
  constexpr char kTuple[] = R"(
HloModule m
ENTRY e {
  c = (f32[2], s32[]) constant(({1, 2}, 3))
  ROOT g = s32[] get-tuple-element(c), index=1
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kTuple, {}));
  EXPECT_EQ(out[0].GetAsDouble(0), 3);
}

TEST(InterpControl, InputsOfTheWrongShapeAreRejected) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  ROOT y = f32[2] negate(x)
})";
  EXPECT_THAT(
      Run1(kHlo, {F32({3}, {1, 2, 3})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("input 0 for device 0 (parameter x): expected f32[2]; got f32[3]")));
}

TEST(InterpControl, AllocateBufferIsPoisoned) {
  // jax.lax.empty: floats are NaN, integers the sentinel, so reading them shows.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  f = f32[2] custom-call(), custom_call_target="AllocateBuffer"
  i = s32[2] custom-call(), custom_call_target="AllocateBuffer"
  ROOT t = (f32[2], s32[2]) tuple(f, i)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {}));
  EXPECT_TRUE(std::isnan(out[0].GetAsDouble(0)));
  EXPECT_TRUE(std::isnan(out[0].GetAsDouble(1)));
  EXPECT_THAT(Values(out[1]), ElementsAre(kPoisonInteger, kPoisonInteger));
}

}  // namespace
}  // namespace perfsim
