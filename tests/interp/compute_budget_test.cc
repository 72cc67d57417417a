// The compute budget (sim/interp/compute_plan.h): matrix-op FLOP counted from the program,
// loops by their trip counts, refused before anything runs; loops the count cannot see stop
// at run time when a device passes its share.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/compute_plan.h"
#include "sim/interp/interpreter.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::F32;
using ::perfsim::testing::RunHlo;
using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

// The shape of the corpus's while_fp8_gemm_loop.hlo at test size: a loop of `trips` (counted:
// i from START while i CMP BOUND, i STEP) around f32[M,K] x f32[N,K]^T, so each iteration is
// 2·M·N·K FLOP.
std::string LoopModule(const std::string& start, const std::string& cmp, const std::string& bound,
                       const std::string& step_op, const std::string& step) {
  return absl::StrReplaceAll(
      R"(HloModule loop
cond {
  p = (s32[], f32[4,8], f32[6,8], f32[4,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(BOUND)
  ROOT c = pred[] compare(i, n), direction=CMP
}
body {
  p = (s32[], f32[4,8], f32[6,8], f32[4,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4,8] get-tuple-element(p), index=1
  y = f32[6,8] get-tuple-element(p), index=2
  acc = f32[4,6] get-tuple-element(p), index=3
  d = f32[4,6] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  sum = f32[4,6] add(acc, d)
  s = s32[] constant(STEP)
  next = s32[] STEP_OP(i, s)
  ROOT t = (s32[], f32[4,8], f32[6,8], f32[4,6]) tuple(next, x, y, sum)
}
ENTRY e {
  x = f32[4,8] parameter(0)
  y = f32[6,8] parameter(1)
  i0 = s32[] START
  z = f32[] constant(0)
  acc = f32[4,6] broadcast(z), dimensions={}
  t = (s32[], f32[4,8], f32[6,8], f32[4,6]) tuple(i0, x, y, acc)
  w = (s32[], f32[4,8], f32[6,8], f32[4,6]) while(t), condition=cond, body=body
  ROOT r = f32[4,6] get-tuple-element(w), index=3
}
)",
      {{"START", start}, {"CMP", cmp}, {"BOUND", bound}, {"STEP_OP", step_op}, {"STEP", step}});
}

constexpr double kDotFlops = 2.0 * 4 * 6 * 8;  // 384

std::optional<int64_t> Trips(const std::string& hlo) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(hlo);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return std::nullopt;
  for (const auto& instruction : (*module)->entry()->instructions()) {
    if (instruction->opcode() == Opcode::kWhile) return StaticTripCount(*instruction);
  }
  return std::nullopt;
}

TEST(ComputeBudget, CountedLoopTripCounts) {
  EXPECT_EQ(Trips(LoopModule("constant(0)", "LT", "20", "add", "1")), 20);
  EXPECT_EQ(Trips(LoopModule("constant(0)", "LE", "20", "add", "3")), 7);       // 0,3,..,18
  EXPECT_EQ(Trips(LoopModule("constant(0)", "LT", "20", "add", "3")), 7);       // 0,3,..,18
  EXPECT_EQ(Trips(LoopModule("constant(10)", "GT", "0", "subtract", "2")), 5);  // 10,8,..,2
  EXPECT_EQ(Trips(LoopModule("constant(10)", "GE", "0", "add", "-5")), 3);      // 10,5,0
  EXPECT_EQ(Trips(LoopModule("constant(7)", "NE", "1", "subtract", "3")), 2);   // 7,4
  EXPECT_EQ(Trips(LoopModule("constant(30)", "LT", "20", "add", "1")), 0);
  // Never ends, or never reaches the bound exactly: not a count.
  EXPECT_EQ(Trips(LoopModule("constant(0)", "LT", "20", "add", "-1")), std::nullopt);
  EXPECT_EQ(Trips(LoopModule("constant(0)", "NE", "5", "add", "2")), std::nullopt);
  // A start that is not a constant.
  EXPECT_EQ(Trips(LoopModule("parameter(2)", "LT", "20", "add", "1")), std::nullopt);
}

TEST(ComputeBudget, NeedCountsLoopTrips) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> module,
                               ParseHloModule(LoopModule("constant(0)", "LT", "20", "add", "1")));
  PERFSIM_ASSERT_OK_AND_ASSIGN(ComputeNeed need, ComputeComputeNeed(*module, 2));
  EXPECT_EQ(need.device_flops, 20 * kDotFlops);
  EXPECT_EQ(need.total_flops, 2 * 20 * kDotFlops);
  EXPECT_EQ(need.largest_at, "w > d");
  EXPECT_FALSE(need.lower_bound);
  EXPECT_THAT(CheckComputeBudget(need, 2 * 20 * kDotFlops), ::perfsim::testing::IsOk());
  EXPECT_THAT(
      CheckComputeBudget(need, 1000),
      StatusIs(absl::StatusCode::kResourceExhausted,
               HasSubstr("compute budget: the run needs 15360 FLOP in matrix ops (2 devices x "
                         "7680, most at w > d: 7680); the interpreter's limit is 1000 FLOP")));
}

