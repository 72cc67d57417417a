// Platform evidence (FindLoweringPlatform) and the StableHLO check (CheckNotStableHlo).
#include "sim/ir/lowering_platform.h"

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::IsOk;
using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

std::unique_ptr<Module> Parse(absl::string_view text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "test.hlo");
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(*module) : nullptr;
}

std::string ReadExample(const std::string& name) {
  std::ifstream in(absl::StrCat(PERFSIM_SOURCE_DIR, "/examples/hlo/", name));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The README's example pair (tools/jax/dump_platform_examples.py): one MoE layer lowered by JAX
// for CPU, where each ragged_dot became a dot over a [E=8, T*k=8192, D=1024] masked operand,
// and for TPU, where the three ragged-dots stay.
TEST(LoweringPlatform, FindsJaxsCpuDecompositionOfRaggedDot) {
  std::unique_ptr<Module> module = Parse(ReadExample("moe_layer.cpu.hlo"));
  ASSERT_NE(module, nullptr);
  std::optional<PlatformEvidence> evidence = FindLoweringPlatform(*module);
  ASSERT_TRUE(evidence.has_value());
  EXPECT_EQ(evidence->platform, LoweringPlatform::kCpu);
  EXPECT_THAT(evidence->instruction, HasSubstr("dot"));
  EXPECT_THAT(evidence->reason, HasSubstr("bf16[8,8192,1024]"));
}

TEST(LoweringPlatform, TheTpuLoweringOfTheSameLayerShowsNoPlatform) {
  std::unique_ptr<Module> module = Parse(ReadExample("moe_layer.tpu.hlo"));
  ASSERT_NE(module, nullptr);
  EXPECT_FALSE(FindLoweringPlatform(*module).has_value());
}

// A masked operand alone is not evidence: the dot must consume it. And a select of rank 2
// (an ordinary masked matrix) is not the [groups, rows, ...] decomposition.
TEST(LoweringPlatform, AnOrdinaryMaskedMatmulIsNotEvidence) {
  std::unique_ptr<Module> module = Parse(R"(
HloModule m
ENTRY e {
  x = f32[4,8] parameter(0)
  w = f32[8,2] parameter(1)
  i = s32[4,8] iota(), iota_dimension=0
  c0 = s32[] constant(0)
  c = s32[4,8] broadcast(c0), dimensions={}
  lo = pred[4,8] compare(c, i), direction=LE
  hi = pred[4,8] compare(i, c), direction=LT
  m = pred[4,8] and(lo, hi)
  z0 = f32[] constant(0)
  z = f32[4,8] broadcast(z0), dimensions={}
  s = f32[4,8] select(m, x, z)
  ROOT d = f32[4,2] dot(s, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_NE(module, nullptr);
  EXPECT_FALSE(FindLoweringPlatform(*module).has_value());
}

TEST(LoweringPlatform, CustomCallTargetsAndBackendConfigsNameTheirPlatform) {
  struct Case {
    const char* instruction;
    LoweringPlatform platform;
  };
  const Case cases[] = {
      {R"(ROOT c = f32[4] custom-call(x), custom_call_target="__cublas$gemm")",
       LoweringPlatform::kGpu},
      {R"(ROOT c = f32[4] custom-call(x), custom_call_target="tpu_custom_call")",
       LoweringPlatform::kTpu},
      {R"(ROOT c = f32[4] custom-call(x), custom_call_target="__onednn$matmul")",
       LoweringPlatform::kCpu},
      {R"(ROOT c = f32[4] negate(x), backend_config={"outer_dimension_partitions":["2"]})",
       LoweringPlatform::kCpu},
      {R"(ROOT c = f32[4] negate(x), backend_config={"operation_queue_id":"0"})",
       LoweringPlatform::kGpu},
  };
  for (const Case& c : cases) {
    std::unique_ptr<Module> module =
        Parse(absl::StrCat("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ",
                           c.instruction, "\n}\n"));
    ASSERT_NE(module, nullptr) << c.instruction;
    std::optional<PlatformEvidence> evidence = FindLoweringPlatform(*module);
    ASSERT_TRUE(evidence.has_value()) << c.instruction;
    EXPECT_EQ(evidence->platform, c.platform) << c.instruction;
    EXPECT_EQ(evidence->instruction, "c");
  }
}

TEST(StableHlo, MlirModulesAreRefusedAtTheirFirstTokenWithWhatToDo) {
  const char* kMlir =
      "module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n"
      "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n";
  EXPECT_THAT(CheckNotStableHlo(kMlir, "f.mlir"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("f.mlir:1:1: expected HLO text")));
  EXPECT_THAT(ParseHloModule(kMlir, "f.mlir").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("as_text(dialect=\"hlo\")")));
  // Comments and blank lines first: the location is the token's.
  EXPECT_THAT(CheckNotStableHlo("// dumped\n\n  func.func @main() {}", "g"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("g:3:3: expected HLO")));
  EXPECT_THAT(CheckNotStableHlo("#loc1 = loc(\"x.py\":1:0)\nmodule {}", "h"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("h:1:1:")));
}

TEST(StableHlo, HloTextIsLeftToTheHloParser) {
  EXPECT_THAT(CheckNotStableHlo("HloModule module\nENTRY e { ROOT c = f32[] constant(1) }", "a"),
              IsOk());
  // A headerless HLO text whose first computation is named `module` is still HLO.
  EXPECT_THAT(CheckNotStableHlo("module {\n  ROOT c = f32[] constant(1)\n}\n", "b"), IsOk());
  EXPECT_THAT(CheckNotStableHlo("", "c"), IsOk());
}

}  // namespace
}  // namespace perfsim
