// Closed-form window counts (sim/cost/window_counts.h) against a direct enumeration of XLA's
// condition, and the counts XLA's own HloCostAnalysis tests assert
// (xla/service/hlo_cost_analysis_test.cc), written as HLO text.
#include "sim/cost/window_counts.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/cost/op_counts.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"

namespace perfsim {
namespace {

using cost_internal::ConvDimensionSizes;
using cost_internal::ConvValidPositions;

constexpr CountOptions kXla{.mode = CostMode::kXlaCompatible, .num_devices = 1};
constexpr CountOptions kTrue{.mode = CostMode::kTrue, .num_devices = 1};

// XLA's loop in GetConvolutionFlops, transcribed: every (output, kernel) pair of one spatial
// dimension whose undilated index lands on a real input element.
int64_t EnumeratedPositions(const ConvDimensionSizes& s, const WindowDimension& w) {
  int64_t valid = 0;
  for (int64_t k = 0; k < s.kernel; ++k) {
    for (int64_t o = 0; o < s.output; ++o) {
      const int64_t undilated = o * w.stride - w.padding_low + k * w.window_dilation;
      const int64_t index = w.base_dilation > 1 ? undilated / w.base_dilation : undilated;
      if (undilated != index * w.base_dilation) continue;
      if (index < 0 || index >= s.input) continue;
      ++valid;
    }
  }
  return valid;
}

TEST(ConvValidPositions, MatchesXlaEnumerationOnRandomWindows) {
  std::mt19937_64 rng(15);
  auto draw = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int64_t nonzero = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const ConvDimensionSizes sizes{.input = draw(1, 13), .kernel = draw(1, 9),
                                   .output = draw(1, 17)};
    WindowDimension w;
    w.size = sizes.kernel;
    w.stride = draw(1, 5);
    w.padding_low = draw(-4, 9);
    w.padding_high = draw(-4, 9);
    w.window_dilation = draw(1, 4);
    w.base_dilation = draw(1, 6);
    const int64_t expected = EnumeratedPositions(sizes, w);
    nonzero += expected > 0;
    ASSERT_EQ(ConvValidPositions(sizes, w), expected)
        << "input " << sizes.input << " kernel " << sizes.kernel << " output " << sizes.output
        << " stride " << w.stride << " pad_lo " << w.padding_low << " rhs_dilate "
        << w.window_dilation << " lhs_dilate " << w.base_dilation;
  }
  EXPECT_GT(nonzero, 10000);  // the draws exercise real overlaps, not only empty windows
}

TEST(ConvValidPositions, HugeDilationsTakeTheWideArithmetic) {
  // lhs_dilate 2^40 (beyond the 64-bit fast path's 2^30): input elements sit at u = 0 and
  // u = 2^40. With stride 2^40 and one kernel tap, output o reads u = o·2^40: outputs 0 and
  // 1 read real elements, output 2 reads beyond the input.
  WindowDimension w;
  w.stride = int64_t{1} << 40;
  w.base_dilation = int64_t{1} << 40;
  EXPECT_EQ(ConvValidPositions({.input = 2, .kernel = 1, .output = 3}, w), 2);
  // Shifted by padding 1, every u is one past a multiple of 2^40: nothing is read.
  w.padding_low = -1;
  EXPECT_EQ(ConvValidPositions({.input = 2, .kernel = 1, .output = 3}, w), 0);
}

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "test.hlo");
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return nullptr;
  const absl::Status verified = VerifyModule(**module);
  EXPECT_TRUE(verified.ok()) << verified;
  return *std::move(module);
}

double RootFlops(const std::string& text, const CountOptions& options) {
  std::unique_ptr<Module> m = Parse(text);
  if (m == nullptr) return -1;
  return CountInstruction(*m->entry()->root(), options).flops;
}

constexpr int64_t kLarge = 512 * 1024;

TEST(CountConvolution, XlaConvolutionExtremeBaseDilationInMilliseconds) {
  // XLA's ConvolutionExtreme: input and kernel [1,1,kLarge], stride kLarge-1, lhs dilation
  // kLarge. Output o pairs with kernel k only when o·(kLarge-1) + k is a multiple of kLarge,
  // i.e. k = o: kLarge pairs, 2·kLarge flops (XLA asserts 2 * kLarge). Enumerating the
  // kLarge² = 2.7e11 pairs took minutes.
  const auto start = std::chrono::steady_clock::now();
  const double flops = RootFlops(R"(HloModule extreme
ENTRY e {
  x = f32[1,1,524288]{2,1,0} parameter(0)
  k = f32[1,1,524288]{2,1,0} parameter(1)
  ROOT c = f32[1,1,524288]{2,1,0} convolution(x, k), window={size=524288 stride=524287 lhs_dilate=524288}, dim_labels=bf0_oi0->bf0
})",
                                 kXla);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(flops, 2 * kLarge);
  EXPECT_LT(seconds, 2.0);
}

TEST(CountConvolution, XlaConvolutionExtremePaddingInMilliseconds) {
  // XLA's ConvolutionExtreme2: input [1,1,1], kernel [1,1,kLarge], padding kLarge-1 on both
  // sides: output o reads the one input element through kernel k = kLarge-1-o: kLarge pairs.
  const auto start = std::chrono::steady_clock::now();
  const double flops = RootFlops(R"(HloModule extreme2
ENTRY e {
  x = f32[1,1,1]{2,1,0} parameter(0)
  k = f32[1,1,524288]{2,1,0} parameter(1)
  ROOT c = f32[1,1,524288]{2,1,0} convolution(x, k), window={size=524288 pad=524287_524287}, dim_labels=bf0_oi0->bf0
})",
                                 kXla);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(flops, 2 * kLarge);
  EXPECT_LT(seconds, 2.0);
}

