// Counting rules of fft, triangular-solve, cholesky, batch-norm-*, complex, scaled-dot and scan
// (sim/cost/op_counts_linalg.cc). Every xla-compatible figure below is also what jaxlib
// 0.10.2's hlo_module_cost_analysis (XLA:CPU HloCostAnalysis) reports for the same module;
// each is derived by hand in the comment.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cost/op_counts.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"

namespace perfsim {
namespace {

using ::testing::ElementsAre;

constexpr CountOptions kXla{.mode = CostMode::kXlaCompatible, .num_devices = 1};
constexpr CountOptions kTrue{.mode = CostMode::kTrue, .num_devices = 1};

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "test.hlo");
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return nullptr;
  const absl::Status verified = VerifyModule(**module);
  EXPECT_TRUE(verified.ok()) << verified;
  return *std::move(module);
}

const Instruction& Root(const Module& module) { return *module.entry()->root(); }

TEST(CountFft, EightFlopsPerElementPerLog2OfEachLength) {
  // c64[8,32] FFT of length 32: 2 (FMA) x 4 (FMAs per complex multiply) x log2(32) = 40 flops
  // per element, 256 elements: 10240. Bytes are the default: 8·32·8 = 2048 in and out.
  auto fft = Parse(R"(HloModule m
ENTRY e {
  x = c64[8,32]{1,0} parameter(0)
  ROOT f = c64[8,32]{1,0} fft(x), fft_type=FFT, fft_length={32}
})");
  const OpCounts c = CountInstruction(Root(*fft), kXla);
  EXPECT_EQ(c.flops, 10240);
  EXPECT_EQ(c.bytes_accessed, 4096);
  // RFFT f32[5,64,32], lengths {64,32}: 8 x (log2 64 · log2 32 = 30) x 5·64·32 = 2457600; the
  // operand's (real) elements count.
  auto rfft = Parse(R"(HloModule m
ENTRY e {
  x = f32[5,64,32]{2,1,0} parameter(0)
  ROOT f = c64[5,64,17]{2,1,0} fft(x), fft_type=RFFT, fft_length={64,32}
})");
  EXPECT_EQ(CountInstruction(Root(*rfft), kXla).flops, 2457600);
}

TEST(CountTriangularSolve, XlaReadsHalfOfAAndMisfilesOperandBytes) {
  // a f32[4,4] (64 B), b and result f32[4,3] (48 B). Bytes: 48 out + 64/2 + 48 = 128.
  // XLA's HandleTriangularSolve sets operand 0's entry twice, the second time to b's size:
  // {48, 48}. Flops: 2 x n (4) x E(b) (12) = 96. The true count is one flop per multiply or
  // add of the substitution: n x E(b) = 48, and operand 0 reads its 32-byte triangle.
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[4,4]{1,0} parameter(0)
  b = f32[4,3]{1,0} parameter(1)
  ROOT x = f32[4,3]{1,0} triangular-solve(a, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
})");
  const OpCounts xla = CountInstruction(Root(*m), kXla);
  EXPECT_EQ(xla.flops, 96);
  EXPECT_EQ(xla.bytes_accessed, 128);
  EXPECT_THAT(xla.operand_bytes, ElementsAre(48, 48));
  EXPECT_EQ(xla.output_bytes, 48);
  const OpCounts truth = CountInstruction(Root(*m), kTrue);
  EXPECT_EQ(truth.flops, 48);
  EXPECT_THAT(truth.operand_bytes, ElementsAre(32, 48));
}

TEST(CountCholesky, BatchTimesNCubedOverThree) {
  // f32[2,4,4] (128 B): flops 4 x 32 / 3 = 42 (integer division); half read, half written:
  // 64 + 64 = 128 bytes.
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[2,4,4]{2,1,0} parameter(0)
  ROOT l = f32[2,4,4]{2,1,0} cholesky(a), lower=true
})");
  for (const CountOptions& options : {kXla, kTrue}) {
    const OpCounts c = CountInstruction(Root(*m), options);
    EXPECT_EQ(c.flops, 42);
    EXPECT_EQ(c.bytes_accessed, 128);
    EXPECT_THAT(c.operand_bytes, ElementsAre(64));
    EXPECT_EQ(c.output_bytes, 64);
  }
}

