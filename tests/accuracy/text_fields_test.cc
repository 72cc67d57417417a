// Forgiving readers of free-text cells (sim/accuracy/text_fields.h), on the spellings the
// published measurements use.
#include "sim/accuracy/text_fields.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfsim {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(TextFields, KeyValuesSplitAtSeparatorsButNotInsideBrackets) {
  const KeyValues kv = ParseKeyValues("groups=4; M_per_group=8192; N=4096; K=7168");
  EXPECT_THAT(kv.pairs, ElementsAre(Pair("groups", "4"), Pair("M_per_group", "8192"),
                                    Pair("N", "4096"), Pair("K", "7168")));
  EXPECT_EQ(kv.Find({"N", "n"}), "4096");
  EXPECT_EQ(kv.Find({"missing"}), std::nullopt);
  const KeyValues rhs = ParseKeyValues("rhs (E=64, K x N=4096x2048); touched weight bytes 240 MiB");
  EXPECT_THAT(rhs.pairs, ElementsAre(Pair("E", "64"), Pair("K x N", "4096x2048")));
  EXPECT_THAT(rhs.phrases, ElementsAre("rhs", "touched weight bytes 240 MiB"));
  const KeyValues list = ParseKeyValues("group_sizes=[1,2,3]; N=8");
  EXPECT_THAT(list.pairs, ElementsAre(Pair("group_sizes", "[1,2,3]"), Pair("N", "8")));
}

TEST(TextFields, KeyValuesReadLabelsAndApproximateValues) {
  // calibration.csv M092: a label before ':' is not part of the first key.
  const KeyValues labelled =
      ParseKeyValues("MaxText DeepSeek-like gmm fwd: m=262144, k=7168, n=1024, groups=256");
  EXPECT_THAT(labelled.pairs, ElementsAre(Pair("m", "262144"), Pair("k", "7168"),
                                          Pair("n", "1024"), Pair("groups", "256")));
  EXPECT_THAT(labelled.phrases, ElementsAre("MaxText DeepSeek-like gmm fwd"));
  // "key~value" and "key ≈ value" are approximate pairs; "~370" has no key.
  const KeyValues approx = ParseKeyValues("M~32768; T \xE2\x89\x88 8; ~370; 4 groups x ~8192");
  EXPECT_THAT(approx.pairs, ElementsAre(Pair("M", "32768"), Pair("T", "8")));
  EXPECT_THAT(approx.approximate, ElementsAre("M", "T"));
  EXPECT_THAT(approx.phrases, ElementsAre("~370", "4 groups x ~8192"));
}

TEST(TextFields, OpShapeReadsGroupsTimesRowsAndShapeProducts) {
  // calibration.csv M084.
  const KeyValues fc1 =
      ParseOpShape("fwd FC1 (gate+up fused): M~32768 (4 groups x ~8192), N=4096, K=7168");
  EXPECT_EQ(fc1.Find({"groups"}), "4");
  EXPECT_EQ(fc1.Find({"M_per_group"}), "8192");
  EXPECT_EQ(fc1.Find({"N"}), "4096");
  EXPECT_EQ(fc1.Find({"K"}), "7168");
  EXPECT_THAT(fc1.approximate, ElementsAre("M", "groups", "M_per_group"));
  // calibration.csv M177: lhs [M, K] times the stacked weights [G, K, N].
  const KeyValues product = ParseOpShape("[262144,2560] x [64,2560,1280]");
  EXPECT_THAT(product.pairs, ElementsAre(Pair("m", "262144"), Pair("K", "2560"),
                                         Pair("groups", "64"), Pair("N", "1280")));
  EXPECT_TRUE(product.approximate.empty());
  // Contraction sizes that differ, a 2-D rhs, or no operator between: nothing derived.
  EXPECT_TRUE(ParseOpShape("[8,16] x [4,32,8]").pairs.empty());
  EXPECT_TRUE(ParseOpShape("[8,16] x [16,8]").pairs.empty());
  EXPECT_TRUE(ParseOpShape("[8,16] and [4,16,8]").pairs.empty());
  // A written key wins over a derived one (Find returns the first).
  EXPECT_EQ(ParseOpShape("groups=8; [64,16] x [4,16,8]").Find({"groups"}), "8");
}

TEST(TextFields, Integers) {
  EXPECT_EQ(ParseInteger(" 8 "), 8);
  EXPECT_EQ(ParseInteger("8x"), std::nullopt);
  EXPECT_EQ(ParseInteger("-1"), std::nullopt);
  EXPECT_EQ(LeadingInteger("4096 tokens per rank"), 4096);
  EXPECT_EQ(LeadingInteger("2+ nodes"), 2);
  EXPECT_EQ(LeadingInteger("1.5 GB"), std::nullopt);
  EXPECT_EQ(LeadingInteger("8x4"), std::nullopt);
  EXPECT_EQ(LeadingInteger("n/a"), std::nullopt);
  EXPECT_EQ(IntegerBefore("NVLink ~160 GB/s (8 GPU/node); 2 nodes", "node"), 2);
  EXPECT_EQ(IntegerBefore("2 nodes x 8 GPU, IB", "gpu"), 8);
  EXPECT_EQ(IntegerBefore("node-limited routing top-4 groups", "group"), 4);
  EXPECT_EQ(IntegerBefore("no number", "node"), std::nullopt);
}

