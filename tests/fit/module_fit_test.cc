// Fit-checking the kernel custom-calls of a module, as the lowerings will emit them.
#include "sim/fit/module_fit.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::IsOk;
using ::perfsim::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kMiB = 1024 * 1024;

// Three kernel calls: an f32 gmm with MaxText's default tiles (18 MiB, over v5p's 16 MiB
// scoped limit), the same in bf16 (10 MiB), and a tgmm with no tiling (megablox's default
// (128, 128, 128): bf16 in, f32 out: 2·(128·128·2 + 128·128·2) + 2·128·128·4 + 4·128·128
// = 128 + 128 + 64 KiB = 320 KiB). One gmm sits inside a called computation.
constexpr char kModule[] = R"(
HloModule experts

wi_f32 {
  x = f32[16384,1024] parameter(0)
  w = f32[8,1024,1024] parameter(1)
  gs = s32[8] parameter(2)
  ROOT gmm_f32 = f32[16384,1024] custom-call(x, w, gs), custom_call_target="perfsim.gmm", backend_config={"tiling":[512,1024,1024],"transpose_rhs":false,"group_offset":0}
}

ENTRY main {
  x = bf16[16384,1024] parameter(0)
  w = bf16[8,1024,1024] parameter(1)
  gs = s32[8] parameter(2)
  xf = f32[16384,1024] parameter(3)
  wf = f32[8,1024,1024] parameter(4)
  y = bf16[16384,1024] custom-call(x, w, gs), custom_call_target="perfsim.gmm", backend_config={"tiling":[512,1024,1024]}
  yf = f32[16384,1024] call(xf, wf, gs), to_apply=wi_f32
  xt = bf16[1024,16384] transpose(x), dimensions={1,0}
  ROOT dw = f32[8,1024,1024] custom-call(xt, y, gs), custom_call_target="perfsim.tgmm"
}
)";

Chip LoadChip(absl::string_view name) {
  absl::StatusOr<Chip> chip = LoadBuiltinChip(name);
  EXPECT_TRUE(chip.ok()) << chip.status();
  return *std::move(chip);
}

std::unique_ptr<Module> Parse(absl::string_view text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "experts.hlo");
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? *std::move(module) : nullptr;
}

TEST(ModuleFit, ChecksEveryKernelCallInTextOrder) {
  std::unique_ptr<Module> module = Parse(kModule);
  ASSERT_NE(module, nullptr);
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<InstructionFit> fits,
                               FitCheckModule(*module, LoadChip("tpu_v5p"), std::nullopt));
  ASSERT_EQ(fits.size(), 3u);
  EXPECT_EQ(fits[0].instruction->name(), "gmm_f32");
  EXPECT_EQ(fits[0].report.required_bytes, 18 * kMiB);
  EXPECT_FALSE(fits[0].report.fits);
  EXPECT_EQ(fits[1].instruction->name(), "y");
  EXPECT_EQ(fits[1].report.required_bytes, 10 * kMiB);
  EXPECT_TRUE(fits[1].report.fits);
  EXPECT_EQ(fits[2].instruction->name(), "dw");
  EXPECT_EQ(fits[2].report.kernel, "tgmm");
  EXPECT_EQ(fits[2].report.tiling, kMegabloxDefaultTiling);
  EXPECT_EQ(fits[2].report.problem.shape.m, 16384);
  EXPECT_EQ(fits[2].report.problem.shape.k, 1024);
  EXPECT_EQ(fits[2].report.required_bytes, 320 * 1024);
  EXPECT_THAT(MisfitStatus(fits[1]), IsOk());
}

TEST(ModuleFit, MisfitIsALoweringFailureWithTheNumbers) {
  std::unique_ptr<Module> module = Parse(kModule);
  ASSERT_NE(module, nullptr);
  const absl::Status status = CheckModuleFits(*module, LoadChip("tpu_v5p"), std::nullopt);
  EXPECT_THAT(
      status,
      StatusIs(absl::StatusCode::kResourceExhausted,
               AllOf(HasSubstr("gmm_f32 (perfsim.gmm at 8:8): gmm tiling (512, 1024, 1024)"),
                     HasSubstr("needs 18 MiB of VMEM (18874368 bytes)"),
                     HasSubstr("limit 16 MiB (16777216 bytes, default scoped VMEM limit "
                               "of tpu_v5p)"),
                     HasSubstr("short by 2 MiB"),
                     HasSubstr("largest buffers: rhs 2 x [1024,1024] f32 = 8 MiB"),
                     Not(HasSubstr("y (perfsim.gmm")))));
  // With the limit raised to 32 MiB every call fits; v6e's scoped default is 32 MiB too.
  EXPECT_THAT(CheckModuleFits(*module, LoadChip("tpu_v5p"), 32 * kMiB), IsOk());
  EXPECT_THAT(CheckModuleFits(*module, LoadChip("tpu_v6e"), std::nullopt), IsOk());
}

