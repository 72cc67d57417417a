// sim/moe/routing: expected counts per (token shard, expert), hand-derived; and what they do
// to a decode-size dispatch through `Predict` (issue 14).
#include "sim/moe/routing.h"

#include <algorithm>
#include <fstream>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/moe/model_registry.h"
#include "sim/predict/predict.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

TEST(RoutingTest, UniformRoundsExactlyInExpectationAcrossSources) {
  // 10 tokens × K=2 = 20 assignments over 8 experts: 2.5 each -> 2 each and 4 extra per source.
  // Source 0: every deficit is 0.5, ties in bit-reversed order (0, 4, 2, 6, 1, 5, 3, 7):
  // experts 0, 2, 4, 6 get 3. Their deficits drop to -0.5, the others stay at 0.5; source 1
  // adds 0.5 (0 against 1): experts 1, 3, 5, 7 get 3. Each expert then has 5 = 2 × 2.5.
  absl::StatusOr<RoutingMatrix> m =
      BuildRoutingMatrix(RoutingSpec{}, /*sources=*/2, /*tokens=*/10, /*k=*/2, /*experts=*/8);
  ASSERT_TRUE(m.ok()) << m.status();
  for (int64_t e = 0; e < 8; ++e) {
    EXPECT_EQ(m->at(0, e), e % 2 == 0 ? 3 : 2) << e;
    EXPECT_EQ(m->at(1, e), e % 2 == 0 ? 2 : 3) << e;
  }
  EXPECT_EQ(m->ExpertTotals(), std::vector<int64_t>(8, 5));
}

TEST(RoutingTest, UniformAtDecodeSizeSpreadsSourcesOverAllExperts) {
  // Issue 14: DeepSeek-V3 decode, 8 tokens × K=8 = 64 assignments per source over E = 256
  // experts (0.25 each). Rounded once and copied, every source sent to experts 0..63. Now the
  // sources are dealt to in bit-reversed order (7 bits: 0, 64, 32, 96, 16, ...) and the ties
  // go in bit-reversed expert order (8 bits): the first source dealt to takes the 64 multiples
  // of 4 (bit reversals 0..63); those then lag by -0.75 and the rest lead by 0.25, so the
  // second takes the 64 experts 2 mod 4 (reversals 64..127), the third 1 mod 4, the fourth
  // 3 mod 4, and every deficit is 0 again. The k-th source dealt to, k = bitrev7(s), takes
  // residue bitrev2(k mod 4); k mod 4 is bitrev2 of s's top two bits, so source s takes the
  // experts equal to s / 32 (mod 4). Each expert gets 128 × 0.25 = 32, and each source sends
  // at most one to any expert shard of two experts (EP = 128).
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(RoutingSpec{}, 128, 8, 8, 256);
  ASSERT_TRUE(m.ok()) << m.status();
  for (int64_t s = 0; s < 128; ++s) {
    for (int64_t e = 0; e < 256; ++e) {
      ASSERT_EQ(m->at(s, e), e % 4 == s / 32 ? 1 : 0) << "source " << s << " expert " << e;
    }
  }
  EXPECT_EQ(m->ExpertTotals(), std::vector<int64_t>(256, 32));
}

TEST(RoutingTest, ExpertTotalsStayWithinOneOfTheExpectation) {
  // 100 sources of 3 tokens × K=8 = 24 assignments over 256 experts: 100 × 24 / 256 = 9.375
  // per expert. Copying one rounded row gave experts 0..23 100 each and the rest 0. With the
  // deficit carried from source to source an expert's count never lags or leads its
  // expectation by a whole assignment, so every total is 9 or 10 (and they sum to 2400).
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(RoutingSpec{}, 100, 3, 8, 256);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<int64_t> totals = m->ExpertTotals();
  for (int64_t e = 0; e < 256; ++e) {
    EXPECT_TRUE(totals[e] == 9 || totals[e] == 10) << e << ": " << totals[e];
  }
  EXPECT_EQ(std::accumulate(totals.begin(), totals.end(), int64_t{0}), 2400);
  for (int64_t s = 0; s < 100; ++s) {
    const int64_t* row = m->row(s);
    EXPECT_EQ(std::accumulate(row, row + 256, int64_t{0}), 24) << s;
  }
}

