// Kernel configs that counting reads from backend_config JSON through typed messages
// (proto/backend_config.proto, sim/ir/backend_config.h): a Pallas / Mosaic kernel's declared
// cost_estimate and a cuBLAS gemm's dot dimension numbers (sim/cost/op_counts_custom_call.cc).
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cost/op_counts.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr CountOptions kTrue{.mode = CostMode::kTrue, .num_devices = 1};

// A module whose root `c` is f32[8,16] custom-call(x f32[8,16]) of `target` with `config` as its
// backend_config text. Without a declared cost its true counts are the default: 0 flops, 512
// bytes read, 512 written, 1024 accessed.
std::unique_ptr<Module> KernelWithConfig(const std::string& target, const std::string& config) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(
      "HloModule m\nENTRY e {\n  x = f32[8,16]{1,0} parameter(0)\n"
      "  ROOT c = f32[8,16]{1,0} custom-call(x), custom_call_target=\"" +
          target + "\", backend_config=" + config + "\n}\n",
      "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

const Instruction& Root(const Module& m) { return *m.entry()->root(); }

TEST(DeclaredCost, TopLevelEstimateWinsOverPallasCustomCallConfig) {
  auto m = KernelWithConfig(
      "my_kernel",
      R"({"cost_estimate":{"flops":3},"custom_call_config":{"cost_estimate":{"flops":9}}})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 3);
}

TEST(DeclaredCost, AbsentFieldsKeepTheDefaultCounts) {
  // Only flops declared: transcendentals stay 0 and bytes the default 512 + 512.
  auto m = KernelWithConfig("tpu_custom_call",
                            R"({"custom_call_config":{"body":"","cost_estimate":{"flops":10}}})");
  ASSERT_NE(m, nullptr);
  const OpCounts c = CountInstruction(Root(*m), kTrue);
  EXPECT_EQ(c.flops, 10);
  EXPECT_EQ(c.transcendentals, 0);
  EXPECT_EQ(c.bytes_accessed, 1024);
  PERFSIM_EXPECT_OK(CheckDeclaredCost(Root(*m)));
  EXPECT_TRUE(CustomCallWorkKnown(Root(*m)));
}

TEST(DeclaredCost, QuotedStringFormAndStringNumbersRead) {
  auto m = KernelWithConfig(
      "my_kernel",
      R"("{\"cost_estimate\":{\"flops\":\"1e9\",\"transcendentals\":\"7\",\"bytes_accessed\":64}}")");
  ASSERT_NE(m, nullptr);
  const OpCounts c = CountInstruction(Root(*m), kTrue);
  EXPECT_EQ(c.flops, 1e9);
  EXPECT_EQ(c.transcendentals, 7);
  EXPECT_EQ(c.bytes_accessed, 64);
}

TEST(DeclaredCost, EstimatesInsideOtherObjectsOrStringsAreNotDeclaredCosts) {
  auto m = KernelWithConfig(
      "my_kernel",
      R"({"other":{"cost_estimate":{"flops":1}},"note":"\"cost_estimate\":{\"flops\":2}"})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 0);
  EXPECT_FALSE(CustomCallWorkKnown(Root(*m)));
  PERFSIM_EXPECT_OK(CheckDeclaredCost(Root(*m)));
}

TEST(DeclaredCost, NumbersOutOfRangeAreRefusedAndNotCounted) {
  struct Case {
    const char* config;
    const char* message;
  };
  const Case cases[] = {
      {R"({"cost_estimate":{"flops":-1}})",
       "c: cost_estimate.flops: expected a finite number in [0, 1e30]; got -1"},
      {R"({"cost_estimate":{"flops":5,"transcendentals":1e31}})",
       "c: cost_estimate.transcendentals: expected a finite number in [0, 1e30]; got 1e+31"},
      {R"({"custom_call_config":{"cost_estimate":{"bytes_accessed":"NaN"}}})",
       "c: cost_estimate.bytes_accessed: expected a finite number in [0, 1e30]; got nan"},
      {R"({"cost_estimate":{"flops":"-Infinity"}})",
       "c: cost_estimate.flops: expected a finite number in [0, 1e30]; got -inf"},
  };
  for (const Case& c : cases) {
    auto m = KernelWithConfig("tpu_custom_call", c.config);
    ASSERT_NE(m, nullptr);
    EXPECT_THAT(CheckDeclaredCost(Root(*m)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.config;
    // Counting cannot fail: the implausible value is left out (default 0 flops, 1024 bytes).
    const OpCounts counts = CountInstruction(Root(*m), kTrue);
    EXPECT_TRUE(counts.flops == 0 || counts.flops == 5) << c.config;
    EXPECT_EQ(counts.transcendentals, 0) << c.config;
    EXPECT_EQ(counts.bytes_accessed, 1024) << c.config;
  }
}

TEST(DeclaredCost, UnreadableEstimateIsAnErrorNamingTheInstruction) {
  // Protobuf's JSON parser refuses a number beyond double range (1e400) while reading, and a
  // field of the wrong kind; either way the kernel declares a cost perfsim cannot read.
  for (const char* config : {R"({"cost_estimate":{"flops":"abc"}})",
                             R"({"custom_call_config":{"cost_estimate":{"bytes_accessed":1e400}}})",
                             R"({"cost_estimate":5})", R"({"cost_estimate":{"flops" 1}})"}) {
    auto m = KernelWithConfig("tpu_custom_call", config);
    ASSERT_NE(m, nullptr);
    EXPECT_THAT(CheckDeclaredCost(Root(*m)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("c: expected backend_config JSON for PallasBackendConfig"),
                               HasSubstr(config))))
        << config;
    EXPECT_FALSE(CustomCallWorkKnown(Root(*m))) << config;
  }
}

TEST(DeclaredCost, OpaqueConfigsOfOtherKernelsDeclareNothing) {
  // XLA lets a custom-call carry any text: these forms come from XLA's own tests (a typed-FFI
  // call's MLIR attributes, a sharding's unspecified_dims). They are no error and no cost.
  for (const char* config : {R"("unspecified_dims=[0]")", R"({module="nvshmem"})",
                             R"({xla_multimem_parameters = "0"})", R"("this string is opaque")"}) {
    auto m = KernelWithConfig("mosaic_gpu_v2", config);
    ASSERT_NE(m, nullptr);
    PERFSIM_EXPECT_OK(CheckDeclaredCost(Root(*m))) << config;
    EXPECT_FALSE(CustomCallWorkKnown(Root(*m))) << config;
    EXPECT_EQ(CountInstruction(Root(*m), kTrue).bytes_accessed, 1024) << config;
  }
}

TEST(DeclaredCost, RealPallasKernelFromXlasTestSuite) {
  // memory_space_assignment_test.cc's ragged reduce-scatter matmul: a tpu_custom_call whose
  // custom_call_config.cost_estimate writes its numbers as strings ("5", "0", "15000000")
  // beside flag_configs, barrier_config and memory-space colours perfsim does not model.
  const std::filesystem::path path = std::filesystem::path(PERFSIM_SHARED_DIR) / "reference" /
                                     "xla_test_suite" / "modules" /
                                     "memory_space_assignment_test__151.hlo";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "no " << path;
  std::stringstream text;
  text << in.rdbuf();
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> m, ParseHloModule(text.str(), "t.hlo"));
  const Instruction* kernel = nullptr;
  for (const auto& computation : m->computations()) {
    if (kernel == nullptr) {
      kernel = computation->FindInstruction(
          "ragged_latency_optimized_reduce_scatter_out_feature_matmul.1");
    }
  }
  ASSERT_NE(kernel, nullptr);
  PERFSIM_EXPECT_OK(CheckDeclaredCost(*kernel));
  EXPECT_TRUE(CustomCallWorkKnown(*kernel));
  const OpCounts c = CountInstruction(*kernel, kTrue);
  EXPECT_EQ(c.flops, 5);
  EXPECT_EQ(c.transcendentals, 0);
  EXPECT_EQ(c.bytes_accessed, 15000000);
}

TEST(CublasGemmConfig, FlopsFromTheContractingDimensionsOfTheCorpusModule) {
  // shared/reference/xla_hlo_corpus/custom_call_cublas_gemm_json_backend_config.hlo: bf16
  // [1024,1024] x [1024,1024], lhs_contracting_dimensions ["1"] (a string, as XLA writes int64):
  // 2 * 1024*1024 results * 1024 = 2^31 flops. Bytes: the operands 2 * 2 MiB and the result,
  // tuple element 0 only (element 1 is cuBLAS workspace), 2 MiB: 6 MiB = 6291456.
  const std::filesystem::path path = std::filesystem::path(PERFSIM_SHARED_DIR) / "reference" /
                                     "xla_hlo_corpus" /
                                     "custom_call_cublas_gemm_json_backend_config.hlo";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "no " << path;
  std::stringstream text;
  text << in.rdbuf();
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> m, ParseHloModule(text.str(), "t.hlo"));
  const OpCounts c = CountInstruction(Root(*m), kTrue);
  EXPECT_EQ(c.flops, 2147483648.0);
  EXPECT_EQ(c.output_bytes, 2097152);
  EXPECT_EQ(c.bytes_accessed, 6291456);
  EXPECT_TRUE(CustomCallWorkKnown(Root(*m)));
}

}  // namespace
}  // namespace perfsim
