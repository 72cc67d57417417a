// Tests of the whole-step fields of the model descriptions (proto/model.proto AttentionSpec,
// NormSpec, tied_embeddings, mtp_depth): the built-in models against their sources, the
// per-layer facts ModelConfig derives, and every rejection of ValidateModelSpec.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/moe/model_config.h"
#include "sim/moe/model_registry.h"
#include "sim/util/status_matchers.h"
#include "tests/hw/expected_errors.h"

namespace perfsim {
namespace {

using ::perfsim::testing::IsOk;
using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

ModelConfig MustLoad(const std::string& name) {
  absl::StatusOr<ModelConfig> model = LoadBuiltinModel(name);
  PERFSIM_CHECK(model.ok()) << model.status();
  return *std::move(model);
}

// The message of a rejected spec ("" when it was accepted).
std::string Rejection(const ModelSpec& spec) {
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(spec);
  return model.ok() ? "" : std::string(model.status().message());
}

int64_t CountLayers(const ModelConfig& model, bool (ModelConfig::*predicate)(int64_t) const) {
  int64_t count = 0;
  for (int64_t layer = 0; layer < model.proto().num_layers(); ++layer) {
    if ((model.*predicate)(layer)) ++count;
  }
  return count;
}

TEST(ModelAttention, EveryBuiltinModelDescribesTheWholeStep) {
  for (const std::string& name : BuiltinModelNames()) {
    SCOPED_TRACE(name);
    const ModelConfig model = MustLoad(name);
    EXPECT_TRUE(model.has_attention());
    EXPECT_TRUE(model.proto().has_norm());
    EXPECT_EQ(model.proto().norm().kind(), NORM_KIND_RMSNORM);
    EXPECT_TRUE(model.proto().norm().has_epsilon());
    EXPECT_FALSE(model.proto().tied_embeddings());
  }
}

// Heads from shared/reference/models.md "Attention-side extras": MLA heads V3 128, V2-Lite 16,
// Kimi K2 64; Mixtral 32/8 and 48/8, head_dim 128; Qwen3 32/4 and 64/4, head_dim 128; Llama 4
// 40/8 (head_dim 128: MaxText base.yml default); GPT-OSS 64/8, head_dim 64.
TEST(ModelAttention, HeadsMatchTheReferenceExtras) {
  struct Row {
    const char* name;
    AttentionKind kind;
    int64_t heads, kv_heads, head_dim;
  };
  const Row rows[] = {
      {"deepseek_v3", ATTENTION_KIND_MLA, 128, 128, 0},
      {"deepseek_v2_lite", ATTENTION_KIND_MLA, 16, 16, 0},
      {"kimi_k2", ATTENTION_KIND_MLA, 64, 64, 0},
      {"mixtral_8x7b", ATTENTION_KIND_GQA, 32, 8, 128},
      {"mixtral_8x22b", ATTENTION_KIND_GQA, 48, 8, 128},
      {"qwen3_30b_a3b", ATTENTION_KIND_GQA, 32, 4, 128},
      {"qwen3_235b_a22b", ATTENTION_KIND_GQA, 64, 4, 128},
      {"llama4_maverick", ATTENTION_KIND_GQA, 40, 8, 128},
      {"gpt_oss_120b", ATTENTION_KIND_GQA, 64, 8, 64},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const ModelConfig model = MustLoad(row.name);  // holds what `a` refers to
    const AttentionSpec& a = model.attention();
    EXPECT_EQ(a.kind(), row.kind);
    EXPECT_EQ(a.num_query_heads(), row.heads);
    EXPECT_EQ(a.num_kv_heads(), row.kv_heads);
    EXPECT_EQ(a.head_dim(), row.head_dim);
    EXPECT_EQ(a.has_mla(), row.kind == ATTENTION_KIND_MLA);
    if (!a.has_mla()) continue;
    // q_lora 1536 (V2-Lite 0), kv_lora 512, qk_nope 128, qk_rope 64, v_head 128.
    EXPECT_EQ(a.mla().q_lora_rank(), std::string(row.name) == "deepseek_v2_lite" ? 0 : 1536);
    EXPECT_EQ(a.mla().kv_lora_rank(), 512);
    EXPECT_EQ(a.mla().qk_nope_head_dim(), 128);
    EXPECT_EQ(a.mla().qk_rope_head_dim(), 64);
    EXPECT_EQ(a.mla().v_head_dim(), 128);
  }
  EXPECT_TRUE(MustLoad("qwen3_30b_a3b").attention().qk_norm());
  EXPECT_FALSE(MustLoad("llama4_maverick").attention().qk_norm());
}

// models.md: "GPT-OSS: ... sliding window 128 on alternating layers, attention sinks, attention
// bias"; openai/gpt-oss model.py puts the window on the even layers.
TEST(ModelAttention, GptOssAlternatesSlidingAndGlobalLayers) {
  const ModelConfig model = MustLoad("gpt_oss_120b");
  EXPECT_EQ(model.attention().local_window_tokens(), 128);
  EXPECT_TRUE(model.attention().has_sinks());
  EXPECT_TRUE(model.attention().has_bias());
  EXPECT_EQ(model.LayerAttentionScope(0), ATTENTION_SCOPE_SLIDING_WINDOW);
  EXPECT_EQ(model.LayerAttentionScope(1), ATTENTION_SCOPE_GLOBAL);
  EXPECT_EQ(model.LayerAttentionScope(34), ATTENTION_SCOPE_SLIDING_WINDOW);
  EXPECT_EQ(model.LayerAttentionScope(35), ATTENTION_SCOPE_GLOBAL);
  EXPECT_TRUE(model.LayerHasRope(35));
  EXPECT_EQ(model.proto().mtp_depth(), 0);
}

// MaxText llama4.py: MoE when (l + 1) % 2 == 0, NoPE (and global attention) when
// (l + 1) % 4 == 0, chunked attention of 8192 tokens elsewhere.
TEST(ModelAttention, Llama4InterleavesDenseAndMoeAndLeavesEveryFourthLayerGlobalWithoutRope) {
  const ModelConfig model = MustLoad("llama4_maverick");
  EXPECT_FALSE(model.IsMoeLayer(0));
  EXPECT_TRUE(model.IsMoeLayer(1));
  EXPECT_TRUE(model.IsMoeLayer(47));
  EXPECT_EQ(CountLayers(model, &ModelConfig::IsMoeLayer), 24);
  EXPECT_EQ(model.LayerAttentionScope(0), ATTENTION_SCOPE_CHUNKED);
  EXPECT_EQ(model.LayerAttentionScope(2), ATTENTION_SCOPE_CHUNKED);
  EXPECT_EQ(model.LayerAttentionScope(3), ATTENTION_SCOPE_GLOBAL);
  EXPECT_EQ(model.LayerAttentionScope(47), ATTENTION_SCOPE_GLOBAL);
  EXPECT_TRUE(model.LayerHasRope(2));
  EXPECT_FALSE(model.LayerHasRope(3));
  EXPECT_EQ(CountLayers(model, &ModelConfig::LayerHasRope), 36);  // 48 - 48 / 4 NoPE layers.
  EXPECT_EQ(model.attention().local_window_tokens(), 8192);
}

// DeepSeek-V3: the first 3 of 61 layers are dense (models.md); one MTP module
// (DeepSeek-V3 README_WEIGHTS.md: num_nextn_predict_layers = 1).
TEST(ModelAttention, DeepSeekV3LeadsWithThreeDenseLayersAndHasOneMtpModule) {
  const ModelConfig model = MustLoad("deepseek_v3");
  EXPECT_FALSE(model.IsMoeLayer(2));
  EXPECT_TRUE(model.IsMoeLayer(3));
  EXPECT_TRUE(model.IsMoeLayer(60));
  EXPECT_FALSE(model.IsMoeLayer(61));  // Past the last layer.
  EXPECT_EQ(CountLayers(model, &ModelConfig::IsMoeLayer), 58);
  EXPECT_EQ(model.proto().mtp_depth(), 1);
  EXPECT_EQ(model.LayerAttentionScope(30), ATTENTION_SCOPE_GLOBAL);
  EXPECT_EQ(model.QueryWidth(), 128 * (128 + 64));
  EXPECT_EQ(model.KeyWidth(), 128 * (128 + 64));
  EXPECT_EQ(model.ValueWidth(), 128 * 128);
}

TEST(ModelAttention, ParamsFollowTheProjectionShapes) {
  // DeepSeek-V3 MLA (inference/model.py): wq_a 7168·1536 + wq_b 1536·128·192 = 48,758,784;
  // wkv_a 7168·(512 + 64) + wkv_b 512·128·(128 + 128) = 20,905,984; wo 128·128·7168 =
  // 117,440,512; total 187,105,280.
  EXPECT_EQ(MustLoad("deepseek_v3").AttentionParamsPerLayer(), int64_t{187105280});
  // DeepSeek-V2-Lite, no query latent: wq 2048·16·192 = 6,291,456; wkv_a 2048·576 = 1,179,648;
  // wkv_b 512·16·256 = 2,097,152; wo 16·128·2048 = 4,194,304; total 13,762,560.
  EXPECT_EQ(MustLoad("deepseek_v2_lite").AttentionParamsPerLayer(), int64_t{13762560});
  // Mixtral 8x7B GQA: q and out 2·4096·(32·128) = 33,554,432; k and v 2·4096·(8·128) =
  // 8,388,608; total 41,943,040.
  const ModelConfig mixtral = MustLoad("mixtral_8x7b");
  EXPECT_EQ(mixtral.AttentionParamsPerLayer(), int64_t{41943040});
  EXPECT_EQ(mixtral.QueryWidth(), 4096);
  EXPECT_EQ(mixtral.KeyWidth(), 1024);
  // GPT-OSS: q and out 2·2880·(64·64) = 23,592,960; k and v 2·2880·(8·64) = 2,949,120.
  EXPECT_EQ(MustLoad("gpt_oss_120b").AttentionParamsPerLayer(), int64_t{26542080});
}

// DeepSeek-V3 README_WEIGHTS.md: "Total parameters: 671B" for the main model (embedding, 61
// layers, head; MTP excluded). From the description: embedding and head 2·129280·7168 =
// 1.853 B; attention 61·187.1 M = 11.413 B; 3 dense FFNs 3·3·7168·18432 = 1.189 B; 58 MoE layers
// of 256 routed + 1 shared expert (3·7168·2048 each) and a 7168 x 256 router = 656.570 B;
// 671.03 B in all (norm weights, about 1 M, left out).
TEST(ModelAttention, DeepSeekV3AddsUpToTheReported671BParameters) {
  const ModelConfig model = MustLoad("deepseek_v3");
  const ModelSpec& m = model.proto();
  const int64_t embeddings = (m.tied_embeddings() ? 1 : 2) * m.vocab_size() * m.d_model();
  const int64_t attention = m.num_layers() * model.AttentionParamsPerLayer();
  const int64_t dense = m.num_dense_layers() * 3 * m.d_model() * m.dense_ffn_dim();
  const int64_t moe =
      m.num_moe_layers() * (model.RoutedParamsPerMoeLayer() +
                            m.num_shared_experts() * 3 * m.d_model() * m.shared_expert_ffn_dim() +
                            m.d_model() * m.num_experts());
  EXPECT_NEAR((embeddings + attention + dense + moe) / 1e9, 671.0, 0.5);
}

TEST(ModelAttention, MoeBlockAloneNeedsNoAttention) {
  ModelSpec spec = MustLoad("mixtral_8x7b").proto();
  spec.clear_attention();
  spec.clear_norm();
  PERFSIM_ASSERT_OK_AND_ASSIGN(ModelConfig model, ModelConfig::FromProto(spec));
  EXPECT_FALSE(model.has_attention());
  EXPECT_EQ(model.AttentionParamsPerLayer(), 0);
  EXPECT_EQ(model.LayerAttentionScope(0), ATTENTION_SCOPE_GLOBAL);
  EXPECT_FALSE(model.LayerHasRope(0));
}

// ---------------------------------------------------------------------------------------------
// Validation: one test per rejection.

TEST(ModelAttentionValidation, InvalidFileReportsEveryProblemAtItsLine) {
  const std::string path = PERFSIM_TESTDATA_DIR "/hw/invalid_attention.textproto";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string text, ReadTextFile(path));
  absl::StatusOr<ModelConfig> model = ModelConfig::FromText(text, "invalid_attention.textproto");
  ASSERT_THAT(model, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid_attention")));
  const std::vector<testing::ExpectedError> expected = testing::ReadExpectedErrors(text);
  ASSERT_EQ(expected.size(), 10u);  // The file has ten annotated problems.
  testing::ExpectErrorsMatch(model.status().message(), "invalid_attention.textproto", expected);
}

TEST(ModelAttentionValidation, KindMustBeSet) {
  ModelSpec spec = MustLoad("nano").proto();
  spec.mutable_attention()->clear_kind();
  EXPECT_THAT(Rejection(spec),
              HasSubstr("attention.kind: expected ATTENTION_KIND_GQA or ATTENTION_KIND_MLA; "
                        "got unset"));
}

TEST(ModelAttentionValidation, HeadsMustBePositive) {
  ModelSpec spec = MustLoad("nano").proto();
  spec.mutable_attention()->clear_num_query_heads();
  spec.mutable_attention()->clear_num_kv_heads();
  spec.mutable_attention()->clear_head_dim();
  const std::string message = Rejection(spec);
  EXPECT_THAT(message,
              HasSubstr("attention.num_query_heads: expected 1 <= value <= 4096; got 0 (unset)"));
  EXPECT_THAT(message,
              HasSubstr("attention.num_kv_heads: expected 1 <= value <= 4096; got 0 (unset)"));
  EXPECT_THAT(message,
              HasSubstr("attention.head_dim: expected 1 <= value <= 262144; got 0 (unset)"));
}

TEST(ModelAttentionValidation, KvHeadsMustDivideQueryHeads) {
  ModelSpec spec = MustLoad("llama4_maverick").proto();
  spec.mutable_attention()->set_num_kv_heads(6);
  EXPECT_EQ(Rejection(spec),
            "attention.num_kv_heads: expected a divisor of num_query_heads (40: each K/V head "
            "serves a whole group of query heads); got 6");
}

TEST(ModelAttentionValidation, MlaNeedsItsSizes) {
  ModelSpec spec = MustLoad("deepseek_v3").proto();
  spec.mutable_attention()->clear_mla();
  EXPECT_EQ(Rejection(spec),
            "attention.mla: expected kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and "
            "v_head_dim for ATTENTION_KIND_MLA; got unset");
}

TEST(ModelAttentionValidation, MlaSizesMustBePositiveAndTheRopeWidthEven) {
  ModelSpec spec = MustLoad("deepseek_v3").proto();
  MlaSpec& mla = *spec.mutable_attention()->mutable_mla();
  mla.set_q_lora_rank(-1);
  mla.clear_kv_lora_rank();
  mla.set_qk_rope_head_dim(63);
  mla.clear_v_head_dim();
  const std::string message = Rejection(spec);
  EXPECT_THAT(message,
              HasSubstr("attention.mla.q_lora_rank: expected 0 <= value <= 262144; got -1"));
  EXPECT_THAT(message, HasSubstr("attention.mla.kv_lora_rank: expected 1 <= value <= 262144; "
                                 "got 0 (unset)"));
  EXPECT_THAT(message, HasSubstr("attention.mla.qk_rope_head_dim: expected an even width"));
  EXPECT_THAT(message, HasSubstr("attention.mla.v_head_dim: expected 1 <= value <= 262144; "
                                 "got 0 (unset)"));
}

TEST(ModelAttentionValidation, MlaTakesNoGqaWidthsOrNopeLayers) {
  ModelSpec spec = MustLoad("kimi_k2").proto();
  spec.mutable_attention()->set_num_kv_heads(8);
  spec.mutable_attention()->set_head_dim(128);
  spec.mutable_attention()->set_nope_layer_interval(4);
  const std::string message = Rejection(spec);
  EXPECT_THAT(message, HasSubstr("attention.num_kv_heads: expected num_query_heads (64) for "
                                 "ATTENTION_KIND_MLA (every head has its own K and V); got 8"));
  EXPECT_THAT(message, HasSubstr("attention.head_dim: expected unset for ATTENTION_KIND_MLA"));
  EXPECT_THAT(
      message,
      HasSubstr("attention.nope_layer_interval: expected 0 (unset) for ATTENTION_KIND_MLA"));
}

TEST(ModelAttentionValidation, GqaTakesNoMlaSizes) {
  ModelSpec spec = MustLoad("qwen3_30b_a3b").proto();
  spec.mutable_attention()->mutable_mla()->set_kv_lora_rank(512);
  EXPECT_EQ(Rejection(spec),
            "attention.mla: expected unset for ATTENTION_KIND_GQA (the MLA sizes belong to "
            "ATTENTION_KIND_MLA); got set");
}

TEST(ModelAttentionValidation, LocalLayersNeedAWindow) {
  ModelSpec spec = MustLoad("gpt_oss_120b").proto();
  spec.mutable_attention()->clear_local_window_tokens();
  EXPECT_EQ(Rejection(spec),
            "attention.local_window_tokens: expected > 0 with sliding-window or chunked layers; "
            "got 0 (unset)");
}

TEST(ModelAttentionValidation, GlobalLayersTakeNoWindow) {
  ModelSpec spec = MustLoad("mixtral_8x7b").proto();
  spec.mutable_attention()->set_local_window_tokens(4096);
  EXPECT_THAT(Rejection(spec),
              HasSubstr("attention.local_window_tokens: expected 0 (unset) when every layer is "
                        "global"));
}

TEST(ModelAttentionValidation, EveryScopeMustBeSet) {
  ModelSpec spec = MustLoad("gpt_oss_120b").proto();
  spec.mutable_attention()->add_layer_scopes(ATTENTION_SCOPE_UNSPECIFIED);
  EXPECT_EQ(Rejection(spec),
            "attention.layer_scopes[2]: expected ATTENTION_SCOPE_GLOBAL, _SLIDING_WINDOW or "
            "_CHUNKED; got unset");
}

TEST(ModelAttentionValidation, ScopePatternMustFitInTheLayers) {
  ModelSpec spec = MustLoad("nano").proto();  // One layer.
  spec.mutable_attention()->add_layer_scopes(ATTENTION_SCOPE_GLOBAL);
  spec.mutable_attention()->add_layer_scopes(ATTENTION_SCOPE_GLOBAL);
  EXPECT_EQ(Rejection(spec),
            "attention.layer_scopes: expected a pattern of at most num_layers (1) entries; got 2");
}

TEST(ModelAttentionValidation, NopeIntervalMustFitInTheLayers) {
  ModelSpec spec = MustLoad("llama4_maverick").proto();
  spec.mutable_attention()->set_nope_layer_interval(49);
  EXPECT_EQ(Rejection(spec), "attention.nope_layer_interval: expected 0 <= value <= 48; got 49");
}

TEST(ModelAttentionValidation, OddHeadWidthCannotRotate) {
  ModelSpec spec = MustLoad("nano").proto();
  spec.mutable_attention()->set_head_dim(9);
  EXPECT_THAT(Rejection(spec), HasSubstr("attention.head_dim: expected an even width"));
  spec.mutable_attention()->set_nope_layer_interval(1);  // No layer rotates: any width will do.
  EXPECT_THAT(ModelConfig::FromProto(spec), IsOk());
}

TEST(ModelAttentionValidation, RopeThetaMustBePositive) {
  ModelSpec spec = MustLoad("mixtral_8x7b").proto();
  spec.mutable_attention()->set_rope_theta(0);
  EXPECT_EQ(Rejection(spec), "attention.rope_theta: expected > 0; got 0");
}

TEST(ModelAttentionValidation, NormNeedsAKindAndAnEpsilonBelowOne) {
  ModelSpec spec = MustLoad("nano").proto();
  spec.mutable_norm()->clear_kind();
  spec.mutable_norm()->set_epsilon(0);
  const std::string message = Rejection(spec);
  EXPECT_THAT(message,
              HasSubstr("norm.kind: expected NORM_KIND_RMSNORM or NORM_KIND_LAYERNORM; got unset"));
  EXPECT_THAT(message, HasSubstr("norm.epsilon: expected in (0, 1); got 0"));
}

TEST(ModelAttentionValidation, TiedEmbeddingsAndMtpNeedAVocabulary) {
  ModelSpec spec = MustLoad("nano").proto();  // vocab_size 0.
  spec.set_tied_embeddings(true);
  spec.set_mtp_depth(2);
  const std::string message = Rejection(spec);
  EXPECT_THAT(message, HasSubstr("vocab_size: expected > 0 with tied_embeddings (the LM head "
                                 "reuses the embedding); got 0 (unset)"));
  EXPECT_THAT(message, HasSubstr("vocab_size: expected > 0 with 2 MTP modules"));
}

TEST(ModelAttentionValidation, MtpNeedsAnAttentionDescription) {
  ModelSpec spec = MustLoad("deepseek_v3").proto();
  spec.clear_attention();
  EXPECT_EQ(Rejection(spec),
            "attention: expected an attention description with 1 MTP modules (each is one more "
            "decoder layer); got unset");
  spec.set_mtp_depth(-1);
  EXPECT_THAT(Rejection(spec), HasSubstr("mtp_depth: expected 0 <= value <= 64; got -1"));
}

TEST(ModelAttentionValidation, InterleavedMoeLayersMustNumberLayersOverInterval) {
  ModelSpec spec = MustLoad("llama4_maverick").proto();
  spec.set_num_moe_layers(20);
  spec.set_num_dense_layers(28);
  EXPECT_EQ(Rejection(spec),
            "num_moe_layers: expected num_layers / moe_layer_interval (48 / 2 = 24) with "
            "interleaved layers; got 20");
}

}  // namespace
}  // namespace perfsim