TEST(CountConvolution, XlaConvolutionSamePaddingCountsEdgeWindows) {
  // XLA's ConvolutionSame: 3x3 input, 3x3 kernel, SAME padding (1 each side): per dimension
  // the outputs see 2, 3, 2 kernel rows, so 7 · 7 = 49 = 4+6+4+6+9+6+4+6+4 pairs.
  EXPECT_EQ(RootFlops(R"(HloModule same
ENTRY e {
  x = f32[1,1,3,3]{3,2,1,0} parameter(0)
  k = f32[1,1,3,3]{3,2,1,0} parameter(1)
  ROOT c = f32[1,1,3,3]{3,2,1,0} convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
})",
                      kXla),
            2 * (4 + 6 + 4 + 6 + 9 + 6 + 4 + 6 + 4));
}

TEST(CountConvolution, XlaConvolutionWithFeatureGroup) {
  // XLA's ConvolutionWithFeatureGroup: [1,120,10,20] * [120,1,3,3], 120 groups, VALID:
  // output [1,120,8,18], each output 3x3 FMAs of one input feature.
  EXPECT_EQ(RootFlops(R"(HloModule grouped
ENTRY e {
  x = f32[1,120,10,20]{3,2,1,0} parameter(0)
  k = f32[120,1,3,3]{3,2,1,0} parameter(1)
  ROOT c = f32[1,120,8,18]{3,2,1,0} convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=120
})",
                      kXla),
            120 * 8 * 18 * 2 * 3 * 3);
}

constexpr char kAdd[] =
    "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n";

TEST(CountReduceWindow, XlaReduceWindowCountsWindowMinusOnePerOutput) {
  // XLA's ReduceWindow: [10,20], window 4x5 stride 4x5: [2,4] outputs, 19 adds each.
  const std::string text = absl::StrCat("HloModule rw\n", kAdd, R"(ENTRY e {
  x = f32[10,20]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[2,4]{1,0} reduce-window(x, z), window={size=4x5 stride=4x5}, to_apply=add
})");
  EXPECT_EQ(RootFlops(text, kXla), 2 * 4 * (4 * 5 - 1));
  EXPECT_EQ(RootFlops(text, kTrue), 2 * 4 * (4 * 5 - 1));
}

TEST(CountReduceWindow, XlaSingleDimReduceBroadcastSpecialCase) {
  // XLA's ReduceWindowSingleDimReduceBroadcast: [2,3,1024,1024], window 2047 padded 1023 on
  // the last dimension: E(out)/1024 + 1023 applications of max. The true count keeps
  // (2047-1) · E(out).
  const std::string text = R"(HloModule fusion.50
region_0.868 {
  Arg_1.870 = f32[] parameter(1)
  Arg_0.869 = f32[] parameter(0)
  ROOT maximum.871 = f32[] maximum(Arg_0.869, Arg_1.870)
}
ENTRY fusion.50 {
  constant.367 = f32[] constant(-inf)
  param0 = f32[2,3,1024,1024]{2,3,1,0} parameter(0)
  ROOT reduce-window.159 = f32[2,3,1024,1024]{2,3,1,0} reduce-window(param0, constant.367), window={size=1x1x1x2047 pad=0_0x0_0x0_0x1023_1023}, to_apply=region_0.868
})";
  EXPECT_EQ(RootFlops(text, kXla), (2 * 3 * 1024) + (1024 - 1));
  EXPECT_EQ(RootFlops(text, kTrue), 2046.0 * 2 * 3 * 1024 * 1024);
}

TEST(CountReduceWindow, XlaSpecialCaseNeedsTheOnlyPaddedDimension) {
  // The same window with a second padded dimension is not XLA's pattern: (2047-1) · E(out).
  const std::string text = absl::StrCat("HloModule rw\n", kAdd, R"(ENTRY e {
  x = f32[4,1024]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[6,1024]{1,0} reduce-window(x, z), window={size=1x2047 pad=1_1x1023_1023}, to_apply=add
})");
  EXPECT_EQ(RootFlops(text, kXla), 2046.0 * 6 * 1024);
}

TEST(CountSelectAndScatter, XlaSelectAndScatterCountsSelectsAndOneScatter) {
  // XLA's SelectAndScatter: operand [10,20], source [2,4], window 4x5 stride 4x5: each source
  // element runs select 19 times and scatter once: 2·4·(19+1).
  const std::string text = absl::StrCat("HloModule sas\n", kAdd, R"(ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT g = pred[] compare(a, b), direction=GE
}
ENTRY e {
  x = f32[10,20]{1,0} parameter(0)
  s = f32[2,4]{1,0} parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[10,20]{1,0} select-and-scatter(x, s, z), window={size=4x5 stride=4x5}, select=ge, scatter=add
})");
  EXPECT_EQ(RootFlops(text, kXla), 2 * 4 * (4 * 5 - 1 + 1));
}

}  // namespace
}  // namespace perfsim
