// .npy reading/writing and random inputs.
#include <cstdio>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/npy.h"
#include "sim/interp/random_inputs.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::Bf16;
using ::perfsim::testing::F32;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Npy, RoundTripKeepsShapeTypeAndBits) {
  const Literal f = F32({2, 3}, {1, -2, 3.5, 0, 1e-30, -7});
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string bytes, SerializeNpy(f));
  // Header: magic, version 1.0, 2-byte length; magic + length + header is a multiple of 64.
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_THAT(bytes, HasSubstr("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
  EXPECT_EQ((bytes.size() - 24) % 64, 0u);  // data is 6 * 4 = 24 bytes after the header
  PERFSIM_ASSERT_OK_AND_ASSIGN(Literal back, ParseNpy(bytes));
  EXPECT_EQ(back, f);
}

TEST(Npy, Bf16IsWrittenAsItsBitPatternAndReadBackWhenAsked) {
  // bf16 1.5 is 0x3fc0; NumPy has no bf16, so the file holds <u2 bits.
  const Literal b = Bf16({1}, {1.5});
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string bytes, SerializeNpy(b));
  EXPECT_THAT(bytes, HasSubstr("'descr': '<u2'"));
  EXPECT_THAT(bytes, HasSubstr("'shape': (1,)"));
  const std::string path = ::testing::TempDir() + "/interp_bf16.npy";
  PERFSIM_ASSERT_OK(WriteNpyFile(path, b));
  PERFSIM_ASSERT_OK_AND_ASSIGN(Literal raw, ReadNpyFile(path));
  EXPECT_EQ(raw.shape().element_type(), PrimitiveType::kU16);
  EXPECT_EQ(raw.GetAsInt64(0), 0x3fc0);
  PERFSIM_ASSERT_OK_AND_ASSIGN(Literal typed, ReadNpyFile(path, PrimitiveType::kBF16));
  EXPECT_EQ(typed.GetAsDouble(0), 1.5);
  EXPECT_THAT(
      ReadNpyFile(path, PrimitiveType::kF32),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected f32 elements; got u16")));
  std::remove(path.c_str());
}

TEST(Npy, MalformedFilesAreRejected) {
  EXPECT_THAT(ParseNpy("not an npy file"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                    HasSubstr("expected the \\x93NUMPY magic")));
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string bytes, SerializeNpy(F32({2}, {1, 2})));
  EXPECT_THAT(ParseNpy(bytes.substr(0, bytes.size() - 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 8 data bytes")));
}

// Found by fuzz/npy_fuzzer: a header whose 'shape' had no value threw std::out_of_range (the
// process aborted), a shape that was not a tuple was read as a scalar, and an element count
// that overflows int64 was reported without the "npy: " prefix.
TEST(Npy, MalformedShapesAreRejectedWithTheNpyPrefix) {
  const auto npy = [](const std::string& shape, const std::string& data) {
    const std::string header =
        "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes.push_back(static_cast<char>(header.size() & 0xff));
    bytes.push_back(static_cast<char>(header.size() >> 8));
    return bytes + header + data;
  };
  EXPECT_THAT(ParseNpy(npy("", "")), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("npy: expected a shape tuple")));
  EXPECT_THAT(ParseNpy(npy("7", std::string(4, '\0'))),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("npy: expected a shape tuple such as (4, 8); got '7'")));
  absl::StatusOr<Literal> huge = ParseNpy(npy("(4611686018427387904, 4)", ""));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(huge.status().message());
  EXPECT_THAT(message, ::testing::StartsWith("npy: "));
  EXPECT_THAT(message, HasSubstr("fits in int64"));
  // A well-formed scalar is still read.
  PERFSIM_ASSERT_OK_AND_ASSIGN(Literal scalar, ParseNpy(npy("()", std::string(4, '\0'))));
  EXPECT_EQ(scalar.shape().rank(), 0);
}

constexpr char kIndexedModule[] = R"(
HloModule m
ENTRY e {
  x = f32[8,4] parameter(0)
  w = f32[3,4,2] parameter(1)
  gs = s32[3] parameter(2)
  i = s32[] parameter(3)
  n = s32[5] parameter(4)
  y = f32[8,2] ragged-dot(x, w, gs), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
  s = f32[3,2] dynamic-slice(y, i, i), dynamic_slice_sizes={3,2}
  ROOT t = (f32[3,2], s32[5]) tuple(s, n)
})";

