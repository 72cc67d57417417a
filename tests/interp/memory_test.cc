// The memory budget: the static need (MemoryNeed, sim/interp/memory_plan.h) against
// hand-derived byte counts, against what the run actually held, and the budget decision's
// independence from thread count and timing.
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/random_inputs.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::F32;
using ::perfsim::testing::Run1;
using ::perfsim::testing::RunHlo;
using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

TEST(InterpMemory, BudgetRefusesARunBeforeItStartsAndGivesNeedAndBudget) {
  // The constant z is 4 bytes and b = f32[1000] is 4000 bytes: 1 device x 4004 bytes, no inputs.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  z = f32[] constant(0)
  ROOT b = f32[1000] broadcast(z), dimensions={}
})";
  InterpreterOptions options;
  options.memory_budget_bytes = 1000;
  EXPECT_THAT(Run1(kHlo, {}, options),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("memory budget: the run needs 4004 bytes (inputs 0 + 1 device x "
                                 "4004, peaking at b); budget 1000 bytes")));
  options.memory_budget_bytes = 4004;
  EXPECT_TRUE(Run1(kHlo, {}, options).ok());
}

TEST(InterpMemory, BuffersAreReleasedAfterTheirLastUse) {
  // x (4000 bytes, an input held for the whole run) -> a -> b -> c, each 4000 bytes. With
  // values dropped after their last use at most x and two of a, b, c are alive: 12000 bytes.
  // Keeping everything would need 16000.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[1000] parameter(0)
  a = f32[1000] negate(x)
  b = f32[1000] negate(a)
  ROOT c = f32[1000] negate(b)
})";
  std::vector<std::vector<Literal>> inputs(1);
  inputs[0].push_back(F32({1000}, {}));
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result, RunHlo(kHlo, inputs));
  EXPECT_EQ(result.memory.input_bytes, 4000);
  EXPECT_EQ(result.memory.device_bytes, 8000);
  EXPECT_EQ(result.memory.total_bytes, 12000);
  // The run itself needs less: the input is the run's own (moved into the entry), and each
  // negate writes into its operand's buffer, which dies with it, so x's 4000 bytes are all.
  EXPECT_EQ(result.observed_peak_bytes, 4000);
}

TEST(InterpMemory, AFusionCountsItsComputationsPeakAndNamesWhereItIs) {
  // f holds a, b and c (400 bytes each) at once while c is made: 1200 bytes, the device's
  // peak, at c inside y. After y only its result (400) is left. Input x: 400 bytes.
  constexpr char kHlo[] = R"(
HloModule m
f {
  p = f32[100] parameter(0)
  a = f32[100] exponential(p)
  b = f32[100] negate(a)
  ROOT c = f32[100] add(a, b)
}
ENTRY e {
  x = f32[100] parameter(0)
  ROOT y = f32[100] fusion(x), kind=kLoop, calls=f
})";
  std::vector<std::vector<Literal>> inputs(1);
  inputs[0].push_back(F32({100}, {}));
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result, RunHlo(kHlo, inputs));
  EXPECT_EQ(result.memory.device_bytes, 1200);
  EXPECT_EQ(result.memory.total_bytes, 1600);
  EXPECT_EQ(result.memory.peak_at, "y > c");
  // In the run, x is handed to f and exponential writes into it (p dies there); b is new (a
  // lives on); c writes into a's buffer: x's 400 and b's 400.
  EXPECT_EQ(result.observed_peak_bytes, 800);
}

TEST(InterpMemory, WhileLoopStateSharedThroughTuplesCountsOnce) {
  // State (i: s32[], w: f32[100], a: f32[250]); the body hands w back unchanged and makes
  // i1 (4 bytes) and n = -a (1000 bytes).
  //   inputs: x 400 + y 1000 = 1400 bytes.
  //   constants: zero, one, three: 12 bytes.
  //   body peak: i1 + n = 1004 bytes; the state carried from the previous iteration is the
  //     leaves the body does not hand back unchanged, i and a: 1004 bytes; w stays x's buffer
  //     (counting it again would add 400). While the loop runs: 1004 + 1004 = 2008 bytes.
  //   device: 12 + 2008 = 2020; total 1400 + 2020 = 3420 bytes.
  // The loop runs 3 times, so the second iteration reaches that peak in the actual run too.
  constexpr char kHlo[] = R"(
HloModule m
cond {
  s = (s32[], f32[100], f32[250]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}
body {
  s = (s32[], f32[100], f32[250]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  w = f32[100] get-tuple-element(s), index=1
  a = f32[250] get-tuple-element(s), index=2
  n = f32[250] negate(a)
  ROOT t = (s32[], f32[100], f32[250]) tuple(i1, w, n)
}
ENTRY e {
  x = f32[100] parameter(0)
  y = f32[250] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[100], f32[250]) tuple(zero, x, y)
  loop = (s32[], f32[100], f32[250]) while(init), condition=cond, body=body
  ROOT r = f32[250] get-tuple-element(loop), index=2
})";
  std::vector<std::vector<Literal>> inputs(1);
  inputs[0].push_back(F32({100}, {}));
  inputs[0].push_back(F32({250}, {1}));
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result, RunHlo(kHlo, inputs));
  EXPECT_EQ(result.memory.input_bytes, 1400);
  EXPECT_EQ(result.memory.constant_bytes, 12);
  EXPECT_EQ(result.memory.device_bytes, 2020);
  EXPECT_EQ(result.memory.total_bytes, 3420);
  // In the run, the state is handed to each iteration and n = -a writes into a's buffer (y's,
  // the tuple holding it already dropped after its last get-tuple-element): inputs 1400,
  // constants 12, i and i1 8.
  EXPECT_EQ(result.observed_peak_bytes, 1420);
  EXPECT_EQ(result.outputs[0][0].GetAsDouble(0), -1);  // three negations of 1
}

