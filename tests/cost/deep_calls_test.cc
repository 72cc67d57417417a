// Cost and op counts walk the call graph callees first with an explicit stack and remember
// each computation, so nesting as deep as the input and computations called from many sites
// neither overflow the stack nor take exponential time (a chain of 5,000 nested calls
// overflowed `perfsim cost`; XLA parses chains of 100,000).
#include <cmath>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/cost/module_cost.h"
#include "sim/cost/op_counts.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"
#include "tests/ir/generated_hlo.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CallChainHlo;
using ::perfsim::testing::CallFanOutHlo;

std::unique_ptr<Module> ParseVerified(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "deep.hlo");
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return nullptr;
  const absl::Status verified = VerifyModule(**module);
  EXPECT_TRUE(verified.ok()) << verified;
  return *std::move(module);
}

// `depth` loop fusions, each fusing the next; the innermost negates an f32[8].
std::string FusionChainHlo(int depth) {
  std::string text = "HloModule fusions\n\n";
  absl::StrAppend(&text, "fused_", depth - 1,
                  " {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] negate(p)\n}\n\n");
  for (int i = depth - 2; i >= 1; --i) {
    absl::StrAppend(&text, "fused_", i,
                    " {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] fusion(p), kind=kLoop, "
                    "calls=fused_",
                    i + 1, "\n}\n\n");
  }
  absl::StrAppend(&text,
                  "ENTRY main {\n  x = f32[8] parameter(0)\n  ROOT r = f32[8] fusion(x), "
                  "kind=kLoop, calls=fused_1\n}\n");
  return text;
}

TEST(DeepCalls, CostOfTwentyThousandNestedCallsIsTheCostOfTheirOneNegate) {
  absl::StatusOr<Chip> chip = ResolveChip("tpu_v5p");
  ASSERT_TRUE(chip.ok()) << chip.status();
  std::unique_ptr<Module> deep = ParseVerified(CallChainHlo(20000));
  std::unique_ptr<Module> flat = ParseVerified(CallChainHlo(1));  // ROOT r = negate(x)
  ASSERT_NE(deep, nullptr);
  ASSERT_NE(flat, nullptr);
  for (CostMode mode : {CostMode::kTrue, CostMode::kXlaCompatible}) {
    absl::StatusOr<ModuleCost> d = CostModule(*deep, *chip, ModuleCostOptions{.mode = mode});
    absl::StatusOr<ModuleCost> f = CostModule(*flat, *chip, ModuleCostOptions{.mode = mode});
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE(f.ok()) << f.status();
    // The calls only pass the scalar on: one negate of one element in all, and a call's time
    // is its callee's, so the chain takes the negate's time.
    EXPECT_EQ(d->totals.flops, 1);
    EXPECT_EQ(f->totals.flops, 1);
    EXPECT_GT(f->seconds, 0);
    EXPECT_DOUBLE_EQ(d->seconds, f->seconds);
  }
}

TEST(DeepCalls, CountsOfACallFanOutAreLinearInTheModule) {
  // f_i calls f_(i-1) twice and f0 negates once: main -> f60 runs 2^60 negates, which a walk
  // over every call site would visit one by one.
  std::unique_ptr<Module> fan = ParseVerified(CallFanOutHlo(60));
  ASSERT_NE(fan, nullptr);
  const CountOptions options{.mode = CostMode::kTrue, .num_devices = 1};
  EXPECT_EQ(CountComputation(*fan->entry(), options).flops, std::ldexp(1.0, 60));
  absl::StatusOr<Chip> chip = ResolveChip("tpu_v5p");
  ASSERT_TRUE(chip.ok()) << chip.status();
  absl::StatusOr<ModuleCost> cost = CostModule(*fan, *chip, ModuleCostOptions{});
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->totals.flops, std::ldexp(1.0, 60));
}

TEST(DeepCalls, FiveThousandNestedFusionsCountTheirInnermostNegate) {
  // Fusion byte counting follows a parameter into nested fusions (XLA's
  // FusionParameterReadBytes); that too is remembered per parameter, callees first.
  std::unique_ptr<Module> m = ParseVerified(FusionChainHlo(5000));
  ASSERT_NE(m, nullptr);
  for (CostMode mode : {CostMode::kTrue, CostMode::kXlaCompatible}) {
    const OpCounts c = CountComputation(*m->entry(), CountOptions{.mode = mode, .num_devices = 1});
    EXPECT_EQ(c.flops, 8);  // one negate of f32[8]
    // The outer fusion writes its f32[8] result, 32 bytes. Its parameter's only user is a
    // nested fusion that is the fused root, whose parameter feeds its root directly: XLA's
    // FusionParameterReadBytes then counts what the nested fusion's users read, and a root
    // has none, so the read is 0 bytes at every level (XLA's rule, kept in both modes).
    EXPECT_EQ(c.bytes_accessed, 32);
  }
  absl::StatusOr<Chip> chip = ResolveChip("tpu_v5p");
  ASSERT_TRUE(chip.ok()) << chip.status();
  absl::StatusOr<ModuleCost> cost = CostModule(*m, *chip, ModuleCostOptions{});
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_GT(cost->seconds, 0);
}

}  // namespace
}  // namespace perfsim
