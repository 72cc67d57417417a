#include "sim/step/model_flops.h"

#include <algorithm>
#include <cstdint>

#include "proto/model.pb.h"

namespace perfsim {
namespace {

struct LayerCounts {
  int64_t dense = 0;
  int64_t moe = 0;
};

LayerCounts CountLayers(const ModelConfig& model) {
  LayerCounts counts;
  for (int64_t layer = 0; layer < model.proto().num_layers(); ++layer) {
    (model.IsMoeLayer(layer) ? counts.moe : counts.dense) += 1;
  }
  return counts;
}

// a + 1 in MaxText's FFN term (matrices of one FFN): 3 gated, 2 plain.
double FfnMatrices(const ModelConfig& model) {
  return static_cast<double>(model.MatricesPerExpert());
}

double SharedWidth(const ModelConfig& model) {
  return static_cast<double>(model.num_shared_experts()) *
         static_cast<double>(model.shared_expert_ffn_dim());
}

// Keys one query attends to, summed over the S queries of a sequence, in MaxText's count of
// non-causal "S·S" area before halving: S·S global, S·min(W, S) sliding, Σ chunk² chunked.
double MaxTextAttentionArea(const ModelConfig& model, int64_t layer, double s) {
  const double window = static_cast<double>(model.attention().local_window_tokens());
  switch (model.LayerAttentionScope(layer)) {
    case ATTENTION_SCOPE_SLIDING_WINDOW:
      return s * std::min(window, s);
    case ATTENTION_SCOPE_CHUNKED: {
      const int64_t seq = static_cast<int64_t>(s);
      const int64_t w = model.attention().local_window_tokens();
      const double full = static_cast<double>(seq / w);
      const double rest = static_cast<double>(seq % w);
      return full * static_cast<double>(w) * static_cast<double>(w) + rest * rest;
    }
    case ATTENTION_SCOPE_GLOBAL:
    case ATTENTION_SCOPE_UNSPECIFIED:
    default:
      return s * s;
  }
}

StepFlops MaxTextFlops(const ModelConfig& model, const StepTokens& tokens) {
  StepFlops f;
  const double t = static_cast<double>(tokens.sequences) * static_cast<double>(tokens.seq_len);
  const double s = static_cast<double>(tokens.seq_len);
  const double d = static_cast<double>(model.d_model());
  const LayerCounts layers = CountLayers(model);
  const double a = FfnMatrices(model);

  const double dense_ffn = 2 * t * d * static_cast<double>(model.proto().dense_ffn_dim()) * a;
  const double expert_ffn = 2 * t * d * static_cast<double>(model.expert_ffn_dim()) * a;
  const double router = 2 * t * d * static_cast<double>(model.num_experts());
  const double shared = 2 * t * d * SharedWidth(model) * a;
  f.ffn = dense_ffn * static_cast<double>(layers.dense) +
          (router + shared + expert_ffn * static_cast<double>(model.experts_per_token())) *
              static_cast<double>(layers.moe);

  if (model.has_attention()) {
    const AttentionSpec& attn = model.attention();
    const double h = static_cast<double>(attn.num_query_heads());
    double weights = 0;
    double core_per_area = 0;  // FLOPs per unit of "area" (query-key pair), non-causal
    if (model.is_mla()) {
      const MlaSpec& mla = attn.mla();
      const double qk = static_cast<double>(mla.qk_nope_head_dim() + mla.qk_rope_head_dim());
      const double v = static_cast<double>(mla.v_head_dim());
      const double q_lora = static_cast<double>(mla.q_lora_rank());
      const double kv_lora = static_cast<double>(mla.kv_lora_rank());
      const double q = mla.q_lora_rank() == 0 ? 2 * t * d * h * qk
                                               : 2 * t * (d * q_lora + q_lora * h * qk);
      const double kv =
          2 * t *
          (d * (kv_lora + static_cast<double>(mla.qk_rope_head_dim())) +
           kv_lora * h * (static_cast<double>(mla.qk_nope_head_dim()) + v));
      weights = q + kv + 2 * t * d * h * v;
      // 2·T·S·H·(qk + v) for the full square: per query-key pair 2·H·(qk + v).
      core_per_area = 2 * h * (qk + v);
    } else {
      const double hd = static_cast<double>(attn.head_dim());
      const double hkv = static_cast<double>(attn.num_kv_heads());
      weights = 2 * t * d * (h + 2 * hkv) * hd + 2 * t * d * h * hd;
      core_per_area = 4 * h * hd;
    }
    const double n_layers = static_cast<double>(model.proto().num_layers());
    f.attention_weights = weights * n_layers;
    double area = 0;
    for (int64_t layer = 0; layer < model.proto().num_layers(); ++layer) {
      area += model.is_mla() ? s * s : MaxTextAttentionArea(model, layer, s);
    }
    // Per sequence: area pairs; causal halves them.
    f.attention_core = core_per_area * area * static_cast<double>(tokens.sequences) / 2;
  }
  f.lm_head = 2 * t * d * static_cast<double>(model.proto().vocab_size());
  f.attention_core *= 3;
  f.attention_weights *= 3;
  f.ffn *= 3;
  f.lm_head *= 3;
  f.total = f.attention_core + f.attention_weights + f.ffn + f.lm_head;
  return f;
}

StepFlops MegatronFlops(const ModelConfig& model, const StepTokens& tokens) {
  StepFlops f;
  const double t = static_cast<double>(tokens.sequences) * static_cast<double>(tokens.seq_len);
  const double s = static_cast<double>(tokens.seq_len);
  const double d = static_cast<double>(model.d_model());
  const double mtp = static_cast<double>(tokens.mtp_layers);
  LayerCounts layers = CountLayers(model);
  // MTP layers copy the last layer's kind.
  const bool last_is_moe = model.IsMoeLayer(model.proto().num_layers() - 1);
  (last_is_moe ? layers.moe : layers.dense) += tokens.mtp_layers;
  const double n_layers = static_cast<double>(model.proto().num_layers()) + mtp;
  const double a = FfnMatrices(model);
  // 3 (forward, dgrad, wgrad) · 2 (multiply-add), per token.
  constexpr double kExpansion = 6;

  f.ffn = kExpansion * t * d *
          (static_cast<double>(model.proto().dense_ffn_dim()) * a *
               static_cast<double>(layers.dense) +
           (static_cast<double>(model.expert_ffn_dim()) *
                static_cast<double>(model.experts_per_token()) +
            SharedWidth(model)) *
               a * static_cast<double>(layers.moe));

  if (model.has_attention()) {
    const AttentionSpec& attn = model.attention();
    const double h = static_cast<double>(attn.num_query_heads());
    double weights = 0;
    double core = 0;
    if (model.is_mla()) {
      const MlaSpec& mla = attn.mla();
      const double nope = static_cast<double>(mla.qk_nope_head_dim());
      const double rope = static_cast<double>(mla.qk_rope_head_dim());
      const double v = static_cast<double>(mla.v_head_dim());
      const double q_lora = static_cast<double>(mla.q_lora_rank());
      const double kv_lora = static_cast<double>(mla.kv_lora_rank());
      const double q_term =
          mla.q_lora_rank() == 0 ? d * h * (nope + rope) : q_lora * (d + h * (nope + rope) + 1);
      weights = q_term + kv_lora * (d + h * (nope + v) + 1) + d * rope + h * v * d;
      core = s * h * (nope + rope) / 2 + s * h * v / 2;
    } else {
      const double hd = static_cast<double>(attn.head_dim());
      const double q = hd * h;
      const double kv = hd * static_cast<double>(attn.num_kv_heads());
      weights = d * (q + 2 * kv) + q * d;
      core = q * s / 2 * 2;
    }
    f.attention_weights = kExpansion * t * weights * n_layers;
    f.attention_core = kExpansion * t * core * n_layers;
  }
  f.mtp_extra = kExpansion * t * mtp * (3 * d + 2 * d * d);
  f.lm_head = kExpansion * t * d * static_cast<double>(model.proto().vocab_size()) * (mtp + 1);
  f.total = f.ffn + f.attention_weights + f.attention_core + f.mtp_extra + f.lm_head;
  return f;
}

}  // namespace

absl::string_view FlopConventionName(FlopConvention convention) {
  switch (convention) {
    case FlopConvention::kMaxText:
      return "maxtext";
    case FlopConvention::kMegatron:
      return "megatron";
  }
  return "?";
}

StepFlops ModelFlopsPerStep(const ModelConfig& model, const StepTokens& tokens,
                            FlopConvention convention) {
  switch (convention) {
    case FlopConvention::kMaxText:
      return MaxTextFlops(model, tokens);
    case FlopConvention::kMegatron:
      return MegatronFlops(model, tokens);
  }
  return {};
}

}  // namespace perfsim
