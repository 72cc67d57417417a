// Model FLOPs of a step in MaxText's and Megatron's conventions (sim/step/model_flops.h)
// against hand-derived goldens. Every expected number below is derived in the comment above it
// from the model's published sizes (models/*.textproto), not printed by perfsim.
#include "sim/step/model_flops.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "sim/moe/model_registry.h"

namespace perfsim {
namespace {

ModelConfig Model(const char* name) {
  absl::StatusOr<ModelConfig> model = ResolveModel(name);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

// The sums are of integers below 2^63 and the code computes in double: exact up to 2^53 per
// term, so a relative tolerance of 1e-12 only absorbs the last rounding of the sums.
constexpr double kRel = 1e-12;

// DeepSeek-V3, one token (sequences = 1 would make S = 1; per-token figures take S = 4096 and
// divide by the 4096 tokens of one sequence).
// D = 7168, F_dense = 18432, F_moe = 2048, K = 8, 1 shared expert of 2048, 3 dense + 58 MoE
// layers, MLA: H = 128, q_lora 1536, kv_lora 512, nope 128, rope 64, v 128, V = 129280.
//
// Megatron (training.py), per token, before the factor 6:
//   FFN   D·(F_dense·3·3 + (F_moe·K + F_shared)·3·58)
//         = 7168·(165,888 + 18,432·174) = 7168·3,373,056        = 24,178,065,408
//   attn  q_lora·(D + H·192 + 1) = 1536·31,745                    = 48,760,320
//         + kv_lora·(D + H·256 + 1) = 512·39,937                  = 20,447,744
//         + D·rope = 7168·64                                      = 458,752
//         + H·v·D = 128·128·7168                                  = 117,440,512
//         + S·H·192/2 + S·H·128/2 = 50,331,648 + 33,554,432       = 83,886,080
//         per layer 270,993,408; × 61                             = 16,530,597,888
//   head  D·V = 7168·129,280                                      = 926,679,040
//   sum 41,635,342,336; × 6 = 249,812,054,016 FLOPs per token.
TEST(ModelFlopsTest, DeepSeekV3MegatronMatchesHandDerivation) {
  const ModelConfig model = Model("deepseek_v3");
  const StepFlops f = ModelFlopsPerStep(model, {.sequences = 1, .seq_len = 4096},
                                        FlopConvention::kMegatron);
  const double tokens = 4096;
  EXPECT_NEAR(f.total / tokens, 249812054016.0, 249812054016.0 * kRel);
  EXPECT_NEAR(f.ffn / tokens, 6 * 24178065408.0, 6 * 24178065408.0 * kRel);
  EXPECT_NEAR(f.attention_core / tokens, 6 * 83886080.0 * 61, 6 * 83886080.0 * 61 * kRel);
  EXPECT_NEAR(f.lm_head / tokens, 6 * 926679040.0, 1);
  EXPECT_EQ(f.mtp_extra, 0);
}

// The M153 row (Megatron-Core DeepSeek-V3 GB200 guide): GBS 2048 x 4096 on 256 GPUs at 494.46
// model TFLOP/s/GPU. Its step is 2048·4096·249,812,054,016 / (494.46e12 · 256) = 16.55 s; the
// guide's own count is this formula, so the test pins the per-step total.
TEST(ModelFlopsTest, DeepSeekV3StepTotalScalesWithTokens) {
  const ModelConfig model = Model("deepseek_v3");
  const StepFlops f = ModelFlopsPerStep(model, {.sequences = 2048, .seq_len = 4096},
                                        FlopConvention::kMegatron);
  const double expected = 2048.0 * 4096.0 * 249812054016.0;
  EXPECT_NEAR(f.total, expected, expected * kRel);
  EXPECT_NEAR(f.total / (494.46e12 * 256), 16.55, 0.01);
}

// MTP: one module adds a MoE layer (the last layer is MoE), its norms and projection
// 3·D + 2·D² = 21,504 + 102,760,448 = 102,781,952, and a second logit D·V. Per token, ×6:
//   MoE FFN  D·(F_moe·K + F_shared)·3 = 7168·55,296 = 396,361,728
//   attn     270,993,408 (above)
//   extra    102,781,952
//   head     926,679,040
//   sum 1,696,816,128; × 6 = 10,180,896,768 more than without MTP.
TEST(ModelFlopsTest, DeepSeekV3MegatronCountsMtp) {
  const ModelConfig model = Model("deepseek_v3");
  const StepFlops base = ModelFlopsPerStep(model, {.sequences = 1, .seq_len = 4096},
                                           FlopConvention::kMegatron);
  const StepFlops mtp = ModelFlopsPerStep(
      model, {.sequences = 1, .seq_len = 4096, .mtp_layers = 1}, FlopConvention::kMegatron);
  EXPECT_NEAR((mtp.total - base.total) / 4096, 10180896768.0, 10180896768.0 * 1e-9);
  EXPECT_NEAR(mtp.mtp_extra / 4096, 6 * 102781952.0, 1);
}

// MaxText (maxtext_utils.py), per token, before the factor 3:
//   FFN   dense 2·D·F_dense·3 = 792,723,456, × 3 layers            = 2,378,170,368
//         MoE   router 2·D·E = 3,670,016 + shared 2·D·F_moe·3 = 88,080,384
//               + routed 8 · 88,080,384 = 704,643,072: 796,393,472 × 58 = 46,190,821,376
//   attn  q 2·(D·1536 + 1536·128·192) = 97,517,568
//         kv 2·(D·(512 + 64) + 512·128·256) = 41,811,968
//         out 2·D·128·128 = 234,881,024: 374,210,560 × 61           = 22,826,844,160
//   core  2·S·H·(192 + 128)/2 = 4096·128·320 = 167,772,160 × 61     = 10,234,101,760
//   head  2·D·V                                                     = 1,853,358,080
//   sum 83,483,295,744; × 3 = 250,449,887,232 FLOPs per token.
TEST(ModelFlopsTest, DeepSeekV3MaxTextMatchesHandDerivation) {
  const ModelConfig model = Model("deepseek_v3");
  const StepFlops f = ModelFlopsPerStep(model, {.sequences = 1, .seq_len = 4096},
                                        FlopConvention::kMaxText);
  const double tokens = 4096;
  EXPECT_NEAR(f.total / tokens, 250449887232.0, 250449887232.0 * kRel);
  EXPECT_NEAR(f.ffn / tokens, 3 * 48568991744.0, 3 * 48568991744.0 * kRel);
  EXPECT_NEAR(f.attention_weights / tokens, 3 * 22826844160.0, 3 * 22826844160.0 * kRel);
  EXPECT_NEAR(f.attention_core / tokens, 3 * 10234101760.0, 3 * 10234101760.0 * kRel);
  // MaxText ignores MTP.
  const StepFlops mtp = ModelFlopsPerStep(
      model, {.sequences = 1, .seq_len = 4096, .mtp_layers = 1}, FlopConvention::kMaxText);
  EXPECT_EQ(mtp.total, f.total);
}

// Mixtral 8x7B (GQA, no dense layers, no shared expert): D = 4096, F = 14336, E = 8, K = 2,
// H = 32, Hkv = 8, Dh = 128, V = 32000, 32 layers, S = 4096. Per token:
//   MaxText (÷3): FFN 32·(2·D·E + 2·2·D·F·3) = 32·(65,536 + 704,643,072) = 22,550,675,456
//                 attn weights 32·(2·D·(32 + 16)·128 + 2·D·32·128)
//                     = 32·(50,331,648 + 33,554,432) = 2,684,354,560
//                 core 32·4·S·32·128/2 = 32·33,554,432 = 1,073,741,824
//                 head 2·D·V = 262,144,000
//                 sum 26,570,915,840; × 3 = 79,712,747,520
//   Megatron (÷6): FFN D·F·2·3·32 = 11,274,289,152
//                 attn 32·(D·(4096 + 2048) + 4096·S/2·2 + 4096·D) = 32·(25,165,824 +
//                     16,777,216 + 16,777,216) = 1,879,048,192
//                 head D·V = 131,072,000
//                 sum 13,284,409,344; × 6 = 79,706,456,064
// The two differ by exactly MaxText's router, 3·32·2·D·E = 6,291,456 per token.
TEST(ModelFlopsTest, MixtralConventionsDifferByTheRouter) {
  const ModelConfig model = Model("mixtral_8x7b");
  const StepTokens tokens{.sequences = 1, .seq_len = 4096};
  const StepFlops maxtext = ModelFlopsPerStep(model, tokens, FlopConvention::kMaxText);
  const StepFlops megatron = ModelFlopsPerStep(model, tokens, FlopConvention::kMegatron);
  EXPECT_NEAR(maxtext.total / 4096, 79712747520.0, 79712747520.0 * kRel);
  EXPECT_NEAR(megatron.total / 4096, 79706456064.0, 79706456064.0 * kRel);
  EXPECT_NEAR((maxtext.total - megatron.total) / 4096, 6291456.0, 1e-3);
}

// GPT-OSS-120B alternates sliding-window (128 tokens) and global layers: MaxText counts a
// sliding layer's core as 4·T·min(W, S)·H·Dh/2, Megatron as a global layer. With S = 4096,
// H = 64, Dh = 64, 36 layers (18 of each), per token the cores are
//   MaxText  3·(18·4·S·H·Dh/2 + 18·4·128·H·Dh/2) = 3·(18·33,554,432 + 18·1,048,576)
//   Megatron 6·36·(H·Dh·S/2·2) = 6·36·16,777,216
TEST(ModelFlopsTest, SlidingWindowIsShortenedByMaxTextOnly) {
  const ModelConfig model = Model("gpt_oss_120b");
  ASSERT_EQ(model.attention().local_window_tokens(), 128);
  ASSERT_EQ(model.attention().num_query_heads(), 64);
  ASSERT_EQ(model.attention().head_dim(), 64);
  ASSERT_EQ(model.proto().num_layers(), 36);
  const StepTokens tokens{.sequences = 1, .seq_len = 4096};
  const StepFlops maxtext = ModelFlopsPerStep(model, tokens, FlopConvention::kMaxText);
  const StepFlops megatron = ModelFlopsPerStep(model, tokens, FlopConvention::kMegatron);
  EXPECT_NEAR(maxtext.attention_core / 4096, 3 * (18 * 33554432.0 + 18 * 1048576.0), 1e-3);
  EXPECT_NEAR(megatron.attention_core / 4096, 6 * 36 * 16777216.0, 1e-3);
}

TEST(ModelFlopsTest, ConventionNames) {
  EXPECT_EQ(FlopConventionName(FlopConvention::kMaxText), "maxtext");
  EXPECT_EQ(FlopConventionName(FlopConvention::kMegatron), "megatron");
}

}  // namespace
}  // namespace perfsim
