// Tests of the MoE model descriptions: the built-in models, their agreement with
// shared/reference/models.md, and validation (sim/moe/model_config.h, model_registry.h).
#include "sim/moe/model_config.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/moe/model_registry.h"
#include "sim/util/status_matchers.h"
#include "tests/hw/expected_errors.h"

namespace perfsim {
namespace {

using ::perfsim::testing::IsOk;
using ::perfsim::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ModelConfig MustLoad(const std::string& name) {
  absl::StatusOr<ModelConfig> model = LoadBuiltinModel(name);
  PERFSIM_CHECK(model.ok()) << model.status();
  return *std::move(model);
}

TEST(ModelConfig, BuiltinModelsAreTheNineDescribedPlusNano) {
  EXPECT_THAT(
      BuiltinModelNames(),
      ElementsAre("deepseek_v2_lite", "deepseek_v3", "gpt_oss_120b", "kimi_k2", "llama4_maverick",
                  "mixtral_8x22b", "mixtral_8x7b", "nano", "qwen3_235b_a22b", "qwen3_30b_a3b"));
}

class BuiltinModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltinModelTest, LoadsAndValidates) {
  absl::StatusOr<ModelConfig> model = LoadBuiltinModel(GetParam());
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->name(), GetParam());
  EXPECT_FALSE(model->proto().display_name().empty());
  EXPECT_EQ(model->proto().num_layers(),
            model->proto().num_moe_layers() + model->proto().num_dense_layers());
}

TEST_P(BuiltinModelTest, EmbeddedCopyMatchesTheSourceFile) {
  const EmbeddedTextProto* file = FindEmbeddedTextProto(BuiltinModelFiles(), GetParam());
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->path, "models/" + GetParam() + ".textproto");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::string on_disk,
      ReadTextFile(std::string(PERFSIM_SOURCE_DIR "/") + std::string(file->path)));
  EXPECT_EQ(file->contents, on_disk);
}