TEST(ComputeBudget, RunRefusedBeforeItStarts) {
  InterpreterOptions options;
  options.max_flops = 20 * kDotFlops - 1;
  const std::vector<std::vector<Literal>> inputs = {
      {F32({4, 8}, std::vector<double>(32, 1.0)), F32({6, 8}, std::vector<double>(48, 1.0))}};
  const std::string hlo = LoopModule("constant(0)", "LT", "20", "add", "1");
  EXPECT_THAT(RunHlo(hlo, inputs, options), StatusIs(absl::StatusCode::kResourceExhausted,
                                                     HasSubstr("needs 7680 FLOP in matrix ops")));
  options.max_flops = 20 * kDotFlops;
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result, RunHlo(hlo, inputs, options));
  EXPECT_EQ(result.outputs[0][0].GetAsDouble(0), 20 * 8);  // 20 iterations of 8 ones
}

TEST(ComputeBudget, LoopOfUnknownTripsStopsAtRunTime) {
  // The start comes from a parameter: the static count sees one iteration (a lower bound),
  // the run stops on the iteration that passes the budget.
  InterpreterOptions options;
  options.max_flops = 10 * kDotFlops;
  Literal start(Shape::Array(PrimitiveType::kS32, {}));
  start.SetFromInt64(0, 0);
  const std::vector<std::vector<Literal>> inputs = {{F32({4, 8}, std::vector<double>(32, 1.0)),
                                                     F32({6, 8}, std::vector<double>(48, 1.0)),
                                                     start}};
  const std::string hlo = LoopModule("parameter(2)", "LT", "20", "add", "1");
  EXPECT_THAT(RunHlo(hlo, inputs, options),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("w: d: compute budget: expected the matrix ops of device 0 to "
                                 "stay within its share of the interpreter's limit (3840 FLOP / "
                                 "1 devices = 3840 FLOP); got 4224")));
  start.SetFromInt64(0, 10);  // 10 iterations fit
  const std::vector<std::vector<Literal>> fitting = {{F32({4, 8}, std::vector<double>(32, 1.0)),
                                                      F32({6, 8}, std::vector<double>(48, 1.0)),
                                                      start}};
  PERFSIM_EXPECT_OK(RunHlo(hlo, fitting, options));
}

TEST(ComputeBudget, MovedInputsGiveTheSameOutputs) {
  // RunModule with inputs it may take (&&) and with inputs it copies agree.
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> module,
                               ParseHloModule(LoopModule("constant(0)", "LT", "3", "add", "1")));
  std::vector<std::vector<Literal>> inputs = {
      {F32({4, 8}, std::vector<double>(32, 0.5)), F32({6, 8}, std::vector<double>(48, -2.0))}};
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult copied, RunModule(*module, inputs, {}));
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult moved, RunModule(*module, std::move(inputs), {}));
  ASSERT_EQ(moved.outputs[0].size(), 1u);
  EXPECT_TRUE(moved.outputs[0][0].data() == copied.outputs[0][0].data());
  EXPECT_EQ(moved.outputs[0][0].GetAsDouble(0), 3 * 8 * 0.5 * -2.0);
}

}  // namespace
}  // namespace perfsim
