// How the interpreter's kernels read their backend_config: as KernelBackendConfig with
// protobuf's JSON parser (sim/interp/custom_calls.h), in either HLO form, top-level fields only,
// and malformed configs refused with an error naming the instruction once.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::F32;
using ::perfsim::testing::Run1;
using ::perfsim::testing::S32;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::Values;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// One row x = [1, 1] in group 1 of group_sizes [0, 1]; rhs[0] = I, rhs[1] stored [[1, 2], [3, 4]].
std::string GmmWithConfig(const std::string& config) {
  return absl::StrCat(R"(
HloModule m
ENTRY e {
  x = f32[1,2] parameter(0)
  w = f32[2,2,2] parameter(1)
  gs = s32[2] parameter(2)
  ROOT y = f32[1,2] custom-call(x, w, gs), custom_call_target="perfsim.gmm", backend_config=)",
                      config, "\n}\n");
}

std::vector<Literal> GmmInputs() {
  std::vector<Literal> inputs;
  inputs.push_back(F32({1, 2}, {1, 1}));
  inputs.push_back(F32({2, 2, 2}, {1, 0, 0, 1, 1, 2, 3, 4}));
  inputs.push_back(S32({2}, {0, 1}));
  return inputs;
}

TEST(InterpKernelConfig, StringFormStringIntegersAndOnlyTopLevelFields) {
  // transpose_rhs: rhs[1] stored [n, k] is the [k, n] matrix [[1, 3], [2, 4]]; [1, 1] @ it =
  // [3, 7] (untransposed it would be [4, 6]). The nested group_offset 1 is not the kernel's: read,
  // it would send the row's group 1 to local group 0, the identity, giving [1, 1].
  const std::string config =
      R"("{\"transpose_rhs\":true,\"outer\":{\"group_offset\":1,\"transpose_rhs\":false},)"
      R"(\"tiling\":[\"1\",2,2]}")";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(GmmWithConfig(config), GmmInputs()));
  EXPECT_THAT(Values(out[0]), ElementsAre(3, 7));
}

TEST(InterpKernelConfig, MalformedConfigIsAnErrorNamingTheInstructionOnce) {
  for (const std::string& config :
       {std::string(R"({"tiling":"wide"})"), std::string(R"({"transpose_rhs":2})"),
        std::string(R"("{\"tiling\":[1,2,2]")")}) {
    EXPECT_THAT(Run1(GmmWithConfig(config), GmmInputs()),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("y: expected backend_config JSON for KernelBackendConfig; "
                                         "got " +
                                         config),
                               Not(HasSubstr("y: y:")))))
        << config;
  }
}

// perfsim.fused_ffn on one row, D = F = 1, one group: x = 2, wi_0 = 3, wi_1 = 5, wo = 1, so
// h0 = 6 and h1 = 10.
std::string FusedFfnWithConfig(const std::string& config) {
  return absl::StrCat(R"(
HloModule m
ENTRY e {
  x = f32[1,1] parameter(0)
  w0 = f32[1,1,1] parameter(1)
  w1 = f32[1,1,1] parameter(2)
  wo = f32[1,1,1] parameter(3)
  gs = s32[1] parameter(4)
  ROOT y = f32[1,1] custom-call(x, w0, w1, wo, gs), custom_call_target="perfsim.fused_ffn", backend_config=)",
                      config, "\n}\n");
}

std::vector<Literal> FusedFfnInputs() {
  std::vector<Literal> inputs;
  inputs.push_back(F32({1, 1}, {2}));
  inputs.push_back(F32({1, 1, 1}, {3}));
  inputs.push_back(F32({1, 1, 1}, {5}));
  inputs.push_back(F32({1, 1, 1}, {1}));
  inputs.push_back(S32({1}, {1}));
  return inputs;
}

TEST(InterpKernelConfig, ClippedSwigluTakesAnExplicitZeroAlphaButNeedsBothNumbers) {
  // L = 4, alpha = 0: g = min(6, 4) = 4, u = clamp(10, -4, 4) = 4, g * sigmoid(0) * (u + 1) =
  // 4 * 0.5 * 5 = 10, times wo = 1. An explicit 0 is a value (the field's presence is tracked).
  const std::string base =
      R"({"tiling":[1,1,1],"tiled_dim":"F","activation":"clipped_swiglu","clip_limit":4)";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(FusedFfnWithConfig(base + R"(,"sigmoid_alpha":0})"), FusedFfnInputs()));
  EXPECT_THAT(Values(out[0]), ElementsAre(10));
  EXPECT_THAT(Run1(FusedFfnWithConfig(base + "}"), FusedFfnInputs()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("y: expected backend_config \"clip_limit\" and \"sigmoid_alpha\" "
                                 "numbers for clipped_swiglu; got none")));
}

TEST(InterpKernelConfig, FusedFfnNeedsThreeTilesAndATiledDimension) {
  EXPECT_THAT(Run1(FusedFfnWithConfig(R"({"tiling":[1,1],"tiled_dim":"F","activation":"silu"})"),
                   FusedFfnInputs()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(R"(expected backend_config "tiling":[tm,td,tf])")));
  EXPECT_THAT(
      Run1(FusedFfnWithConfig(R"({"tiling":[1,1,1],"activation":"silu"})"), FusedFfnInputs()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(R"(expected backend_config "tiled_dim" "F" or "D"; got '')")));
}

}  // namespace
}  // namespace perfsim