TEST(RandomInputs, SameSeedSameBitsAndStatedRanges) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> module, ParseHloModule(kIndexedModule));
  PERFSIM_ASSERT_OK_AND_ASSIGN(auto a, MakeRandomInputs(*module, 2, 7));
  PERFSIM_ASSERT_OK_AND_ASSIGN(auto b, MakeRandomInputs(*module, 2, 7));
  PERFSIM_ASSERT_OK_AND_ASSIGN(auto c, MakeRandomInputs(*module, 2, 8));
  ASSERT_EQ(a.size(), 2u);
  for (int d = 0; d < 2; ++d) {
    for (int p = 0; p < 5; ++p) EXPECT_EQ(a[d][p], b[d][p]) << "device " << d << " param " << p;
  }
  EXPECT_FALSE(a[0][0] == c[0][0]);
  EXPECT_FALSE(a[0][0] == a[1][0]) << "devices get independent draws";
  for (int d = 0; d < 2; ++d) {
    for (double v : Values(a[d][0])) {
      EXPECT_GE(v, -1.0);
      EXPECT_LT(v, 1.0);
    }
    // Group sizes sum to the ragged dimension (8 rows).
    double sum = 0;
    for (double v : Values(a[d][2])) {
      EXPECT_GE(v, 0);
      sum += v;
    }
    EXPECT_EQ(sum, 8);
    // The dynamic-slice start indexes dim 0 of y [8,2] with size 3 (valid starts 0..5) and
    // dim 1 with size 2 (only 0); the first use decides, so the range is [0, 6).
    EXPECT_GE(a[d][3].GetAsInt64(0), 0);
    EXPECT_LT(a[d][3].GetAsInt64(0), 6);
    for (double v : Values(a[d][4])) {
      EXPECT_GE(v, 0);
      EXPECT_LT(v, 8);
    }
  }
  // The inputs run.
  InterpreterOptions options;
  options.num_devices = 2;
  PERFSIM_EXPECT_OK(RunModule(*module, a, options));
}

TEST(RandomInputs, FusedFfnGroupSizesSumToTheRows) {
  // perfsim.fused_ffn takes its group sizes as operand 4 and splits x's 8 rows among them. With
  // the plain integer draw (uniform in [0, 8) for each of 3 groups) the sizes would exceed the
  // rows in most draws and the kernel would refuse them.
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> module, ParseHloModule(R"(HloModule ffn

ENTRY main {
  x = f32[8,4] parameter(0)
  wi_0 = f32[3,4,5] parameter(1)
  wi_1 = f32[3,4,5] parameter(2)
  wo = f32[3,5,4] parameter(3)
  gs = s32[3] parameter(4)
  ROOT y = f32[8,4] custom-call(x, wi_0, wi_1, wo, gs), custom_call_target="perfsim.fused_ffn", backend_config={"tiling":[8,4,5],"tiled_dim":"F","activation":"silu"}
}
)"));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(auto inputs, MakeRandomInputs(*module, 1, seed));
    double sum = 0;
    for (double v : Values(inputs[0][4])) {
      EXPECT_GE(v, 0);
      sum += v;
    }
    EXPECT_EQ(sum, 8) << "seed " << seed;
    PERFSIM_EXPECT_OK(RunModule(*module, inputs, InterpreterOptions()));
  }
}

}  // namespace
}  // namespace perfsim