TEST(RoutingTest, CyclesRestartSoEveryReplicaRoutesAlike) {
  // sources_per_cycle = 4 (the EP group): sources 4..7 repeat sources 0..3 even when the
  // deal would not come back to its start after 4 sources (24 of 256 per source comes back
  // after 32 sources).
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(RoutingSpec{}, 8, 3, 8, 256, 4);
  ASSERT_TRUE(m.ok()) << m.status();
  for (int64_t s = 4; s < 8; ++s) {
    EXPECT_TRUE(std::equal(m->row(s), m->row(s) + 256, m->row(s - 4))) << s;
  }
  absl::StatusOr<RoutingMatrix> no_cycle = BuildRoutingMatrix(RoutingSpec{}, 8, 3, 8, 256);
  ASSERT_TRUE(no_cycle.ok());
  EXPECT_FALSE(std::equal(no_cycle->row(4), no_cycle->row(4) + 256, no_cycle->row(0)));
}

TEST(RoutingTest, HotExpertIsCappedAtOnePickPerToken) {
  // hot:0.9 of 100 tokens × K=4 = 400 assignments wants 360 on expert 0, but a token picks an
  // expert at most once: 100. The other 300 spread over experts 1..4 (75 each).
  absl::StatusOr<RoutingSpec> hot = ParseRoutingSpec("hot:0.9");
  ASSERT_TRUE(hot.ok());
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(*hot, 1, 100, 4, 5);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->at(0, 0), 100);
  for (int64_t e = 1; e < 5; ++e) EXPECT_EQ(m->at(0, e), 75);
}

TEST(RoutingTest, ZipfIsDecreasingAndSumsToTK) {
  absl::StatusOr<RoutingSpec> zipf = ParseRoutingSpec("zipf:1.2");
  ASSERT_TRUE(zipf.ok());
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(*zipf, 1, 4096, 8, 256);
  ASSERT_TRUE(m.ok());
  int64_t sum = 0;
  for (int64_t e = 0; e < 256; ++e) {
    sum += m->at(0, e);
    if (e > 0) {
      EXPECT_LE(m->at(0, e), m->at(0, e - 1));
    }
    EXPECT_LE(m->at(0, e), 4096);
  }
  EXPECT_EQ(sum, 4096 * 8);
}

TEST(RoutingTest, FileRowsAndErrors) {
  const std::string path = ::testing::TempDir() + "/routing.txt";
  std::ofstream(path) << "# tokens per expert\n1 1 2 0\n";
  absl::StatusOr<RoutingSpec> spec = ParseRoutingSpec("file:" + path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  // 4 tokens × K=1 = 4 assignments in proportion 1:1:2:0.
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(*spec, 3, 4, 1, 4);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->at(2, 0), 1);
  EXPECT_EQ(m->at(2, 2), 2);
  EXPECT_EQ(m->at(2, 3), 0);
  absl::StatusOr<RoutingMatrix> wrong = BuildRoutingMatrix(*spec, 3, 4, 1, 5);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("expected 5 counts (one per expert); got 4"));

  std::ofstream(path) << "1 2\n3 abc\n";
  absl::StatusOr<RoutingSpec> bad = ParseRoutingSpec("file:" + path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("routing.txt:2:3: expected a non-negative number; got 'abc'"));
  EXPECT_FALSE(ParseRoutingSpec("zipf:").ok());
  EXPECT_FALSE(ParseRoutingSpec("hot:1.5").ok());
  EXPECT_FALSE(ParseRoutingSpec("gauss").ok());
}

