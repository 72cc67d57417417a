// sim/moe/routing: expected counts per (token shard, expert), hand-derived.
#include "sim/moe/routing.h"

#include <fstream>
#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

TEST(RoutingTest, UniformSplitsEvenlyWithLargestRemainder) {
  // 10 tokens × K=2 = 20 assignments over 8 experts: 2.5 each -> 2 each + 4 extra to the
  // lowest ids (all remainders tie at 0.5): 3,3,3,3,2,2,2,2.
  absl::StatusOr<RoutingMatrix> m =
      BuildRoutingMatrix(RoutingSpec{}, /*sources=*/2, /*tokens=*/10, /*k=*/2, /*experts=*/8);
  ASSERT_TRUE(m.ok()) << m.status();
  for (int64_t s = 0; s < 2; ++s) {
    EXPECT_EQ(m->at(s, 0), 3);
    EXPECT_EQ(m->at(s, 7), 2);
  }
  std::vector<int64_t> totals = m->ExpertTotals();
  EXPECT_EQ(std::accumulate(totals.begin(), totals.end(), int64_t{0}), 40);
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
  EXPECT_THAT(bad.status().message(), HasSubstr("routing.txt:2:3: expected a non-negative number; got 'abc'"));
  EXPECT_FALSE(ParseRoutingSpec("zipf:").ok());
  EXPECT_FALSE(ParseRoutingSpec("hot:1.5").ok());
  EXPECT_FALSE(ParseRoutingSpec("gauss").ok());
}

// Found by fuzz/routing_fuzzer: when every expert left after capping has weight 0, the rest
// of the assignments was dropped, so a source routed fewer than T·K.
TEST(RoutingTest, ZipfWeightsThatUnderflowStillRouteTK) {
  // zipf:2000: p_e = (e+1)^-2000 is 0 in double for every e >= 1. 4 tokens × K=8 = 32
  // assignments over 64 experts: expert 0 is capped at T = 4; the other 28 go to the 63 experts
  // of weight 0 in equal parts: 28/63 each, remainders tie, so experts 1..28 get 1 each.
  absl::StatusOr<RoutingSpec> zipf = ParseRoutingSpec("zipf:2000");
  ASSERT_TRUE(zipf.ok()) << zipf.status();
  absl::StatusOr<RoutingMatrix> m = BuildRoutingMatrix(*zipf, 1, 4, 8, 64);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->at(0, 0), 4);
  EXPECT_EQ(m->at(0, 1), 1);
  EXPECT_EQ(m->at(0, 28), 1);
  EXPECT_EQ(m->at(0, 29), 0);
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

}  // namespace
}  // namespace perfsim