TEST(InterpMemory, EveryDeviceAndInputSetCounts) {
  // 4 devices, each with its own input set (inputs 4 x 400) and its own negate (400 each).
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[100] parameter(0)
  ROOT y = f32[100] negate(x)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> module, ParseHloModule(kHlo));
  PERFSIM_ASSERT_OK_AND_ASSIGN(MemoryNeed per_device, ComputeMemoryNeed(*module, 4, 4));
  EXPECT_EQ(per_device.total_bytes, 4 * 400 + 4 * 400);
  // One input set shared by all devices is held once.
  PERFSIM_ASSERT_OK_AND_ASSIGN(MemoryNeed shared, ComputeMemoryNeed(*module, 4, 1));
  EXPECT_EQ(shared.total_bytes, 400 + 4 * 400);
}

// f32[2305843009213693951] is 2^63 - 4 bytes: one such buffer fits int64, two do not.
constexpr char kNearInt64Elements[] = "2305843009213693951";
constexpr int64_t kInt64Limit = std::numeric_limits<int64_t>::max();

TEST(InterpMemory, ANeedBeyondInt64SaturatesInsteadOfWrapping) {
  // a and b = negate(a) are alive together: 2 x (2^63 - 4) bytes, more than int64 counts.
  // A wrapped sum is negative and would pass any budget; the plan saturates at the limit.
  const std::string hlo = absl::StrCat(R"(
HloModule m
ENTRY e {
  x = f32[] parameter(0)
  a = f32[)",
                                       kNearInt64Elements, R"(] broadcast(x), dimensions={}
  b = f32[)",
                                       kNearInt64Elements, R"(] negate(a)
  ROOT c = f32[)",
                                       kNearInt64Elements, R"(] add(a, b)
})");
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> module, ParseHloModule(hlo));
  PERFSIM_ASSERT_OK_AND_ASSIGN(MemoryNeed need, ComputeMemoryNeed(*module, 1, 1));
  EXPECT_EQ(need.device_bytes, kInt64Limit);
  EXPECT_EQ(need.total_bytes, kInt64Limit);
}

TEST(InterpMemory, DevicesTimesANeedBeyondInt64SaturatesAndEveryBudgetRefusesIt) {
  // One device needs 2^63 - 4 bytes (fits); the 4-byte input plus it, or two devices of it,
  // overflow int64. Even the largest budget refuses the saturated need, with need vs budget.
  const std::string hlo = absl::StrCat(R"(
HloModule m
ENTRY e {
  x = f32[] parameter(0)
  ROOT a = f32[)",
                                       kNearInt64Elements, R"(] broadcast(x), dimensions={}
})");
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> module, ParseHloModule(hlo));
  PERFSIM_ASSERT_OK_AND_ASSIGN(MemoryNeed one, ComputeMemoryNeed(*module, 1, 1));
  EXPECT_EQ(one.device_bytes, kInt64Limit - 3);
  EXPECT_EQ(one.total_bytes, kInt64Limit);
  PERFSIM_ASSERT_OK_AND_ASSIGN(MemoryNeed two, ComputeMemoryNeed(*module, 2, 1));
  EXPECT_EQ(two.total_bytes, kInt64Limit);
  EXPECT_THAT(CheckMemoryBudget(two, kInt64Limit),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("the run needs at least 9223372036854775807 (int64's limit) "
                                 "bytes (inputs 4 + 2 devices x 9223372036854775804")));
}

std::string ReadGolden(const std::string& name) {
  std::ifstream file(std::string(PERFSIM_TESTDATA_DIR) + "/hlo/jax/" + name);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(InterpMemory, DecisionAtAndJustBelowTheNeedIsTheSameWhateverTheThreads) {
  // The 8-device EP MoE gradient (ragged all-to-alls, all-gathers): with the old budget,
  // checked while threads allocated, --memory-budget 1300KiB passed or failed from run to run.
  // The decision is now made before the run, from the program alone.
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Module> module,
      ParseHloModule(ReadGolden("moe_ep_ragged_a2a_grad.compiled.hlo"), "grad"));
  constexpr int64_t kDevices = 8;
  PERFSIM_ASSERT_OK_AND_ASSIGN(auto inputs, MakeRandomInputs(*module, kDevices, 3));
  PERFSIM_ASSERT_OK_AND_ASSIGN(MemoryNeed need, ComputeMemoryNeed(*module, kDevices, kDevices));
  ASSERT_GT(need.total_bytes, 0);
  for (int64_t threads : {1, 8}) {
    for (int repeat = 0; repeat < 3; ++repeat) {
      SCOPED_TRACE(absl::StrCat("threads ", threads, ", repeat ", repeat));
      InterpreterOptions options;
      options.num_devices = kDevices;
      options.num_threads = threads;
      options.memory_budget_bytes = need.total_bytes;
      PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult at_need, RunModule(*module, inputs, options));
      EXPECT_EQ(at_need.memory.total_bytes, need.total_bytes);
      options.memory_budget_bytes = need.total_bytes - 1;
      EXPECT_THAT(RunModule(*module, inputs, options),
                  StatusIs(absl::StatusCode::kResourceExhausted,
                           HasSubstr(absl::StrCat("needs ", need.total_bytes, " bytes (inputs ",
                                                  need.input_bytes, " + 8 devices x ",
                                                  need.device_bytes, ", each device peaking at ",
                                                  need.peak_at, "); budget ",
                                                  need.total_bytes - 1, " bytes"))));
    }
  }
}

}  // namespace
}  // namespace perfsim