// Found by fuzz/routing_fuzzer: when every expert left after capping has weight 0, the rest
// of the assignments was dropped, so a source routed fewer than T·K.
TEST(RoutingTest, ZipfWeightsThatUnderflowStillRouteTK) {
  // zipf:2000: p_e = (e+1)^-2000 is 0 in double for every e >= 1. 4 tokens × K=8 = 32
  // assignments over 64 experts: expert 0 is capped at T = 4; the other 28 go to the 63 experts
  // of weight 0 in equal parts: 28/63 each. The fractions tie, so the 28 go in bit-reversed
  // order (6 bits), expert 0 being capped: the experts whose bit reversal is 1..28, e.g.
  // 32 (reversal 1), 2 (16), 7 (56 > 28: none), 1 (32: none).
  absl::StatusOr<RoutingSpec> zipf = ParseRoutingSpec("zipf:2000");
  ASSERT_TRUE(zipf.ok()) << zipf.status();
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(*zipf, 1, 4, 8, 64);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->at(0, 0), 4);
  for (int64_t e = 1; e < 64; ++e) {
    int64_t reversed = 0;
    for (int b = 0; b < 6; ++b) reversed |= ((e >> b) & 1) << (5 - b);
    EXPECT_EQ(m->at(0, e), reversed <= 28 ? 1 : 0) << e;
  }
  EXPECT_EQ(m->at(0, 32), 1);
  EXPECT_EQ(m->at(0, 2), 1);
  EXPECT_EQ(m->at(0, 7), 0);
  EXPECT_EQ(m->at(0, 1), 0);
  const std::vector<int64_t> totals = m->ExpertTotals();
  EXPECT_EQ(std::accumulate(totals.begin(), totals.end(), int64_t{0}), 32);
}

TEST(RoutingTest, FileWithFewerPositiveExpertsThanKStillRoutesTK) {
  // Weights 10 0 0 5: T = 2, K = 3, so 6 assignments, at most 2 per expert. Experts 0 and 3
  // are capped at 2 (10/15·6 = 4 and 5/15·6 = 2 -> expert 0 capped first, then 5/5·4 = 4 > 2);
  // the 2 left go to experts 1 and 2 (weight 0) in equal parts: 1 each.
  absl::StatusOr<std::vector<std::vector<double>>> w =
      ParseRoutingFileText("10 0 0 5\n", "few.txt");
  ASSERT_TRUE(w.ok()) << w.status();
  RoutingSpec spec{.kind = RoutingSpec::Kind::kFile, .path = "few.txt", .file_weights = *w};
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(spec, 1, 2, 3, 4);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->at(0, 0), 2);
  EXPECT_EQ(m->at(0, 1), 1);
  EXPECT_EQ(m->at(0, 2), 1);
  EXPECT_EQ(m->at(0, 3), 2);
}

TEST(RoutingTest, FileWeightsWhoseSumOverflowsAreRelative) {
  // 1e308 + 1e308 is inf in double: each weight / sum was 0 and only 2 of 16 assignments were
  // given. Relative to the largest they are 1:1, 8 each.
  RoutingSpec spec{.kind = RoutingSpec::Kind::kFile, .path = "big.txt"};
  spec.file_weights = {{1e308, 1e308}};
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(spec, 1, 16, 1, 2);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->at(0, 0), 8);
  EXPECT_EQ(m->at(0, 1), 8);
}

TEST(RoutingTest, FileTextErrorsNameTheFile) {
  absl::StatusOr<std::vector<std::vector<double>>> zeros =
      ParseRoutingFileText("# per source\n1 2\n0, 0\n", "zeros.txt");
  ASSERT_FALSE(zeros.ok());
  EXPECT_THAT(zeros.status().message(),
              HasSubstr("zeros.txt:3:1: expected a line with a positive count"));
  absl::StatusOr<std::vector<std::vector<double>>> empty =
      ParseRoutingFileText("# nothing\n\n", "empty.txt");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("empty.txt:1:1: expected tokens per expert"));
  absl::StatusOr<std::vector<std::vector<double>>> rows =
      ParseRoutingFileText("1,2\t3 # c\n\n4 5 6", "rows.txt");
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(*rows, (std::vector<std::vector<double>>{{1, 2, 3}, {4, 5, 6}}));
}