TEST(ModuleFit, MisfitsCarryTheCheckFailedMarkAndKeepItUnderContext) {
  std::unique_ptr<Module> module = Parse(kModule);
  ASSERT_NE(module, nullptr);
  const absl::Status status =
      CheckModuleFits(*module, LoadChip("tpu_v5p"), std::nullopt, "backend megablox_gmm");
  EXPECT_TRUE(IsMisfit(status));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kResourceExhausted,
                               HasSubstr("backend megablox_gmm: gmm_f32 (perfsim.gmm at 8:8)")));
  // Other ResourceExhausted errors (the interpreter's memory budget) are not misfits, and
  // neither are input errors of the check itself.
  EXPECT_FALSE(IsMisfit(absl::ResourceExhaustedError("run: memory budget")));
  const absl::Status gpu = CheckModuleFits(*module, LoadChip("gpu_h100"), std::nullopt, "here");
  EXPECT_THAT(gpu, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("here: gmm_f32")));
  EXPECT_FALSE(IsMisfit(gpu));
}

// DeepSeek-V3 experts (D = 7168, F = 2048, 256 experts) behind one perfsim.fused_ffn call of
// 512 token rows in bf16, as fused_expert_ffn lowers it, tiled over D and over F.
std::string FusedFfnModule(absl::string_view tiled_dim, absl::string_view tiling) {
  return absl::StrCat(R"(
HloModule fused
ENTRY e {
  x = bf16[512,7168] parameter(0)
  wi0 = bf16[256,7168,2048] parameter(1)
  wi1 = bf16[256,7168,2048] parameter(2)
  wo = bf16[256,2048,7168] parameter(3)
  gs = s32[256] parameter(4)
  ROOT ffn = bf16[512,7168] custom-call(x, wi0, wi1, wo, gs), custom_call_target="perfsim.fused_ffn", backend_config={"tiling":[)",
                      tiling, R"(],"tiled_dim":")", tiled_dim,
                      R"(","activation":"silu","group_offset":0}
})");
}

TEST(ModuleFit, FusedFfnTiledOverDIsCheckedAndDoesNotFitV7x) {
  // Tiled over D, (tm, td, tf) = (512, 1024, 2048): x [512,7168] 2 × 7 MiB = 14 MiB, wi_0 and
  // wi_1 whole [7168,2048] 2 × 28 MiB = 56 MiB each, wo [2048,1024] 2 × 4 MiB = 8 MiB, out
  // [512,1024] 2 × 1 MiB = 2 MiB, h [512,2048] f32 4 MiB: 140 MiB = 146800640 B against the
  // kernel's own limit 0.9 × 64 MiB = 60397977 B (fit_report.h).
  std::unique_ptr<Module> d = Parse(FusedFfnModule("D", "512,1024,2048"));
  ASSERT_NE(d, nullptr);
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<InstructionFit> fits,
                               FitCheckModule(*d, LoadChip("tpu_v7x"), std::nullopt));
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].report.kernel, "fused_ffn_d_tiled");
  EXPECT_EQ(fits[0].report.problem.shape.k, 7168);
  EXPECT_EQ(fits[0].report.problem.shape.n, 2048);
  EXPECT_EQ(fits[0].report.required_bytes, 140 * kMiB);
  EXPECT_FALSE(fits[0].report.fits);
  const absl::Status status = CheckModuleFits(*d, LoadChip("tpu_v7x"), std::nullopt);
  EXPECT_TRUE(IsMisfit(status));
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("ffn (perfsim.fused_ffn at 9:8): fused_ffn_d_tiled tiling "
                                       "(512, 1024, 2048) needs 140 MiB of VMEM (146800640 bytes)"),
                             HasSubstr("limit 57.6 MiB (60397977 bytes"),
                             HasSubstr("largest buffers: wi_0 2 x [7168,2048] bf16 = 56 MiB"))));
  // Tiled over F, (256, 7168, 256): x, wi_0, wi_1, wo, out 2 × 3.5 MiB each and acc [256,7168]
  // f32 7 MiB: 42 MiB, which fits.
  std::unique_ptr<Module> f = Parse(FusedFfnModule("F", "256,7168,256"));
  ASSERT_NE(f, nullptr);
  PERFSIM_ASSERT_OK_AND_ASSIGN(fits, FitCheckModule(*f, LoadChip("tpu_v7x"), std::nullopt));
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].report.kernel, "fused_ffn_f_tiled");
  EXPECT_EQ(fits[0].report.required_bytes, 42 * kMiB);
  EXPECT_THAT(CheckModuleFits(*f, LoadChip("tpu_v7x"), std::nullopt), IsOk());
}

