// Random inputs of floating types (sim/interp/random_inputs.cc FillFloats) are drawn in
// chunks, on several threads for large arrays, and rounded by a direct bf16 path; they must
// be exactly what rounding each drawn double with EncodeFloat gives. The f64 parameter of the
// same module position draws the same doubles (same seed, device and parameter index), so it
// is the reference.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/interp/random_inputs.h"
#include "sim/ir/float_types.h"
#include "sim/ir/hlo_parser.h"

namespace perfsim {
namespace {

std::vector<Literal> Draw(const std::string& type, int64_t n) {
  auto module = ParseHloModule(absl::StrCat("HloModule m\nENTRY e {\n  ROOT p = ", type, "[", n,
                                            "] parameter(0)\n}\n"));
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  auto inputs = MakeRandomInputs(**module, /*num_devices=*/2, /*seed=*/7);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  if (!inputs.ok()) return {};
  return {(*inputs)[0][0], (*inputs)[1][0]};
}

TEST(RandomInputs, FloatTypesAreTheDrawnDoublesRoundedOnce) {
  // 2^21 + 5 elements: more than one 2^20-element chunk (so more than one thread on a
  // machine with several cores) and a ragged last one.
  const int64_t n = (int64_t{1} << 21) + 5;
  const std::vector<Literal> doubles = Draw("f64", n);
  ASSERT_EQ(doubles.size(), 2u);
  for (const std::string& type : {std::string("bf16"), std::string("f32"), std::string("f16")}) {
    const std::vector<Literal> got = Draw(type, n);
    ASSERT_EQ(got.size(), 2u);
    const PrimitiveType t = got[0].shape().element_type();
    const int64_t width = ByteWidth(t);
    for (int device = 0; device < 2; ++device) {
      int64_t mismatches = 0;
      for (int64_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, doubles[device].data().data() + i * 8, 8);
        const uint64_t want = EncodeFloat(t, v);
        uint64_t bits = 0;
        std::memcpy(&bits, got[device].data().data() + i * width, width);
        if (bits != want && ++mismatches <= 3) {
          ADD_FAILURE() << type << " device " << device << " element " << i << ": bits " << bits
                        << ", EncodeFloat gives " << want << " for " << v;
        }
      }
      EXPECT_EQ(mismatches, 0) << type;
    }
  }
  // The devices draw different streams.
  EXPECT_FALSE(doubles[0].data() == doubles[1].data());
}

TEST(RandomInputs, F64IsTheSplitMix64StreamScaledToMinusOneOne) {
  // The reference the test above rounds from, drawn here from SplitMix64 itself (state
  // seed·γ ^ (device+1)·c1 ^ (parameter+1)·c2, then γ added per draw), so that the vector path
  // that fills f64, f32 and bf16 eight draws at a time is checked against the scalar stream.
  const int64_t n = 1000 + 3;
  const std::vector<Literal> doubles = Draw("f64", n);
  ASSERT_EQ(doubles.size(), 2u);
  for (uint64_t device = 0; device < 2; ++device) {
    uint64_t state = 7 * 0x9e3779b97f4a7c15ull ^ (device + 1) * 0xbf58476d1ce4e5b9ull ^
                     1 * 0x94d049bb133111ebull;
    for (int64_t i = 0; i < n; ++i) {
      uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      const double want = 2.0 * (static_cast<double>(z >> 11) * 0x1p-53) - 1.0;
      double got;
      std::memcpy(&got, doubles[device].data().data() + i * 8, 8);
      ASSERT_EQ(got, want) << "device " << device << " element " << i;
    }
  }
}

}  // namespace
}  // namespace perfsim
