// Control flow (while, conditional, call, fusion) and the errors a run reports for ops and
// inputs it cannot take. The memory budget is in memory_test.cc.
#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/verifier.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"
#include "tests/ir/generated_hlo.h"

namespace perfsim {
namespace {

using ::perfsim::testing::F32;
using ::perfsim::testing::Run1;
using ::perfsim::testing::RunHlo;
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
  options.max_loop_iterations = 3;
  EXPECT_THAT(Run1(kSumLoop, {}, options),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("w: expected the device's while loops to end within "
                                 "--max-loop-iterations 3 iterations in all; got more (this "
                                 "loop at iteration 4 had not ended)")));
  // Exactly the five iterations the loop needs are within a budget of 5.
  options.max_loop_iterations = 5;
  PERFSIM_EXPECT_OK(Run1(kSumLoop, {}, options).status());
}

TEST(InterpControl, LoopBudgetCountsNestedLoopsTogether) {
  // The outer loop runs 3 times, each running the inner loop 5 times (its result feeds the
  // outer state, so it is not dead code): 3 + 15 = 18 iterations, so a budget of 17 ends the
  // run while no single loop ever ran more than 5.
  constexpr char kNested[] = R"(
HloModule m
icond {
  s = s32[] parameter(0)
  n = s32[] constant(5)
  ROOT c = pred[] compare(s, n), direction=LT
}
ibody {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT s1 = s32[] add(s, one)
}
ocond {
  s = s32[] parameter(0)
  n = s32[] constant(3)
  ROOT c = pred[] compare(s, n), direction=LT
}
obody {
  s = s32[] parameter(0)
  zero = s32[] constant(0)
  inner = s32[] while(zero), condition=icond, body=ibody
  one = s32[] constant(1)
  t = s32[] add(s, one)
  used = s32[] multiply(inner, zero)
  ROOT s1 = s32[] add(t, used)
}
ENTRY e {
  zero = s32[] constant(0)
  ROOT outer = s32[] while(zero), condition=ocond, body=obody
})";
  InterpreterOptions options;
  options.max_loop_iterations = 18;
  PERFSIM_EXPECT_OK(Run1(kNested, {}, options).status());
  options.max_loop_iterations = 17;
  EXPECT_THAT(Run1(kNested, {}, options),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("--max-loop-iterations 17 iterations in all")));
}

TEST(InterpControl, NeverEndingLoopEndsWithTheLoopBudget) {
  InterpreterOptions options;
  options.max_loop_iterations = 1000;
  EXPECT_THAT(Run1(::perfsim::testing::kNeverEndingWhileHlo, {}, options),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("w: expected the device's while loops to end within "
                                 "--max-loop-iterations 1000 iterations in all")));
}

TEST(InterpControl, CallsNestedBeyondTheLimitAreRefusedWithoutRecursing) {
  // A module that skipped the verifier (validate --hlo runs one) is held to the same depth:
  // 10,000 nested calls overflowed the evaluator's stack.
  std::vector<Literal> inputs;
  inputs.push_back(F32({}, {2}));
  EXPECT_THAT(Run1(::perfsim::testing::CallChainHlo(10000), inputs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected calls nested at most 256 deep; got 10000")));
  // At the limit the run works: -2 after one negate at the end of the chain.
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(::perfsim::testing::CallChainHlo(kMaxCallDepth), inputs));
  EXPECT_EQ(out[0].GetAsDouble(0), -2);
}

TEST(InterpControl, DevicesWithoutCollectivesRunOnAtMostTheThreadsAsked) {
  // 64 devices, --threads 2: the devices are shared out to two worker threads, not one
  // thread each.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ROOT y = f32[4] negate(x)
})";
  std::mutex mu;
  std::set<std::thread::id> threads;
  InterpreterOptions options;
  options.num_devices = 64;
  options.num_threads = 2;
  options.observer = [&](int64_t, const Instruction&, const Literal&) {
    std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
  };
  std::vector<std::vector<Literal>> inputs(1);
  inputs[0].push_back(F32({4}, {1, 2, 3, 4}));
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result, RunHlo(kHlo, inputs, options));
  ASSERT_EQ(result.outputs.size(), 64u);
  for (const std::vector<Literal>& device : result.outputs) {
    EXPECT_THAT(Values(device[0]), ElementsAre(-1, -2, -3, -4));
  }
  EXPECT_GE(threads.size(), 1u);
  EXPECT_LE(threads.size(), 2u);
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