INSTANTIATE_TEST_SUITE_P(AllModels, BuiltinModelTest, ::testing::ValuesIn(BuiltinModelNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// Shapes from the table in shared/reference/models.md section 1 (columns D, F_moe, E, K, shared,
// L, MoE layers).
TEST(ModelConfig, ShapesMatchTheReferenceTable) {
  struct Row {
    const char* name;
    int64_t d, f, e, k, shared, layers, moe_layers;
  };
  const Row rows[] = {
      {"deepseek_v3", 7168, 2048, 256, 8, 1, 61, 58},
      {"deepseek_v2_lite", 2048, 1408, 64, 6, 2, 27, 26},
      {"mixtral_8x7b", 4096, 14336, 8, 2, 0, 32, 32},
      {"mixtral_8x22b", 6144, 16384, 8, 2, 0, 56, 56},
      {"qwen3_30b_a3b", 2048, 768, 128, 8, 0, 48, 48},
      {"qwen3_235b_a22b", 4096, 1536, 128, 8, 0, 94, 94},
      {"llama4_maverick", 5120, 8192, 128, 1, 1, 48, 24},
      {"gpt_oss_120b", 2880, 2880, 128, 4, 0, 36, 36},
      {"kimi_k2", 7168, 2048, 384, 8, 1, 61, 60},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const ModelConfig model = MustLoad(row.name);
    EXPECT_EQ(model.d_model(), row.d);
    EXPECT_EQ(model.expert_ffn_dim(), row.f);
    EXPECT_EQ(model.num_experts(), row.e);
    EXPECT_EQ(model.experts_per_token(), row.k);
    EXPECT_EQ(model.num_shared_experts(), row.shared);
    EXPECT_EQ(model.proto().num_layers(), row.layers);
    EXPECT_EQ(model.proto().num_moe_layers(), row.moe_layers);
  }
}

TEST(ModelConfig, RoutingMatchesTheReferenceNumerics) {
  // DeepSeek-V3: sigmoid + bias, 8 groups, top-4 groups by top-2 sum, renormalised, x2.5.
  const ModelConfig deepseek_v3 = MustLoad("deepseek_v3");
  const RouterSpec& v3 = deepseek_v3.proto().router();
  EXPECT_EQ(v3.kind(), ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK);
  EXPECT_EQ(v3.num_groups(), 8);
  EXPECT_EQ(v3.topk_groups(), 4);
  EXPECT_EQ(v3.group_score(), GROUP_SCORE_TOP2_SUM);
  EXPECT_TRUE(v3.renormalize());
  EXPECT_EQ(v3.routed_scaling_factor(), 2.5);
  // Kimi K2: x2.827 (models.md table).
  EXPECT_EQ(MustLoad("kimi_k2").proto().router().routed_scaling_factor(), 2.827);
  // Mixtral: top-k then softmax; Llama 4: sigmoid pre-scale of the input, top-1.
  EXPECT_EQ(MustLoad("mixtral_8x7b").proto().router().kind(), ROUTER_KIND_TOPK_SOFTMAX);
  EXPECT_EQ(MustLoad("llama4_maverick").proto().router().kind(),
            ROUTER_KIND_SIGMOID_INPUT_PRESCALE);
  EXPECT_EQ(MustLoad("llama4_maverick").proto().moe_layer_interval(), 2);
  // GPT-OSS: clip 7, alpha 1.702, biases on router and experts (models.md section 3).
  const ModelConfig gpt_oss = MustLoad("gpt_oss_120b");
  const ModelSpec& oss = gpt_oss.proto();
  EXPECT_EQ(oss.activation().kind(), ACTIVATION_KIND_CLIPPED_SWIGLU);
  EXPECT_EQ(oss.activation().clip_limit(), 7);
  EXPECT_EQ(oss.activation().sigmoid_alpha(), 1.702);
  EXPECT_TRUE(oss.router().has_bias());
  EXPECT_TRUE(oss.expert_ffn_has_bias());
}

// Per-layer figures from shared/reference/models.md section 2 (forward, per token), which
// derives them as 2·K·3·D·F etc.; the table rounds, so compare at its precision.
TEST(ModelConfig, DerivedCountsMatchTheReferenceCostTable) {
  const ModelConfig v3 = MustLoad("deepseek_v3");
  // 2·8·3·7168·2048 = 704,643,072 ("704.6 M").
  EXPECT_EQ(v3.RoutedFlopsPerToken(), int64_t{704643072});
  // 2·1·3·7168·2048 = 88,080,384 ("88.1 M").
  EXPECT_EQ(v3.SharedFlopsPerToken(), int64_t{88080384});
  // 2·7168·256 = 3,670,016 ("3.67 M").
  EXPECT_EQ(v3.RouterFlopsPerToken(), int64_t{3670016});
  // 256·3·7168·2048 = 11,274,289,152 ("11.27 B"); ×58 layers = 653.9 B.
  EXPECT_EQ(v3.RoutedParamsPerMoeLayer(), int64_t{11274289152});
  EXPECT_NEAR(v3.RoutedParamsTotal() / 1e9, 653.9, 0.05);
  // One expert in bf16: 3·7168·2048·2 B = 84.0 MiB.
  EXPECT_NEAR(v3.BytesPerExpert() / (1024.0 * 1024), 84.0, 0.05);

  EXPECT_NEAR(MustLoad("kimi_k2").RoutedParamsTotal() / 1e9, 1014.7, 0.05);
  EXPECT_NEAR(MustLoad("mixtral_8x7b").RoutedParamsTotal() / 1e9, 45.1, 0.05);
  EXPECT_NEAR(MustLoad("mixtral_8x22b").BytesPerExpert() / (1024.0 * 1024), 576, 0.05);
  EXPECT_NEAR(MustLoad("qwen3_235b_a22b").RoutedParamsTotal() / 1e9, 227.1, 0.05);
  EXPECT_NEAR(MustLoad("deepseek_v2_lite").RoutedParamsTotal() / 1e9, 14.4, 0.05);
  EXPECT_NEAR(MustLoad("llama4_maverick").RoutedParamsTotal() / 1e9, 386.5, 0.05);
  EXPECT_NEAR(MustLoad("llama4_maverick").SharedFlopsPerToken() / 1e6, 251.7, 0.05);
  EXPECT_NEAR(MustLoad("gpt_oss_120b").RoutedFlopsPerToken() / 1e6, 199.1, 0.05);
  EXPECT_NEAR(MustLoad("gpt_oss_120b").RouterFlopsPerToken() / 1e6, 0.74, 0.005);
  EXPECT_NEAR(MustLoad("qwen3_30b_a3b").RoutedFlopsPerToken() / 1e6, 75.5, 0.05);
}

TEST(ModelConfig, NanoHasDistinctDimensionsForCpuTests) {
  const ModelConfig nano = MustLoad("nano");
  const std::set<int64_t> dims = {nano.d_model(),     nano.expert_ffn_dim(),
                                  nano.num_experts(), nano.experts_per_token(),
                                  nano.num_groups(),  nano.experts_per_group()};
  EXPECT_EQ(dims.size(), 6u) << "D, F, E, K, groups and experts per group must all differ";
  EXPECT_EQ(nano.experts_per_token(), 2);
  // Expert parallelism 1, 2, 4 and tensor parallelism 1, 2, 4 must divide E and F.
  for (int64_t parallelism : {1, 2, 4}) {
    EXPECT_EQ(nano.num_experts() % parallelism, 0);
    EXPECT_EQ(nano.expert_ffn_dim() % parallelism, 0);
  }
  // Small enough for the interpreter: all expert weights fit in a few hundred KiB of f32.
  EXPECT_LT(nano.RoutedParamsPerMoeLayer() * DTypeBytes(nano.proto().param_dtype()), 1 << 20);
}

TEST(ModelConfig, DTypeSpellingsAreHloSpellings) {
  EXPECT_EQ(DTypeSpelling(DTYPE_BF16), "bf16");
  EXPECT_EQ(DTypeSpelling(DTYPE_F32), "f32");
  EXPECT_EQ(DTypeSpelling(DTYPE_F8E4M3FN), "f8e4m3fn");
  EXPECT_EQ(DTypeSpelling(DTYPE_UNSPECIFIED), "");
  EXPECT_EQ(DTypeBytes(DTYPE_BF16), 2);
  EXPECT_EQ(DTypeBytes(DTYPE_F8E5M2), 1);
}

// ---------------------------------------------------------------------------------------------
// Validation.

TEST(ModelValidation, InvalidFileReportsEveryProblemAtItsLine) {
  const std::string path = PERFSIM_TESTDATA_DIR "/hw/invalid_model.textproto";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string text, ReadTextFile(path));
  absl::StatusOr<ModelConfig> model = ModelConfig::FromText(text, "invalid_model.textproto");
  ASSERT_THAT(model, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid_model")));
  const std::vector<testing::ExpectedError> expected = testing::ReadExpectedErrors(text);
  ASSERT_EQ(expected.size(), 8u);  // The file has eight annotated problems.
  testing::ExpectErrorsMatch(model.status().message(), "invalid_model.textproto", expected);
}

TEST(ModelValidation, KMustNotExceedTheExpertsOfTheKeptGroups) {
  ModelSpec spec = MustLoad("nano").proto();
  // 4 groups of 3, keep 1 group: at most 3 experts can be picked.
  spec.mutable_router()->set_topk_groups(1);
  spec.set_experts_per_token(4);
  EXPECT_THAT(ModelConfig::FromProto(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "experts_per_token: expected <= topk_groups x experts per group (1 x 3 = "
                       "3); got 4"));
}

TEST(ModelValidation, GroupedRoutingNeedsAGroupScore) {
  ModelSpec spec = MustLoad("nano").proto();
  spec.mutable_router()->clear_group_score();
  EXPECT_THAT(ModelConfig::FromProto(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("router.group_score: expected GROUP_SCORE_TOP2_SUM or "
                                 "GROUP_SCORE_MAX with 4 groups; got unset")));
}

TEST(ModelValidation, Llama4PrescaleNeedsTopOne) {
  ModelSpec spec = MustLoad("llama4_maverick").proto();
  spec.set_experts_per_token(2);
  EXPECT_THAT(ModelConfig::FromProto(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("experts_per_token: expected 1 for "
                                 "ROUTER_KIND_SIGMOID_INPUT_PRESCALE")));
}

TEST(ModelValidation, EmptySpecListsEveryMissingField) {
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(ModelSpec());
  ASSERT_FALSE(model.ok());
  const std::string message(model.status().message());
  for (const char* field :
       {"name:", "d_model:", "expert_ffn_dim:", "num_experts:", "experts_per_token:", "num_layers:",
        "activation.kind:", "router.kind:", "router.dtype:", "param_dtype:", "activation_dtype:"}) {
    EXPECT_THAT(message, HasSubstr(field));
  }
}

TEST(ModelValidation, DefaultsFillGroupsAndScaling) {
  ModelSpec spec = MustLoad("mixtral_8x7b").proto();
  spec.mutable_router()->clear_num_groups();
  spec.mutable_router()->clear_topk_groups();
  spec.mutable_router()->clear_routed_scaling_factor();
  spec.clear_moe_layer_interval();
  PERFSIM_ASSERT_OK_AND_ASSIGN(ModelConfig model, ModelConfig::FromProto(spec));
  EXPECT_EQ(model.num_groups(), 1);
  EXPECT_EQ(model.topk_groups(), 1);
  EXPECT_EQ(model.proto().router().routed_scaling_factor(), 1.0);
  EXPECT_EQ(model.proto().moe_layer_interval(), 1);
}

TEST(ModelValidation, HugeDimensionsAreRejectedBeforeTheyOverflow) {
  ModelSpec spec = MustLoad("nano").proto();
  spec.set_d_model(int64_t{1} << 40);
  spec.set_expert_ffn_dim(int64_t{1} << 40);
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(spec);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("d_model: expected 1 <= value <= 262144"));
  EXPECT_THAT(model.status().message(), HasSubstr("expert_ffn_dim: expected 1 <= value <= 262144"));
}

TEST(ModelRegistry, UnknownNameIsNotFoundListingTheKnownNames) {
  absl::StatusOr<ModelConfig> model = ResolveModel("gpt5");
  ASSERT_THAT(model, StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown model 'gpt5'")));
  for (const std::string& name : BuiltinModelNames()) {
    EXPECT_THAT(model.status().message(), HasSubstr(name));
  }
}

TEST(ModelRegistry, PathsAreLoadedFromFiles) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(ModelConfig model,
                               ResolveModel(PERFSIM_SOURCE_DIR "/models/nano.textproto"));
  EXPECT_EQ(model.name(), "nano");
}

}  // namespace
}  // namespace perfsim