TEST(ModuleFit, FusedFfnCallsNeedATilingAndATiledDim) {
  std::unique_ptr<Module> no_dim = Parse(FusedFfnModule("E", "256,7168,256"));
  ASSERT_NE(no_dim, nullptr);
  EXPECT_THAT(FitCheckModule(*no_dim, LoadChip("tpu_v7x"), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ffn (perfsim.fused_ffn at 9:8): expected backend_config "
                                 "\"tiled_dim\": \"D\" or \"F\"; got \"E\"")));
  std::unique_ptr<Module> short_tiling = Parse(FusedFfnModule("F", "256,7168"));
  ASSERT_NE(short_tiling, nullptr);
  EXPECT_THAT(FitCheckModule(*short_tiling, LoadChip("tpu_v7x"), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected backend_config \"tiling\": [tm, td, tf]; got "
                                 "[256,7168]")));
}

TEST(ModuleFit, TransposedRhsTakesNFromTheMiddleDimension) {
  std::unique_ptr<Module> module = Parse(R"(
HloModule t
ENTRY e {
  x = bf16[256,512] parameter(0)
  w = bf16[4,384,512] parameter(1)
  gs = s32[4] parameter(2)
  ROOT y = f32[256,384] custom-call(x, w, gs), custom_call_target="perfsim.gmm", backend_config="{\"tiling\":[128,512,128],\"transpose_rhs\":true}"
})");
  ASSERT_NE(module, nullptr);
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<InstructionFit> fits,
                               FitCheckModule(*module, LoadChip("tpu_v5p"), std::nullopt));
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].report.problem.shape.n, 384);
  EXPECT_TRUE(fits[0].report.problem.options.transpose_rhs);
  // rhs block (tn, tk) = [128, 512] bf16 ×2 = 256 KiB.
  const FitBuffer* rhs = nullptr;
  for (const FitBuffer& b : fits[0].report.buffers) {
    if (b.name == "rhs") rhs = &b;
  }
  ASSERT_NE(rhs, nullptr);
  EXPECT_EQ(DimsToString(rhs->block_shape), "[128,512]");
  EXPECT_EQ(rhs->bytes, 256 * 1024);
}

TEST(ModuleFit, MalformedKernelCallsNameTheInstruction) {
  std::unique_ptr<Module> module = Parse(R"(
HloModule bad
ENTRY e {
  x = bf16[256,512] parameter(0)
  w = bf16[4,512,384] parameter(1)
  gs = s32[4] parameter(2)
  ROOT y = f32[256,384] custom-call(x, w, gs), custom_call_target="perfsim.gmm", backend_config={"tiling":[128,512]}
})");
  ASSERT_NE(module, nullptr);
  EXPECT_THAT(FitCheckModule(*module, LoadChip("tpu_v5p"), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("y (perfsim.gmm at 7:8): expected backend_config \"tiling\": "
                                 "[tm, tk, tn]; got [128,512]")));
  std::unique_ptr<Module> rank = Parse(R"(
HloModule bad
ENTRY e {
  x = bf16[256,512] parameter(0)
  w = bf16[512,384] parameter(1)
  gs = s32[4] parameter(2)
  ROOT y = f32[256,384] custom-call(x, w, gs), custom_call_target="perfsim.gmm"
})");
  ASSERT_NE(rank, nullptr);
  EXPECT_THAT(FitCheckModule(*rank, LoadChip("tpu_v5p"), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected rhs (operand 1) of rank 3; got bf16[512,384]")));
}

TEST(ModuleFit, TpuKernelsOnAGpuChipAreAnError) {
  std::unique_ptr<Module> module = Parse(kModule);
  ASSERT_NE(module, nullptr);
  EXPECT_THAT(FitCheckModule(*module, LoadChip("gpu_h100"), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("gmm_f32 (perfsim.gmm at 8:8): gmm: expected a TPU chip")));
}

TEST(ModuleFit, ModulesWithoutKernelCallsFitTrivially) {
  std::unique_ptr<Module> module = Parse(R"(
HloModule plain
ENTRY e {
  a = f32[4] parameter(0)
  ROOT b = f32[4] custom-call(a), custom_call_target="Sharding"
})");
  ASSERT_NE(module, nullptr);
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<InstructionFit> fits,
                               FitCheckModule(*module, LoadChip("tpu_v5p"), std::nullopt));
  EXPECT_TRUE(fits.empty());
}

}  // namespace
}  // namespace perfsim