TEST(CountBatchNorm, XlaCountsOnlyBytesTrueCountsTheNormalisation) {
  // f32[8,4] x, f32[4] scale and offset: out (128 + 16 + 16) + in (128 + 16 + 16) = 320 bytes;
  // XLA 0 flops. True: 7 flops per element (8·4 = 32 elements: 224) and one rsqrt per feature.
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[8,4]{1,0} parameter(0)
  s = f32[4]{0} parameter(1)
  o = f32[4]{0} parameter(2)
  ROOT t = (f32[8,4]{1,0}, f32[4]{0}, f32[4]{0}) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
})");
  const OpCounts xla = CountInstruction(Root(*m), kXla);
  EXPECT_EQ(xla.flops, 0);
  EXPECT_EQ(xla.bytes_accessed, 320);
  EXPECT_EQ(xla.output_bytes, 160);
  const OpCounts truth = CountInstruction(Root(*m), kTrue);
  EXPECT_EQ(truth.flops, 224);
  EXPECT_EQ(truth.transcendentals, 4);
}

TEST(CountComplex, OneFlopPerElement) {
  // f32[4,4] x 2 -> c64[4,4]: 16 flops; 64 + 64 + 128 = 256 bytes.
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[4,4]{1,0} parameter(0)
  y = f32[4,4]{1,0} parameter(1)
  ROOT z = c64[4,4]{1,0} complex(x, y)
})");
  const OpCounts c = CountInstruction(Root(*m), kXla);
  EXPECT_EQ(c.flops, 16);
  EXPECT_EQ(c.bytes_accessed, 256);
}

TEST(CountScaledDot, TheDotsFlops) {
  // [2,10] x [10,2]: 2 x 4 outputs x 10 = 80 flops; bytes 80 + 80 + 16 + 16 + 16 = 208.
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[2,10]{1,0} parameter(0)
  b = f32[10,2]{1,0} parameter(1)
  as = f32[2,2]{1,0} parameter(2)
  bs = f32[2,2]{1,0} parameter(3)
  ROOT d = f32[2,2]{1,0} scaled-dot(a, b, as, bs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const OpCounts c = CountInstruction(Root(*m), kXla);
  EXPECT_EQ(c.flops, 80);
  EXPECT_EQ(c.bytes_accessed, 208);
}

TEST(CountScan, XlaScalesTheBodyByTheCarryTrueByTheLength) {
  // Body: x f32[2] * x (2 flops), carry f32[5] * carry (5 flops) = 7 per call. jaxlib reports
  // 7 x E(carry) = 35 whatever the length; the scan runs the body 4 times: 28.
  // Bytes (default): f32[4,2] + f32[5] in and out: (32 + 20) x 2 = 104.
  auto m = Parse(R"(HloModule m
body {
  x = f32[2] parameter(0)
  y = f32[5] parameter(1)
  a = f32[2] multiply(x, x)
  b = f32[5] multiply(y, y)
  ROOT t = (f32[2], f32[5]) tuple(a, b)
}
ENTRY e {
  a = f32[4,2]{1,0} parameter(0)
  i = f32[5]{0} parameter(1)
  ROOT s = (f32[4,2]{1,0}, f32[5]{0}) scan(a, i), dimensions={0}, num_carries=1, to_apply=body
})");
  const OpCounts xla = CountInstruction(Root(*m), kXla);
  EXPECT_EQ(xla.flops, 35);
  EXPECT_EQ(xla.bytes_accessed, 104);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 28);
}

}  // namespace
}  // namespace perfsim