TEST(TextFields, DimsAndSlices) {
  EXPECT_EQ(ParseDimsPair("30x3"), (std::pair<int64_t, int64_t>(30, 3)));
  EXPECT_EQ(ParseDimsPair(" 4096 x 2048 "), (std::pair<int64_t, int64_t>(4096, 2048)));
  EXPECT_EQ(ParseDimsPair("4096\xC3\x97"
                          "2048"),
            (std::pair<int64_t, int64_t>(4096, 2048)));
  EXPECT_EQ(ParseDimsPair("0x3"), std::nullopt);
  EXPECT_EQ(ParseDimsPair("1x2x3"), std::nullopt);
  EXPECT_EQ(FindSliceShape("8x4 slice (no wraparound on either axis)"), "8x4");
  EXPECT_EQ(FindSliceShape("4x8x8 torus"), "4x8x8");
  EXPECT_EQ(FindSliceShape("1 node NVLink4"), std::nullopt);
}

TEST(TextFields, ByteSizes) {
  EXPECT_EQ(ParseByteSize("33.5 MB"), 33.5e6);
  EXPECT_EQ(ParseByteSize("240 MiB"), 240.0 * 1048576);
  EXPECT_EQ(ParseByteSize("1 GiB"), 1073741824.0);
  EXPECT_EQ(ParseByteSize("2 KB"), 2e3);
  EXPECT_EQ(ParseByteSize("3 parsecs"), std::nullopt);
  EXPECT_EQ(FindByteSize("touched weight bytes 240 MiB"), 240.0 * 1048576);
  EXPECT_EQ(FindByteSize("bf16[2048, 8192] (33.5 MB)"), 33.5e6);
  EXPECT_EQ(FindByteSize("no size here"), std::nullopt);
}

TEST(TextFields, HardwareNames) {
  EXPECT_EQ(ResolveHardwareName("H800 SXM5"), "gpu_h800");
  EXPECT_EQ(ResolveHardwareName("H100 SXM"), "gpu_h100");
  EXPECT_EQ(ResolveHardwareName("TPU v7x (one TensorCore)"), "tpu_v7x");
  EXPECT_EQ(ResolveHardwareName("TPU v5e"), "tpu_v5e");
  EXPECT_EQ(ResolveHardwareName("TPU7x"), "tpu_v7x");
  EXPECT_EQ(ResolveHardwareName("gpu_h200"), "gpu_h200");
  // "v5e" without "TPU" is not enough, nor an unknown part.
  EXPECT_EQ(ResolveHardwareName("v5e"), std::nullopt);
  EXPECT_EQ(ResolveHardwareName("MI300X"), std::nullopt);
}

TEST(TextFields, ArchitecturesWithoutSkuResolveWithTheAssumptionSaid) {
  // calibration.csv M047 and M053.
  const std::optional<HardwareMatch> hopper = ResolveHardware("SM90 (Hopper; SKU not stated)");
  ASSERT_TRUE(hopper.has_value());
  EXPECT_EQ(hopper->chip, "gpu_h100");
  EXPECT_THAT(hopper->assumption, ::testing::HasSubstr("not stated"));
  const std::optional<HardwareMatch> blackwell =
      ResolveHardware("SM100 (Blackwell; SKU not stated)");
  ASSERT_TRUE(blackwell.has_value());
  EXPECT_EQ(blackwell->chip, "gpu_b200");
  // A named SKU wins, with no assumption; "SM100 GPU (..., B200-class)" names B200.
  EXPECT_EQ(ResolveHardware("H800 SXM5")->chip, "gpu_h800");
  EXPECT_EQ(ResolveHardware("H800 SXM5")->assumption, "");
  EXPECT_EQ(ResolveHardware("SM100 GPU (Blackwell; SKU not stated, B200-class)")->assumption, "");
  EXPECT_EQ(ResolveHardware("MI300X"), std::nullopt);
}

TEST(TextFields, DtypeWords) {
  EXPECT_EQ(ParseDtypeWord("BF16"), PrimitiveType::kBF16);
  EXPECT_EQ(ParseDtypeWord("e4m3"), PrimitiveType::kF8E4M3FN);
  EXPECT_EQ(ParseDtypeWord("e5m2"), PrimitiveType::kF8E5M2);
  EXPECT_EQ(ParseDtypeWord("int4"), std::nullopt);
  EXPECT_EQ(FindDtypeWord("lhs bf16 (M,4096); rhs fp8", "rhs"), PrimitiveType::kF8E4M3FN);
  EXPECT_EQ(FindDtypeWord("lhs bf16 (M,4096); rhs fp8", "lhs"), PrimitiveType::kBF16);
  EXPECT_EQ(FindDtypeWord("dispatch FP8, combine BF16", "combine"), PrimitiveType::kBF16);
  EXPECT_EQ(FindDtypeWord("FP8 e4m3 in", ""), PrimitiveType::kF8E4M3FN);
  EXPECT_EQ(FindDtypeWordBefore("FP8 e4m3 in (1x128 act), BF16 out", "out"), PrimitiveType::kBF16);
  EXPECT_EQ(FindDtypeWordBefore("FP8 e4m3 in (1x128 act), BF16 out", "in"),
            PrimitiveType::kF8E4M3FN);
  EXPECT_EQ(FindDtypeWord("no types", ""), std::nullopt);
}

TEST(TextFields, WordsDropFullStopsAndLowerCase) {
  EXPECT_THAT(Words("Over 4 Nodes. v7x_2"), ElementsAre("over", "4", "nodes", "v7x_2"));
  EXPECT_TRUE(ContainsNoCase("Node-Limited routing", "node-limited"));
}

}  // namespace
}  // namespace perfsim