// Decode-size dispatch (issue 14, item 3): DeepSeek-V3 (D = 7168, E = 256, K = 8) with
// ep_ragged_a2a on a TPU v7x 4x4x4 slice (64 chips, 128 devices), ep = 128 (two experts per
// device), dp = 1, forward; T tokens per device (batch 128 × seq T). The dispatch's time.
double DecodeDispatchSeconds(int64_t tokens_per_device, const std::string& routing) {
  absl::StatusOr<ModelConfig> model = ResolveModel("deepseek_v3");
  EXPECT_TRUE(model.ok()) << model.status();
  PredictOptions o{.spec = StepSpec::Defaults(*model)};
  o.spec.batch = 128;
  o.spec.seq = tokens_per_device;
  o.spec.phase = Phase::kForward;
  o.spec.backend = "ep_ragged_a2a";
  o.spec.parallelism = Parallelism{.dp = 1, .ep = 128};
  o.hw = "tpu_v7x";
  o.mesh = "4x4x4";
  absl::StatusOr<RoutingSpec> r = ParseRoutingSpec(routing);
  EXPECT_TRUE(r.ok()) << r.status();
  o.routing = *r;
  absl::StatusOr<Prediction> p = Predict(o);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return 0;
  for (const OpRow& row : p->ops) {
    if (row.opcode == "ragged-all-to-all" && row.stage == "dispatch") return row.seconds;
  }
  ADD_FAILURE() << "no dispatch ragged-all-to-all";
  return 0;
}

TEST(RoutingDecode, UniformDispatchIsWithinTenPercentOfAnExactlyBalancedFile) {
  // T = 8: each device sends T·K = 64 rows over 128 devices (0.5 per device in expectation).
  // The exactly balanced file: 128 lines (one per token shard), line s has a 1 on every expert
  // e with e = s (mod 4), so each source sends one row to each of 64 distinct devices and each
  // expert receives 32 rows. Uniform routing, rounded once and copied to every source, sent
  // every row to experts 0..63 (devices 0..31): 42.70 us against the file's 15.18 us. Dealt out
  // per source it must be within 10% of the file.
  const std::string path = ::testing::TempDir() + "/balanced_decode.txt";
  {
    std::ofstream file(path);
    for (int s = 0; s < 128; ++s) {
      for (int e = 0; e < 256; ++e) file << (e % 4 == s % 4 ? 1 : 0) << (e < 255 ? " " : "\n");
    }
  }
  const double balanced = DecodeDispatchSeconds(8, "file:" + path);
  const double uniform = DecodeDispatchSeconds(8, "uniform");
  ASSERT_GT(balanced, 0);
  EXPECT_LE(uniform, 1.10 * balanced);
  EXPECT_GE(uniform, balanced / 1.10);
}

TEST(RoutingDecode, DispatchGrowsSmoothlyWithTokensPerDevice) {
  // T = 1..64 tokens per device. Each device sends T·K·(1 - 2/256) rows, so from T to T + 1
  // the bytes grow by 1/T. The time is a fixed and a latency part (independent of T) plus the
  // busiest link's transfer (proportional to its bytes), so "smooth" means, for every T:
  //   (a) t(T+1) >= t(T): more rows never finish sooner;
  //   (b) t(T+1) / t(T) - 1 <= max(1/T, 10%): the time grows no faster than the bytes, and
  //       where the bytes grow by less than 10% (T > 10) the time steps by at most 10%;
  //   (c) t(T+4) > t(T): 32 more rows per device (459 KB) always show (not flat).
  // The old rounding failed all three: flat at 42.70 us from T = 1 to 32 while the bytes grew
  // 32x, then 79.40 us at T = 33 (a 1.86x step for 3% more bytes), as every source sent to
  // the same T·K experts.
  std::vector<double> t(65, 0);
  for (int64_t tokens = 1; tokens <= 64; ++tokens) {
    t[tokens] = DecodeDispatchSeconds(tokens, "uniform");
    ASSERT_GT(t[tokens], 0);
  }
  for (int64_t tokens = 1; tokens < 64; ++tokens) {
    SCOPED_TRACE(
        absl::StrCat("T = ", tokens, ": ", t[tokens] * 1e6, " us -> ", t[tokens + 1] * 1e6, " us"));
    EXPECT_GE(t[tokens + 1], t[tokens] * (1 - 1e-12));
    EXPECT_LE(t[tokens + 1] / t[tokens] - 1, std::max(1.0 / static_cast<double>(tokens), 0.10));
    if (tokens + 4 <= 64) {
      EXPECT_GT(t[tokens + 4], t[tokens]);
    }
  }
}

}  // namespace
}  // namespace perfsim
